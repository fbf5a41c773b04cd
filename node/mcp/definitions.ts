// MCP server definitions: 0600 files in the settings folder with the command and its frozen environment; Node host, trusted side.
import { chmod, mkdir, readFile, readdir, unlink } from 'node:fs/promises';
import { lstatSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { isAbsolute, join } from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { z } from 'zod';
import { TyError } from '../../core/errors.js';
import { canonicalJson } from '../../core/canonical.js';
import { tycliPaths } from '../paths.js';

/** Server names: lower-case letters, digits and single dashes, 1-32 characters (no `_`: `SERVER__TOOL` stays unambiguous). */
export const ServerNameSchema = z.string().regex(/^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,31}$/, 'a server name is 1-32 of a-z, 0-9 and single dashes');

/**
 * The environment variables snapshotted at add time, and no others: PATH, HOME, the user, the locale,
 * TMPDIR, the SSH agent and the desktop session.
 */
export const SNAPSHOT_KEYS: readonly string[] = ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LANGUAGE', 'TMPDIR', 'SSH_AUTH_SOCK', 'DISPLAY', 'WAYLAND_DISPLAY', 'DBUS_SESSION_BUS_ADDRESS'];
const LOCALE_RE = /^LC_[A-Z_]{1,32}$/;
const ENV_KEY_RE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** A saved definition. Any other field is refused on load. */
export const McpDefinitionSchema = z.strictObject({
  v: z.literal(1),
  name: ServerNameSchema,
  /** stdio: absolute path or a bare name looked up on the saved PATH. */
  command: z.string().min(1).max(4096).optional(),
  args: z.array(z.string().max(16384)).max(256),
  /** streamable HTTP endpoint (https, or http on loopback). */
  url: z.string().max(4096).optional(),
  /** The server's whole environment (snapshot + --env); secret values, never printed. */
  env: z.record(z.string().regex(ENV_KEY_RE), z.string().max(65536)),
  /** Tool names (or `resources/read`, `prompts/get`) that pass without asking. */
  allow: z.array(z.string().min(1).max(256)).max(256),
  /** `none`: every call passes without asking. */
  ask: z.enum(['default', 'none']),
  shared: z.boolean(),
  /** The folder it was added from (recorded for identity only; the server runs in `/`). */
  folder: z.string().max(4096),
});
export type McpDefinition = z.infer<typeof McpDefinitionSchema>;

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

/** Parse `K=V` pairs. @throws TyError E_USAGE */
export function parseEnvPairs(pairs: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const i = p.indexOf('=');
    const k = i > 0 ? p.slice(0, i) : '';
    if (!ENV_KEY_RE.test(k)) throw new TyError('E_USAGE', `--env needs NAME=VALUE with NAME of letters, digits and _ (got "${k.slice(0, 40) || p.slice(0, 1)}…")`);
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
  /** Where `mcp add` ran. */
  folder: string;
  /** The adding process's environment, for the snapshot. */
  processEnv: NodeJS.ProcessEnv;
}

/**
 * Build a definition from `mcp add` input.
 * @throws TyError E_USAGE: bad name, neither or both of command and url, a relative command or argument,
 *   a non-https url (http only on loopback), a malformed header.
 */
export function buildDefinition(input: NewDefinition): McpDefinition {
  const name = ServerNameSchema.safeParse(input.name);
  if (!name.success) throw new TyError('E_USAGE', `server name "${input.name.slice(0, 40)}": ${name.error.issues[0]?.message ?? 'invalid'}`);
  const hasCmd = input.command !== undefined && input.command.length > 0;
  if (hasCmd === (input.url !== undefined)) throw new TyError('E_USAGE', 'give either -- COMMAND ARGS... or --url URL');
  const env = { ...snapshotEnvironment(input.processEnv), ...(input.env ?? {}) };
  let command: string | undefined;
  let args: string[] = [];
  let url: string | undefined;
  if (hasCmd) {
    const [cmd, ...rest] = input.command as string[];
    command = cmd as string;
    if (!isAbsolute(command) && command.includes('/')) throw new TyError('E_USAGE', `the command "${command.slice(0, 80)}" is a relative path; servers run in /, so give an absolute path or a name on PATH`);
    const rel = rest.find(isRelativePathArg);
    if (rel !== undefined) throw new TyError('E_USAGE', `the argument "${rel.slice(0, 80)}" is a relative path; servers run in /, never in the folder they were added from. Give an absolute path.`);
    args = rest;
  } else {
    url = checkUrl(input.url as string);
    (input.headers ?? []).forEach((h, i) => {
      const m = /^([A-Za-z0-9-]{1,128}):\s?(.*)$/.exec(h);
      if (!m) throw new TyError('E_USAGE', `--header needs "Name: value" (header ${i + 1})`);
      env[`TYMCP_HEADER_${i + 1}`] = `${m[1]}: ${m[2]}`;
    });
  }
  for (const a of input.allow ?? []) if (a.length === 0 || a.length > 256) throw new TyError('E_USAGE', '--allow needs a tool name');
  const def: McpDefinition = { v: 1, name: name.data, args, env, allow: [...(input.allow ?? [])], ask: input.ask ?? 'default', shared: input.shared ?? false, folder: input.folder };
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
  if (u.username || u.password) throw new TyError('E_USAGE', '--url must not carry credentials; use --header "Authorization: ..."');
  const loopback = u.hostname === 'localhost' || u.hostname === '127.0.0.1' || u.hostname === '[::1]';
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && loopback)) throw new TyError('E_USAGE', '--url must be https:// (or http:// on this machine only)');
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
  const body = canonicalJson({ command: def.command ?? null, args: def.args, url: def.url ?? null, env: def.env, folder: def.folder, shared: def.shared });
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
  if (!ServerNameSchema.safeParse(name).success) return undefined;
  const file = join(definitionsDir(home), `${name}.json`);
  let st;
  try {
    // sync: microseconds on a local file, and on every call's path (the thread-pool round trip costs more)
    st = lstatSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  // unchanged file (same inode, size, times): the parsed definition is reused; any rewrite is re-read
  const stamp = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.mode}`;
  const hit = loadCache.get(file);
  if (hit !== undefined && hit.stamp === stamp) return hit.def;
  if (!st.isFile()) throw new TyError('E_INVALID_SETTINGS', `MCP definition "${name}" is not a regular file`);
  if ((st.mode & 0o077) !== 0) throw new TyError('E_INVALID_SETTINGS', `MCP definition "${name}" may be read by others (mode ${(st.mode & 0o777).toString(8)}); run chmod 600 on it`);
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch {
    throw new TyError('E_INVALID_SETTINGS', `MCP definition "${name}" is not valid JSON`);
  }
  const r = McpDefinitionSchema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    const at = issue && issue.path.length ? issue.path.join('.') : '(root)';
    throw new TyError('E_INVALID_SETTINGS', `MCP definition "${name}" is refused at ${at}: ${issue?.message ?? 'invalid'}`);
  }
  if (r.data.name !== name) throw new TyError('E_INVALID_SETTINGS', `MCP definition file "${name}" names another server`);
  if ((r.data.command === undefined) === (r.data.url === undefined)) throw new TyError('E_INVALID_SETTINGS', `MCP definition "${name}" needs exactly one of command and url`);
  const def = Object.freeze(r.data) as McpDefinition;
  loadCache.set(file, { stamp, def });
  return def;
}

const loadCache = new Map<string, { stamp: string; def: McpDefinition }>();

/** Names of every saved definition, sorted. */
export async function listDefinitions(home: string): Promise<string[]> {
  try {
    const names = await readdir(definitionsDir(home));
    return names.filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -5)).filter((n) => ServerNameSchema.safeParse(n).success).sort();
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
