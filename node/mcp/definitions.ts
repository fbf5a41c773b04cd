// MCP server definitions: 0600 files in the settings folder with the command and its frozen environment; Node host,
// trusted side.
import { chmod, mkdir, readdir, unlink } from 'node:fs/promises';
import {
  accessSync,
  closeSync,
  constants as fsConstants,
  existsSync,
  fstatSync,
  lstatSync,
  openSync,
  readFileSync,
  statSync,
} from 'node:fs';
import { createHash } from 'node:crypto';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { TyError } from '../../core/errors.js';
import { canonicalJson } from '../../core/revisions/canonical.js';
import { writeFileAtomic } from '../store/atomic.js';
import { tycliPaths } from '../store/paths.js';
import {
  McpDefinitionSchema,
  SERVER_NAME_RE,
  ServerNameSchema,
  type McpDefinition,
} from '../../core/mcp/server-definition.js';

export {
  SERVER_NAME_RE,
  ServerNameSchema,
  McpDefinitionSchema,
  DEFAULT_CALL_TIMEOUT_MS,
  type McpDefinition,
} from '../../core/mcp/server-definition.js';

/**
 * The environment variables snapshotted at add time, and no others: PATH, HOME, the user, the locale,
 * TMPDIR, the SSH agent and the desktop session.
 */
export const SNAPSHOT_KEYS: readonly string[] = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'LANG',
  'LANGUAGE',
  'TMPDIR',
  'SSH_AUTH_SOCK',
  'DISPLAY',
  'WAYLAND_DISPLAY',
  'DBUS_SESSION_BUS_ADDRESS',
];
const LOCALE_RE = /^LC_[A-Z_]{1,32}$/;
const ENV_KEY_RE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** The folder holding definitions: `<home>/config/mcp` (0700). */
export function definitionsDir(home: string): string {
  return join(tycliPaths(home).config, 'mcp');
}

/** The environment kept at add time: only the snapshot keys (and LC_*) present in `env`. */
export function snapshotEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) continue;
    if (SNAPSHOT_KEYS.includes(k) || LOCALE_RE.test(k)) out[k] = v;
  }
  return { ...out };
}

/** True for `.`/`..` and values starting with `./` or `../` (also after `--opt=`). */
export function isRelativePathArg(arg: string): boolean {
  const values = [arg];
  const eq = arg.indexOf('=');
  if (arg.startsWith('-') && eq > 0) values.push(arg.slice(eq + 1));
  return values.some((v) => v === '.' || v === '..' || v.startsWith('./') || v.startsWith('../'));
}

/**
 * The first argument that is a path relative to `folder`: `.`/`..`/`./x`/`../x` (see isRelativePathArg),
 * or any non-absolute value (also after `--opt=`) that names an existing file or folder there. Servers run
 * in `/`, so such an argument would point somewhere else at run time.
 */
export function findRelativeArg(args: string[], folder: string): string | undefined {
  return args.find((arg) => {
    if (isRelativePathArg(arg)) return true;
    const values = arg.startsWith('-') ? [] : [arg];
    const eq = arg.indexOf('=');
    if (arg.startsWith('-') && eq > 0) values.push(arg.slice(eq + 1));
    return values.some((v) => v !== '' && !isAbsolute(v) && existsSync(resolve(folder, v)));
  });
}

/**
 * The absolute path of an executable `command` on `path` (a PATH value; relative entries skipped).
 * @returns undefined when none of its folders holds an executable file of that name.
 */
export function findOnPath(command: string, path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    const p = join(dir, command);
    try {
      accessSync(p, fsConstants.X_OK);
      if (statSync(p).isFile()) return p;
    } catch {
      /* next */
    }
  }
  return undefined;
}

/** Parse `K=V` pairs. @throws TyError E_USAGE */
export function parseEnvPairs(pairs: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const i = p.indexOf('=');
    const k = i > 0 ? p.slice(0, i) : '';
    if (!ENV_KEY_RE.test(k))
      throw new TyError(
        'E_USAGE',
        `--env needs NAME=VALUE with NAME of letters, digits and _ (got "${k.slice(0, 40) || p.slice(0, 1)}…")`,
      );
    out[k] = p.slice(i + 1);
  }
  return out;
}

export interface NewDefinition {
  name: string;
  command?: string[];
  url?: string;
  /** `Header-Name: value` pairs for --url; kept in the environment as TYMCP_HEADER_<n>. */
  headers?: string[];
  env?: Record<string, string>;
  allow?: string[];
  ask?: 'default' | 'none';
  shared?: boolean;
  /** Bridge call timeout, ms (`--timeout`). */
  timeoutMs?: number;
  /** Where `mcp add` ran. */
  folder: string;
  /** The adding process's environment, for the snapshot. */
  processEnv: NodeJS.ProcessEnv;
}

/**
 * Build a definition from `mcp add` input.
 * @throws TyError E_USAGE: bad name, neither or both of command and url, a relative command or one not on
 *   PATH (a command found on PATH is stored as its absolute path), a relative path argument (findRelativeArg),
 *   a non-https url (http only on loopback), a malformed header.
 */
export function buildDefinition(input: NewDefinition): McpDefinition {
  const name = ServerNameSchema.safeParse(input.name);
  if (!name.success)
    throw new TyError(
      'E_USAGE',
      `server name "${input.name.slice(0, 40)}": ${name.error.issues[0]?.message ?? 'invalid'}`,
    );
  const hasCmd = input.command !== undefined && input.command.length > 0;
  if (hasCmd === (input.url !== undefined)) throw new TyError('E_USAGE', 'give either -- COMMAND ARGS... or --url URL');
  const env = { ...snapshotEnvironment(input.processEnv), ...(input.env ?? {}) };
  let command: string | undefined;
  let args: string[] = [];
  let url: string | undefined;
  if (hasCmd) {
    const [cmd, ...rest] = input.command as string[];
    command = cmd as string;
    if (!isAbsolute(command) && command.includes('/'))
      throw new TyError(
        'E_USAGE',
        `the command "${command.slice(0, 80)}" is a relative path; servers run in /, so give an absolute path or a name on PATH`,
      );
    if (!isAbsolute(command)) {
      // looked up now, stored absolute: the server runs what was found at add time
      const found = findOnPath(command, input.processEnv.PATH);
      if (found === undefined)
        throw new TyError(
          'E_USAGE',
          `the command "${command.slice(0, 80)}" is not found on PATH; give an absolute path`,
        );
      command = found;
    }
    const rel = findRelativeArg(rest, input.folder);
    if (rel !== undefined)
      throw new TyError(
        'E_USAGE',
        `the argument "${rel.slice(0, 80)}" is a relative path${isRelativePathArg(rel) ? '' : ` (it names a file or folder in ${input.folder.slice(0, 120)})`}; ` +
          `servers run in /, never in the folder they were added from. Give an absolute path.`,
      );
    args = rest;
  } else {
    url = checkUrl(input.url as string);
    (input.headers ?? []).forEach((h, i) => {
      const m = /^([A-Za-z0-9-]{1,128}):\s?(.*)$/.exec(h);
      if (!m) throw new TyError('E_USAGE', `--header needs "Name: value" (header ${i + 1})`);
      env[`TYMCP_HEADER_${i + 1}`] = `${m[1]}: ${m[2]}`;
    });
  }
  for (const a of input.allow ?? [])
    if (a.length === 0 || a.length > 256) throw new TyError('E_USAGE', '--allow needs a tool name');
  const def: McpDefinition = {
    v: 1,
    name: name.data,
    args,
    env,
    allow: [...(input.allow ?? [])],
    ask: input.ask ?? 'default',
    shared: input.shared ?? false,
    folder: input.folder,
  };
  if (input.timeoutMs !== undefined) {
    if (!Number.isInteger(input.timeoutMs) || input.timeoutMs < 100 || input.timeoutMs > 86_400_000)
      throw new TyError('E_USAGE', '--timeout takes whole ms from 100 to 86 400 000');
    def.timeoutMs = input.timeoutMs;
  }
  if (command !== undefined) def.command = command;
  if (url !== undefined) def.url = url;
  return def;
}

function checkUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new TyError('E_USAGE', '--url is not a URL');
  }
  if (u.username || u.password)
    throw new TyError('E_USAGE', '--url must not carry credentials; use --header "Authorization: ..."');
  const loopback = u.hostname === 'localhost' || u.hostname === '127.0.0.1' || u.hostname === '[::1]';
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && loopback))
    throw new TyError('E_USAGE', '--url must be https:// (or http:// on this machine only)');
  return u.href;
}

/** What identifies a running server: command, arguments, url, environment, folder. Rules are not part of it. */
export function fingerprint(def: McpDefinition): string {
  const cached = fpCache.get(def);
  if (cached !== undefined) return cached;
  const fp = computeFingerprint(def);
  fpCache.set(def, fp);
  return fp;
}
const fpCache = new WeakMap<McpDefinition, string>();
function computeFingerprint(def: McpDefinition): string {
  const body = canonicalJson({
    command: def.command ?? null,
    args: def.args,
    url: def.url ?? null,
    env: def.env,
    folder: def.folder,
    shared: def.shared,
  });
  return createHash('sha256').update(body).digest('hex');
}

/** Save atomically as a 0600 file in a 0700 folder. */
export async function saveDefinition(home: string, def: McpDefinition): Promise<void> {
  const dir = definitionsDir(home);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  await writeFileAtomic(join(dir, `${def.name}.json`), JSON.stringify(def, null, 2) + '\n', { mode: 0o600 });
}

/**
 * Load one definition, or undefined when there is none.
 * @throws TyError E_INVALID_SETTINGS: any unknown field or bad value, a symlink, or a file others may read.
 */
export async function loadDefinition(home: string, name: string): Promise<McpDefinition | undefined> {
  return loadDefinitionSync(home, name);
}

/**
 * `loadDefinition` without a thread-pool round trip: one lstat per call; the file is read again when its
 * stamp (device, inode, size, mtime, ctime, mode) changed or it changed within the last 2 s (coarse file
 * times could hide a same-size rewrite: then the content is compared), and parsed and validated again only
 * when its content changed. An edit, a re-add (atomic rename: new inode), a chmod or a removal is seen by
 * the very next call.
 * @throws TyError E_INVALID_SETTINGS as loadDefinition.
 */
export function loadDefinitionSync(home: string, name: string): McpDefinition | undefined {
  if (!SERVER_NAME_RE.test(name)) return undefined;
  const fileKey = `${home}\0${name}`;
  let file = fileOf.get(fileKey);
  if (file === undefined) {
    file = join(definitionsDir(home), `${name}.json`);
    if (fileOf.size > 4096) fileOf.clear();
    fileOf.set(fileKey, file);
  }
  return loadSettingsFile(file, `MCP definition "${name}"`, (raw) => {
    const r = McpDefinitionSchema.safeParse(raw);
    if (!r.success) {
      const issue = r.error.issues[0];
      const at = issue?.path.length ? issue.path.join('.') : '(root)';
      throw new TyError(
        'E_INVALID_SETTINGS',
        `MCP definition "${name}" is refused at ${at}: ${issue?.message ?? 'invalid'}`,
      );
    }
    if (r.data.name !== name)
      throw new TyError('E_INVALID_SETTINGS', `MCP definition file "${name}" names another server`);
    if ((r.data.command === undefined) === (r.data.url === undefined))
      throw new TyError('E_INVALID_SETTINGS', `MCP definition "${name}" needs exactly one of command and url`);
    return r.data;
  });
}

/**
 * Load a 0600 JSON settings file (an MCP definition or namespace) through the freshness cache: one lstat
 * per call; read again (opened without following links, checked on the opened file) when its stamp changed
 * or it changed within RACY_MS; `parse` (validation, throwing TyError) runs again only when the content
 * changed. The result is deep-frozen: the cached object is shared by every caller.
 * @returns undefined when there is no such file.
 * @throws TyError E_INVALID_SETTINGS: not a regular file (a symlink), readable by others, not JSON, or
 *   whatever `parse` refuses.
 */
export function loadSettingsFile<T>(file: string, label: string, parse: (raw: unknown) => T): T | undefined {
  let st;
  try {
    // sync: microseconds on a local file, and on every call's path (the thread-pool round trip costs more)
    st = lstatSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  // unchanged file (same inode, size, times, mode, and not changed too recently for its times to tell):
  // the parsed value is reused; any rewrite is read again
  const hit = loadCache.get(file);
  if (hit !== undefined && !hit.racy && sameStamp(hit, st)) return hit.value as T;
  if (!st.isFile()) throw new TyError('E_INVALID_SETTINGS', `${label} is not a regular file`);
  let text: string;
  let fst;
  // opened without following a link, then checked on the opened file itself: no swap between check and read
  let fd: number | undefined;
  try {
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
    fst = fstatSync(fd);
    if (!fst.isFile()) throw new TyError('E_INVALID_SETTINGS', `${label} is not a regular file`);
    if ((fst.mode & 0o077) !== 0)
      throw new TyError(
        'E_INVALID_SETTINGS',
        `${label} may be read by others (mode ${(fst.mode & 0o777).toString(8)}); run chmod 600 on it`,
      );
    text = readFileSync(fd, 'utf8');
  } catch (e) {
    if (e instanceof TyError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw new TyError('E_INVALID_SETTINGS', `${label} is not a regular file`);
    throw e;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  // times within RACY_MS of now may not yet tell a later same-size rewrite apart (coarse file system clocks):
  // such an entry is compared by content on every call until its times are old enough
  const racy = isRacy(fst, Date.now());
  if (hit !== undefined && hit.text === text) {
    loadCache.set(file, { ...stampOf(fst), racy, text, value: hit.value });
    return hit.value as T;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new TyError('E_INVALID_SETTINGS', `${label} is not valid JSON`);
  }
  const value = deepFreeze(parse(raw));
  if (loadCache.size > 4096) loadCache.clear();
  loadCache.set(file, { ...stampOf(fst), racy, text, value });
  return value;
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/** A settings file changed less than this long ago (ms) is compared by content on each load. */
const RACY_MS = 2000;

interface Stamp {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  mode: number;
}
function stampOf(st: Stamp): Stamp {
  return { dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, mode: st.mode };
}
/**
 * True when a file's times are within RACY_MS (2 s) of `now` (ms), or ahead of it: a rewrite of the same size
 * in the same file-system clock tick would keep them, so such a file is compared by content.
 */
export function isRacy(st: { mtimeMs: number; ctimeMs: number }, now: number): boolean {
  return now - Math.max(st.mtimeMs, st.ctimeMs) < RACY_MS;
}

/** Same device, inode, size, mtime, ctime and mode. */
export function sameStamp(a: Stamp, b: Stamp): boolean {
  return (
    a.ino === b.ino &&
    a.dev === b.dev &&
    a.size === b.size &&
    a.mtimeMs === b.mtimeMs &&
    a.ctimeMs === b.ctimeMs &&
    a.mode === b.mode
  );
}

/** The file's stamp when it was last read, and what it held. */
interface Loaded extends Stamp {
  /** Changed within RACY_MS of being read: compared by content. */
  racy: boolean;
  text: string;
  value: unknown;
}
const loadCache = new Map<string, Loaded>();
/** `home\0name` -> the definition's path (path joins are a measurable part of a call's cost). */
const fileOf = new Map<string, string>();

/** Names of every saved definition, sorted. */
export async function listDefinitions(home: string): Promise<string[]> {
  try {
    const names = await readdir(definitionsDir(home));
    return names
      .filter((n) => n.endsWith('.json'))
      .map((n) => n.slice(0, -5))
      .filter((n) => ServerNameSchema.safeParse(n).success)
      .sort();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
}

/** Remove a definition; false when there was none. */
export async function removeDefinition(home: string, name: string): Promise<boolean> {
  if (!ServerNameSchema.safeParse(name).success) return false;
  try {
    await unlink(join(definitionsDir(home), `${name}.json`));
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}

/** A definition as shown to a person: environment names only, never values. */
export function describeDefinition(def: McpDefinition): Record<string, unknown> {
  const o: Record<string, unknown> = { name: def.name };
  if (def.command !== undefined) o.command = [def.command, ...def.args];
  if (def.url !== undefined) o.url = def.url;
  o.env = Object.keys(def.env).sort();
  o.allow = def.allow;
  o.ask = def.ask;
  o.shared = def.shared;
  return o;
}
