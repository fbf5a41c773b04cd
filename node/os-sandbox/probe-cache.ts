// The sandbox probe and the node permission flag kept across processes, in the host's state folder; Node host, trusted
// side.
// Only a passing bubblewrap probe is kept, so a stale or forged file can never turn isolation off: at worst a sandbox
// is tried with a bwrap that no longer works, its start fails closed, and the file is dropped (forgetProbe).
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { release } from 'node:os';
import { dirname } from 'node:path';
import { writeFileAtomicSync } from '../store/atomic.js';
import { listedSharedLibraries, seedSharedLibraries } from './bwrap.js';
import {
  BWRAP_CANDIDATES,
  PRLIMIT_CANDIDATES,
  SETPRIV_CANDIDATES,
  TRUE_CANDIDATES,
  first,
  probeLinux,
  probeUncached,
  type ProbeSystem,
  type SandboxProbe,
} from './probe.js';

/** Bump when what the probe checks changes: every cached result is then probed again. */
export const PROBE_CACHE_VERSION = 1;
/** A kept probe is re-run at least this often, ms (a day). */
export const PROBE_CACHE_MAX_AGE_MS = 24 * 60 * 60 * 1000;
/** Kernel settings that decide whether unprivileged user namespaces work (read when present). */
const USERNS_SYSCTLS = [
  '/proc/sys/user/max_user_namespaces',
  '/proc/sys/kernel/unprivileged_userns_clone',
  '/proc/sys/kernel/apparmor_restrict_unprivileged_userns',
];

interface CacheFile {
  v: number;
  probe?: { key: string; version: string; at: number };
  /** `--permission` or `--experimental-permission`, per node binary stamp. */
  permissionFlags?: Record<string, string>;
  /** Shared-library lists of the binaries bound into sandboxes (bwrap.ts sharedLibraries), per binary realpath. */
  libraries?: Record<string, { stamp: string; libs: unknown }>;
}

/** Device, inode, size and mtime (ns) of a file, or '-' when it cannot be read. */
export function fileStamp(path: string | undefined): string {
  if (!path) return '-';
  try {
    const st = statSync(path, { bigint: true });
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}`;
  } catch {
    return '-';
  }
}

function readSysctl(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '-';
  }
}

/**
 * What a passing probe depends on: the bwrap, prlimit, setpriv and `true` binaries it would use (path and file stamp),
 * the kernel release, the user-namespace sysctls and the effective uid. Any change means a new probe.
 */
export function probeKey(sys: ProbeSystem): string {
  const bins = [BWRAP_CANDIDATES, PRLIMIT_CANDIDATES, SETPRIV_CANDIDATES, TRUE_CANDIDATES].map((c) => {
    const p = first(c, sys);
    return `${p ?? '-'}@${fileStamp(p)}`;
  });
  return JSON.stringify([
    PROBE_CACHE_VERSION,
    sys.platform,
    release(),
    sys.euid ?? -1,
    ...bins,
    ...USERNS_SYSCTLS.map(readSysctl),
  ]);
}

function load(file: string): CacheFile {
  try {
    const c = JSON.parse(readFileSync(file, 'utf8')) as CacheFile;
    if (c && typeof c === 'object' && c.v === PROBE_CACHE_VERSION) return c;
  } catch {
    /* absent or unreadable: nothing kept */
  }
  return { v: PROBE_CACHE_VERSION };
}

/**
 * Write the whole file atomically (node/store/atomic.ts, synchronously: forgetProbe and keepLibraryLists run on exit
 * paths; no fsync, a lost cache only means a full probe), mode 0600. Never throws.
 */
function save(file: string, update: (c: CacheFile) => void): void {
  try {
    const c = load(file);
    update(c);
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileAtomicSync(file, `${JSON.stringify(c)}\n`, { mode: 0o600, durable: false });
  } catch {
    /* a read-only home: the next process probes again */
  }
}

/**
 * The Linux probe through the cache file: a kept passing result whose key still matches (and younger than
 * PROBE_CACHE_MAX_AGE_MS) skips the `bwrap --version` run and the test sandbox; otherwise the full probe runs and a
 * passing result is kept. Failing results are never kept. Never throws.
 */
export async function probeWithCache(file: string, sys: ProbeSystem, now = Date.now()): Promise<SandboxProbe> {
  if (sys.platform !== 'linux') return probeUncached(sys);
  const key = probeKey(sys);
  const kept = load(file).probe;
  if (
    kept &&
    kept.key === key &&
    typeof kept.version === 'string' &&
    now - kept.at >= 0 &&
    now - kept.at < PROBE_CACHE_MAX_AGE_MS
  ) {
    const p = await probeLinux(sys, { version: kept.version.slice(0, 200) });
    if (p.available) return p;
  }
  const p = await probeLinux(sys);
  if (p.available && p.version !== undefined) {
    const version = p.version;
    save(file, (c) => (c.probe = { key, version, at: now }));
  } else if (kept) save(file, (c) => delete c.probe);
  return p;
}

/** Drop the kept probe result (a sandbox failed to start under it): the next probe runs in full. */
export function forgetProbe(file: string): void {
  save(file, (c) => delete c.probe);
}

const FLAGS = new Set(['--permission', '--experimental-permission']);

/**
 * Node's permission-model flag for `nodePath` (`--permission` on Node >= 22.13/23.5, else `--experimental-permission`),
 * kept per binary stamp: the first process runs `node --permission -e 0` once (asynchronously, so it overlaps the rest
 * of start-up), later ones read it. Only one of the two known flags is ever returned.
 */
export async function permissionFlagCached(file: string, nodePath: string): Promise<string> {
  const key = `${nodePath}@${fileStamp(nodePath)}`;
  const hit = load(file).permissionFlags?.[key];
  if (hit !== undefined && FLAGS.has(hit)) return hit;
  const flag = await new Promise<string>((resolve) => {
    execFile(
      nodePath,
      ['--permission', '--allow-fs-read=*', '-e', '0'],
      { env: {}, timeout: 10_000, killSignal: 'SIGKILL' },
      (err) => resolve(err ? '--experimental-permission' : '--permission'),
    );
  });
  save(file, (c) => {
    // one entry per binary path: an updated node replaces its old stamp
    const kept = Object.entries(c.permissionFlags ?? {}).filter(([k]) => !k.startsWith(`${nodePath}@`));
    c.permissionFlags = Object.fromEntries([...kept.slice(-7), [key, flag]]);
  });
  return flag;
}

/**
 * Seed bwrap.ts's shared-library lists from the cache file, so a process need not run each binary's loader with
 * `--list` (a process start each) before its first sandbox. A kept list is used only while its binary's file stamp
 * holds and every file it names lies in a system library folder and still resolves the same (seedSharedLibraries);
 * anything else is listed again. Never throws.
 */
export function seedLibraryLists(file: string): void {
  for (const [binary, e] of Object.entries(load(file).libraries ?? {})) {
    if (e && typeof e === 'object' && typeof e.stamp === 'string') seedSharedLibraries(binary, e.stamp, e.libs);
  }
}

/** Keep the library lists this process had to run the loader for (at most 8 binaries). Never throws. */
export function keepLibraryLists(file: string): void {
  const listed = listedSharedLibraries();
  if (listed.length === 0) return;
  const kept = load(file).libraries ?? {};
  if (
    listed.every(
      (l) => kept[l.binary]?.stamp === l.stamp && JSON.stringify(kept[l.binary]?.libs) === JSON.stringify(l.libs),
    )
  )
    return;
  save(file, (c) => {
    const next = Object.entries(c.libraries ?? {}).filter(([b]) => !listed.some((l) => l.binary === b));
    const fresh = listed.slice(-8);
    c.libraries = Object.fromEntries([
      ...next.slice(Math.max(0, next.length - (8 - fresh.length))),
      ...fresh.map((l) => [l.binary, { stamp: l.stamp, libs: l.libs }] as const),
    ]);
  });
}
