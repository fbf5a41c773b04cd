// Builds the bubblewrap (bwrap) command line around a sandbox runtime process (Linux); Node host, trusted side.
import { execFileSync } from 'node:child_process';
import { closeSync, lstatSync, openSync, readFileSync, readSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, posix } from 'node:path';
import { TyError } from '../../core/errors.js';
import { prlimitPrefix, type OsLimits } from './limits.js';
import { chownToLease, type UidLease } from './uid-pool.js';
import { othersCanWrite, planMounts, setupPathViolations, type MountEntry } from './mount-plan.js';

/**
 * What a runtime wants to spawn, before OS isolation. Structurally the `SpawnWrapper` input of
 * node/sandbox/runtime.ts: `env` is the complete environment the process gets; `readOnlyPaths` are files or
 * folders the runtime needs (its runner, its own data); `writablePaths` are granted folders.
 */
export interface SpawnRequest {
  command: string;
  args: string[];
  env: Record<string, string>;
  readOnlyPaths: string[];
  writablePaths: string[];
  /**
   * Files or folders the sandbox's own uid must own (a per-call work folder); chowned when the sandbox runs as another
   * uid.
   */
  ownedPaths?: string[];
  /**
   * The spawner passes the returned `uid`/`gid` to spawn itself (Node's child_process `uid`/`gid` options: libuv
   * drops the supplementary groups, then sets the gid and the uid in the child before exec). The wrapper then leaves
   * out setpriv(1) where that drop is equivalent (see spawnDropsPrivileges), one exec fewer per sandbox start.
   * Without it (or when it is not equivalent here) the command line starts with setpriv.
   */
  spawnerSetsIds?: boolean;
}
/**
 * The process to spawn instead: spawn `command` with `args` and exactly `env` (nothing inherited). When the wrapper
 * leased a uid for this sandbox, `uid`/`gid` name it and the spawner calls `release` once the process has exited
 * (or when it could not be spawned). With `spawnAs`, the command line does not drop privileges itself: the spawner
 * MUST spawn it as `spawnAs.uid`/`spawnAs.gid` (only returned to a request with `spawnerSetsIds`).
 */
export interface WrappedSpawn {
  command: string;
  args: string[];
  env: Record<string, string>;
  uid?: number;
  gid?: number;
  spawnAs?: { uid: number; gid: number };
  release?: () => void;
}
export type SpawnWrapperFn = (s: SpawnRequest) => WrappedSpawn;

export interface BwrapOptions {
  /** Absolute path of bwrap (from the probe). */
  bwrapPath: string;
  /** prlimit(1) path; with `limits`, the limits are applied inside the sandbox (see limits.ts). */
  prlimitPath?: string;
  limits?: OsLimits;
  /**
   * Drop to this host uid/gid with setpriv(1) before bwrap; set when the CLI runs as root. With `pool`, each sandbox
   * createBwrapWrapper makes gets a uid of its own from it instead (uid-pool.ts), so RLIMIT_NPROC counts per sandbox.
   */
  dropTo?: { setprivPath: string; uid: number; gid: number; pool?: { acquire(): UidLease }; viaSpawn?: boolean };
  /**
   * How the runtime binary's shared libraries are provided: `minimal` (default) binds exactly the files
   * ldd(1) lists; `system` binds /usr, /lib*, /bin, /sbin read-only (for interpreters such as Python
   * that load modules at run time).
   */
  libraries?: 'minimal' | 'system';
  /** Size of the private /tmp, bytes (default 64 MiB). */
  tmpBytes?: number;
  /** Hostname inside the sandbox (default `tysandbox`). */
  hostname?: string;
}

/** Path prefixes that are never bound into a sandbox from a grant: they would hand over the host. */
const FORBIDDEN_GRANT_ROOTS = ['/proc', '/sys', '/dev'];

function fail(message: string): never {
  throw new TyError('E_SANDBOX_FAILED', message);
}

/** Where a runtime's private cache folder lives inside the sandbox (tmpfs). */
export const SANDBOX_DENO_DIR = '/tmp/.deno';

const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** Canonicalize an absolute path with realpath; E_SANDBOX_FAILED when relative or missing. */
export function canonical(path: string, what: string): string {
  if (typeof path !== 'string' || !isAbsolute(path) || path.includes('\0')) fail(`${what} must be an absolute path`);
  try {
    return realpath(path);
  } catch {
    return fail(`${what} does not exist: ${path}`);
  }
}

/**
 * realpath(3) (fs.realpathSync.native): one libc call instead of the JavaScript walk's lstat per path component;
 * about a third of the cost per path, and a sandbox start resolves some 25 of them (test/bench/isolation.bench.mjs).
 */
const realpath = (p: string): string => realpathSync.native(p);

function within(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith('/') ? root : `${root}/`);
}

const libCache = new Map<string, { stamp: string; libs: { path: string; real: string }[] | null; listed?: boolean }>();
/** Folders a kept library list may name (a list naming anything else is listed again, never bound). */
const SYSTEM_LIBRARY_DIRS = [
  '/lib/',
  '/lib64/',
  '/lib32/',
  '/usr/lib/',
  '/usr/lib64/',
  '/usr/lib32/',
  '/usr/local/lib/',
];
const inLibraryDir = (p: unknown): boolean =>
  typeof p === 'string' && posix.normalize(p) === p && SYSTEM_LIBRARY_DIRS.some((d) => p.startsWith(d));

/**
 * Seed sharedLibraries' answer for `binaryReal` from a list kept by an earlier process
 * (node/os-sandbox/probe-cache.ts),
 * when `stamp` is still the binary's file stamp and every file (path and realpath) lies in a system library folder and
 * still resolves the same way; otherwise nothing is seeded and the binary is listed again. Returns whether it was
 * seeded.
 */
export function seedSharedLibraries(binaryReal: string, stamp: string, libs: unknown): boolean {
  if (!Array.isArray(libs) || libs.length === 0 || libs.length > 256 || stamp !== fileStamp(binaryReal)) return false;
  const ok = libs.every(
    (l: { path?: unknown; real?: unknown }) =>
      l !== null &&
      typeof l === 'object' &&
      inLibraryDir(l.path) &&
      inLibraryDir(l.real) &&
      realpathOr(l.path as string) === l.real,
  );
  if (!ok) return false;
  libCache.set(binaryReal, {
    stamp,
    libs: libs.map((l: { path: string; real: string }) => ({ path: l.path, real: l.real })),
  });
  return true;
}

/**
 * The library lists this process ran the loader for (binary realpath, stamp, list), each only in system library
 * folders.
 */
export function listedSharedLibraries(): { binary: string; stamp: string; libs: { path: string; real: string }[] }[] {
  const out: { binary: string; stamp: string; libs: { path: string; real: string }[] }[] = [];
  for (const [binary, e] of libCache)
    if (e.listed && e.libs && e.libs.length > 0 && e.libs.every((l) => inLibraryDir(l.path) && inLibraryDir(l.real)))
      out.push({ binary, stamp: e.stamp, libs: e.libs });
  return out;
}

/**
 * Identity of a file's current contents for cache keys: device, inode, size and mtime (ns); undefined when unreadable.
 */
function fileStamp(path: string): string | undefined {
  try {
    const st = statSync(path, { bigint: true });
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}`;
  } catch {
    return undefined;
  }
}

/**
 * The ELF program interpreter (PT_INTERP, e.g. /lib64/ld-linux-x86-64.so.2) of a little-endian ELF file;
 * `''` for an ELF file without one (statically linked); undefined when not a little-endian ELF file or unreadable.
 * Source: the System V ABI, ELF header and program header table (e_phoff, e_phentsize, e_phnum; p_type 3 = PT_INTERP).
 */
export function elfInterpreter(path: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const h = Buffer.alloc(64);
    if (readSync(fd, h, 0, 64, 0) < 52 || h.readUInt32BE(0) !== 0x7f454c46 || h[5] !== 1) return undefined;
    const is64 = h[4] === 2;
    if (!is64 && h[4] !== 1) return undefined;
    const phoff = is64 ? Number(h.readBigUInt64LE(0x20)) : h.readUInt32LE(0x1c);
    const phentsize = h.readUInt16LE(is64 ? 0x36 : 0x2a);
    const phnum = h.readUInt16LE(is64 ? 0x38 : 0x2c);
    if (phnum === 0 || phnum > 4096 || phentsize < (is64 ? 56 : 32)) return undefined;
    const ph = Buffer.alloc(phentsize * phnum);
    if (readSync(fd, ph, 0, ph.length, phoff) !== ph.length) return undefined;
    for (let i = 0; i < phnum; i++) {
      const o = i * phentsize;
      if (ph.readUInt32LE(o) !== 3) continue;
      const off = is64 ? Number(ph.readBigUInt64LE(o + 8)) : ph.readUInt32LE(o + 4);
      const size = is64 ? Number(ph.readBigUInt64LE(o + 32)) : ph.readUInt32LE(o + 16);
      if (size < 2 || size > 4096) return undefined;
      const b = Buffer.alloc(size);
      if (readSync(fd, b, 0, size, off) !== size) return undefined;
      const interp = b.toString('latin1', 0, b.indexOf(0) === -1 ? size : b.indexOf(0));
      return isAbsolute(interp) ? interp : undefined;
    }
    return '';
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Parse ldd-format output (`name => /path (0x...)`, `/path (0x...)`) into library paths with their realpaths. */
function parseLibraryList(out: string, binaryReal: string): { path: string; real: string }[] {
  const libs: { path: string; real: string }[] = [];
  for (const line of out.split('\n')) {
    if (line.includes('=> not found')) fail(`a shared library of ${binaryReal} is missing: ${line.trim()}`);
    const m = /(?:=>\s*)?(\/\S+)\s+\(0x[0-9a-f]+\)/.exec(line);
    if (!m) continue;
    const p = m[1] as string;
    try {
      libs.push({ path: p, real: realpath(p) });
    } catch {
      /* listed but absent: the loader will report it */
    }
  }
  return libs;
}

/**
 * Shared libraries of an ELF binary as ldd(1) lists them (including the dynamic loader), each with its
 * realpath; `[]` for a static binary; null when they cannot be listed. The list comes from the binary's own
 * program interpreter run with `--list` (what ldd runs, without ldd's shell start-up: about 1.5 ms instead of
 * about 7-15 ms), else from ldd itself. Cached per binary realpath and file stamp (device, inode, size, mtime), so a
 * replaced or updated binary is listed again; a cached library whose realpath changed (a library upgrade) is too.
 */
export function sharedLibraries(binaryReal: string): { path: string; real: string }[] | null {
  const stamp = fileStamp(binaryReal) ?? '';
  const hit = libCache.get(binaryReal);
  if (
    hit !== undefined &&
    hit.stamp === stamp &&
    (hit.libs === null || hit.libs.every((l) => realpathOr(l.path) === l.real))
  )
    return hit.libs;
  const libs = listLibraries(binaryReal);
  libCache.set(binaryReal, { stamp, libs, listed: true });
  return libs;
}

function realpathOr(p: string): string | undefined {
  try {
    return realpath(p);
  } catch {
    return undefined;
  }
}

function listLibraries(binaryReal: string): { path: string; real: string }[] | null {
  const interp = elfInterpreter(binaryReal);
  if (interp === '') return []; // ELF without an interpreter: statically linked
  if (interp !== undefined) {
    try {
      const out = execFileSync(interp, ['--list', binaryReal], {
        env: {},
        timeout: 5000,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const libs = parseLibraryList(out, binaryReal);
      if (libs.length > 0) return libs;
    } catch (e) {
      if (e instanceof TyError) throw e;
      /* this loader has no --list (or failed): ask ldd */
    }
  }
  let out: string;
  try {
    out = execFileSync('ldd', [binaryReal], {
      env: { PATH: '/usr/bin:/bin' },
      timeout: 5000,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (e) {
    const text = String((e as { stdout?: unknown }).stdout ?? '') + String((e as { stderr?: unknown }).stderr ?? '');
    return /not a dynamic executable|statically linked/.test(text) ? [] : null;
  }
  if (/statically linked/.test(out)) return [];
  return parseLibraryList(out, binaryReal);
}

function isScript(real: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(real, 'r');
    const head = Buffer.alloc(2);
    readSync(fd, head, 0, 2, 0);
    return head[0] === 0x23 && head[1] === 0x21;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The system library folders, bound read-only at their own path, and the host's symlinks among them (e.g. /lib ->
 * usr/lib), mirrored.
 */
function systemBinds(): { folders: string[]; links: Map<string, string> } {
  const folders = ['/usr'];
  const links = new Map<string, string>();
  for (const p of ['/lib', '/lib64', '/lib32', '/libx32', '/bin', '/sbin']) {
    let st;
    try {
      st = lstatSync(p);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) links.set(p, readlinkSync(p));
    else if (st.isDirectory()) folders.push(p);
  }
  return { folders, links };
}

/**
 * When the sandbox runs as another uid, every bind source must be reachable by "others". `searchable` holds the
 * folders already found searchable during one bwrapArgv call (the runtime's libraries share most of their parents).
 */
function checkReachable(path: string, writable: boolean, uid: number, searchable: Set<string>): void {
  let p = path;
  for (;;) {
    if (p !== path && searchable.has(p)) return;
    const st = statSync(p);
    const need = p === path ? (st.isDirectory() ? 0o5 | (writable ? 0o2 : 0) : 0o4 | (writable ? 0o2 : 0)) : 0o1;
    if (st.uid !== uid && (st.mode & need) !== need) {
      fail(
        `${path} is not ${writable ? 'writable' : 'readable'} by the sandbox's uid ${uid} (the CLI runs ` +
          `as root, so sandboxes run as an unprivileged uid); make ${p} accessible to others or run the ` +
          `CLI as a normal user`,
      );
    }
    if (p !== path) searchable.add(p);
    if (p === '/') return;
    p = dirname(p);
  }
}

/**
 * The full argv (`argv[0]` is the program) that runs `req` under bubblewrap:
 * `[setpriv ... --] bwrap --unshare-all --unshare-user --disable-userns --die-with-parent --new-session
 * --cap-drop ALL --hostname tysandbox --clearenv --setenv K V ... --proc /proc --dev /dev --tmpfs /tmp
 * [<system folders, read-only> <their symlinks>] <grants and runtime binds, outer first> <library links>
 * --remount-ro /dev --remount-ro / --chdir FIRST_GRANT_OR_/tmp -- [prlimit ... --] command args`.
 * Nothing of the host is visible except what is bound: no home, no project folder, no /etc.
 * Paths are canonicalized with realpath; a grant of `/`, /proc, /sys or /dev is refused. No destination lies beneath a
 * folder the sandbox or another user can write (mount-plan.ts planMounts: the class of GHSA-pxhw-h44j-8pfx).
 * @throws TyError E_SANDBOX_FAILED (a path missing, not absolute, forbidden or unreachable; a path inside a writable
 *   grant, or inside a folder another user can change; a bad env key)
 */
export function bwrapArgv(req: SpawnRequest, opts: BwrapOptions): string[] {
  const dropUid = opts.dropTo?.uid;
  const cmdReal = canonical(req.command, 'the runtime binary');
  const entries: MountEntry[] = []; // read-only binds and writable grants, planned by mount-plan.ts
  const libLinks = new Map<string, string>(); // link path -> target
  const addRo = (given: string, what: string) => {
    const real = canonical(given, what);
    if (real === '/' || FORBIDDEN_GRANT_ROOTS.some((r) => within(real, r)))
      fail(`binding ${real} into a sandbox is not allowed`);
    entries.push({ dest: real, src: real, writable: false, what });
    const dest = posix.normalize(given);
    if (dest !== real) entries.push({ dest, src: real, writable: false, what });
  };
  addRo(req.command, 'the runtime binary');
  if (opts.prlimitPath && opts.limits) addRo(opts.prlimitPath, 'prlimit');

  const libsMode = opts.libraries ?? 'minimal';
  let system: { folders: string[]; links: Map<string, string> } = { folders: [], links: new Map() };
  if (libsMode === 'system') {
    system = systemBinds();
  } else {
    const libs: { path: string; real: string }[] = [];
    for (const bin of [cmdReal, ...(opts.prlimitPath && opts.limits ? [canonical(opts.prlimitPath, 'prlimit')] : [])]) {
      if (isScript(bin)) fail(`the runtime binary ${bin} is a script; pass the interpreter's real binary`);
      const listed = sharedLibraries(bin);
      if (listed === null) {
        system = systemBinds();
        libs.length = 0;
        break;
      }
      libs.push(...listed);
    }
    for (const l of libs) {
      // One mount per library file; the name the loader asks for becomes a symlink (cheaper than a mount).
      entries.push({ dest: l.real, src: l.real, writable: false, what: 'the shared library' });
      if (l.real !== l.path) libLinks.set(l.path, l.real);
    }
  }
  for (const p of req.readOnlyPaths) addRo(p, 'the read-only path');

  // A runtime's private cache folder (Deno's DENO_DIR) moves into the sandbox's own /tmp: nothing of the
  // host is bound for it, and a root CLI's 0700 temp folder need not be opened to the sandbox's uid.
  const env = { ...req.env };
  let writable = req.writablePaths;
  if (typeof env.DENO_DIR === 'string' && writable.includes(env.DENO_DIR)) {
    writable = writable.filter((p) => p !== env.DENO_DIR);
    env.DENO_DIR = SANDBOX_DENO_DIR;
  }
  const grants: string[] = [];
  for (const p of writable) {
    const real = canonical(p, 'a writable folder grant');
    if (real === '/' || FORBIDDEN_GRANT_ROOTS.some((r) => within(real, r)))
      fail(`binding ${real} into a sandbox is not allowed`);
    grants.push(real);
    entries.push({ dest: real, src: real, writable: true, what: 'the writable folder grant' });
  }
  // Nothing is created beneath a folder the sandbox or another user can write (mount-plan.ts), checked before any
  // reachability: the uid bwrap runs as is the one whose writes do not count as "another user".
  const me = dropUid ?? process.geteuid?.() ?? 0;
  for (const [link] of libLinks) if (entries.some((e) => e.dest === link)) libLinks.delete(link);
  const plan = planMounts(
    entries,
    { systemFolders: system.folders, systemLinks: system.links, othersCanWrite: (p) => othersCanWrite(p, me) },
    libLinks,
  );
  if (dropUid !== undefined) {
    const searchable = new Set<string>();
    for (const e of entries)
      if (e.dest === e.src && e.what !== 'the shared library') checkReachable(e.src, e.writable, dropUid, searchable);
  }

  const args: string[] = [
    '--unshare-all',
    '--unshare-user',
    '--disable-userns',
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    '--hostname',
    opts.hostname ?? 'tysandbox',
    '--clearenv',
  ];
  for (const [k, v] of Object.entries(env)) {
    if (!ENV_KEY.test(k) || typeof v !== 'string' || v.includes('\0'))
      fail(`environment variable ${JSON.stringify(k).slice(0, 80)} is not valid`);
    args.push('--setenv', k, v);
  }
  // Mount order: 1. the sandbox's own /proc, /dev and size-capped /tmp; 2. the system library folders and their
  // symlinks (libraries: 'system'); 3. grants and runtime files, outer folders first; 4. the library links;
  // 5. everything read-only except the grants.
  args.push('--proc', '/proc', '--dev', '/dev', '--size', String(opts.tmpBytes ?? 64 * 1024 * 1024), '--tmpfs', '/tmp');
  for (const f of system.folders) args.push('--ro-bind', f, f);
  for (const [link, target] of system.links) args.push('--symlink', target, link);
  for (const m of plan.mounts) args.push(m.writable ? '--bind' : '--ro-bind', m.src, m.dest);
  for (const [link, target] of plan.links) args.push('--symlink', target, link);
  // Working folder: the first writable grant (a tool's own work folder), else the private /tmp.
  const cwd = grants[0] ?? '/tmp';
  args.push('--remount-ro', '/dev', '--remount-ro', '/', '--chdir', cwd, '--');
  if (opts.prlimitPath && opts.limits) args.push(...prlimitPrefix(opts.prlimitPath, opts.limits));
  args.push(req.command, ...req.args);

  const prefix =
    opts.dropTo && opts.dropTo.viaSpawn !== true
      ? [
          opts.dropTo.setprivPath,
          `--reuid=${opts.dropTo.uid}`,
          `--regid=${opts.dropTo.gid}`,
          '--clear-groups',
          '--inh-caps=-all',
          '--',
        ]
      : [];
  const argv = [...prefix, opts.bwrapPath, ...args];
  // the final check, on the command line itself: nothing bwrap creates lies beneath a folder others can write
  const bad = setupPathViolations(argv, opts.bwrapPath, (p) => othersCanWrite(p, me));
  if (bad.length > 0) fail(`the sandbox's command line would create a path beneath a writable folder: ${bad[0]}`);
  return argv;
}

let capsChecked: boolean | undefined;
/**
 * Whether a uid drop by the spawner leaves the same process setpriv(1) `--reuid --regid --clear-groups --inh-caps=-all`
 * would: true when this process's inheritable and ambient capability sets are empty (CapInh, CapAmb in
 * /proc/self/status). setuid(2) from root to an unprivileged uid clears the permitted, effective and ambient sets but
 * keeps the inheritable one (capabilities(7), "Effect of user ID changes on capabilities"), which setpriv clears; libuv
 * drops the supplementary groups (setgroups(0)) before setgid/setuid. Read once per process.
 */
export function spawnDropsPrivileges(): boolean {
  if (capsChecked !== undefined) return capsChecked;
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const empty = (k: string) => new RegExp(`^${k}:\\s*0+\\s*$`, 'm').test(status);
    capsChecked = empty('CapInh') && empty('CapAmb');
  } catch {
    capsChecked = false;
  }
  return capsChecked;
}

/**
 * A SpawnWrapper for node/sandbox/runtime.ts: the returned process is bwrap (or setpriv, which execs bwrap)
 * with an *empty* environment, because the sandbox can read the environment of its pid 1 (bwrap) in
 * /proc/1/environ; the runtime's variables are passed with --setenv only. For a request with `spawnerSetsIds`,
 * where spawnDropsPrivileges(), the uid drop is the spawner's (`spawnAs`) instead of setpriv's.
 * @throws TyError E_SANDBOX_FAILED (see bwrapArgv)
 */
export function createBwrapWrapper(opts: BwrapOptions): SpawnWrapperFn {
  return (req) => {
    const pool = opts.dropTo?.pool;
    const viaSpawn = opts.dropTo !== undefined && req.spawnerSetsIds === true && spawnDropsPrivileges();
    if (!opts.dropTo || !pool) {
      if (opts.dropTo && req.ownedPaths) chownToLease(req.ownedPaths, opts.dropTo);
      const argv = bwrapArgv(req, opts.dropTo ? { ...opts, dropTo: { ...opts.dropTo, viaSpawn } } : opts);
      const out: WrappedSpawn = { command: argv[0] as string, args: argv.slice(1), env: {} };
      if (opts.dropTo && viaSpawn) out.spawnAs = { uid: opts.dropTo.uid, gid: opts.dropTo.gid };
      return out;
    }
    const lease = pool.acquire();
    try {
      if (req.ownedPaths) chownToLease(req.ownedPaths, lease);
      const argv = bwrapArgv(req, {
        ...opts,
        dropTo: { setprivPath: opts.dropTo.setprivPath, uid: lease.uid, gid: lease.gid, viaSpawn },
      });
      const out: WrappedSpawn = {
        command: argv[0] as string,
        args: argv.slice(1),
        env: {},
        uid: lease.uid,
        gid: lease.gid,
        release: lease.release,
      };
      if (viaSpawn) out.spawnAs = { uid: lease.uid, gid: lease.gid };
      return out;
    } catch (e) {
      lease.release();
      throw e;
    }
  };
}
