// Loads and validates the user, project and local settings files, merges them with flags, builds the CLI gate; Node
// host, trusted side.
import { mkdir, open, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { TyError } from '../../core/errors.js';
import { DEFAULT_ASK_WAIT_MS } from '../../core/ask/router.js';
import { compilePolicy, type Policy, type RuleSet, type Scope } from '../../core/policy/permissions.js';
import type { Settings } from './schema.js';
import {
  PermissionGate,
  StoreDecisions,
  type GateConfig,
  type GateDeps,
  type HookEvent,
  type HookSpec,
} from '../../core/policy/gate.js';
import { DEFAULT_PAUSE, PauseTracker, type PauseConfig } from '../../core/policy/pause.js';
import { SettingsWatch } from './watch.js';
import { StoreAuditLog } from '../../core/audit/trail.js';
import { hostIdentity } from '../process/identity.js';
import type { Asker } from '../../core/ask/router.js';
import type { Store } from '../../core/store/contract.js';
import { NodeHookRunner } from '../host/hooks.js';
import { tycliPaths } from '../store/paths.js';

export const PROJECT_DIR = '.tycli';
export const PROJECT_FILE = 'settings.json';
export const LOCAL_FILE = 'settings.local.json';
const MAX_SETTINGS_BYTES = 1024 * 1024;

export type { Settings } from './schema.js';

type FileScope = Extract<Scope, 'user' | 'project' | 'local'>;

/** Who the current process runs as, or undefined where the platform has no uids (Windows). */
function currentUid(): number | undefined {
  return typeof process.getuid === 'function' ? process.getuid() : undefined;
}

/**
 * Why a settings file or its folder must not be trusted, or undefined when it may: owned by a user other
 * than the current user or root, or writable by group or others (anyone who can write it can switch off
 * the sandbox or run hooks as this user). Skipped where the platform has no uids.
 */
export function untrustedReason(
  st: { uid: number; mode: number },
  uid: number | undefined = currentUid(),
): string | undefined {
  if (uid === undefined) return undefined;
  if (st.uid !== uid && st.uid !== 0)
    return `it is owned by uid ${st.uid}, not by the current user (uid ${uid}) or root`;
  if ((st.mode & 0o022) !== 0)
    return (
      `it is writable by ${(st.mode & 0o020) !== 0 ? 'group' : ''}${(st.mode & 0o022) === 0o022 ? ' and ' : ''}${(st.mode & 0o002) !== 0 ? 'others' : ''} ` +
      `(mode ${(st.mode & 0o777).toString(8).padStart(3, '0')})`
    );
  return undefined;
}

function refuseUntrusted(what: string, path: string, why: string): never {
  throw new TyError(
    'E_INVALID_SETTINGS',
    `${what} ${path} is not trusted: ${why}; settings are only read from files the current user owns and only they can write (fix: chown to yourself and chmod go-w, or remove it)`,
    { file: path, field: '(owner)' },
  );
}

/**
 * Read and validate one settings file; undefined when it does not exist. The file is opened once and
 * its owner and mode checked on the open descriptor (untrustedReason), so it cannot be swapped between
 * the check and the read.
 * @throws TyError E_INVALID_SETTINGS (not trusted: other owner or group/other-writable; unreadable, too
 *   large, not JSON, not an object, schema errors).
 */
export async function readSettingsFile(file: string): Promise<Settings | undefined> {
  let text: string;
  try {
    const fh = await open(file, 'r');
    try {
      const st = await fh.stat();
      if (!st.isFile())
        throw new TyError('E_INVALID_SETTINGS', `settings file ${file} is not a regular file`, {
          file,
          field: '(file)',
        });
      const why = untrustedReason(st);
      if (why !== undefined) refuseUntrusted('settings file', file, why);
      if (st.size > MAX_SETTINGS_BYTES)
        throw new TyError('E_INVALID_SETTINGS', `settings file ${file} is larger than 1 MiB`, {
          file,
          field: '(file)',
        });
      text = await fh.readFile('utf8');
    } finally {
      await fh.close();
    }
  } catch (e) {
    if (e instanceof TyError) throw e;
    const code = (e as { code?: unknown }).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    if (code === 'EISDIR')
      throw new TyError('E_INVALID_SETTINGS', `settings file ${file} is not a regular file`, { file, field: '(file)' });
    throw new TyError('E_INVALID_SETTINGS', `settings file ${file} cannot be read (${String(code ?? 'error')})`, {
      file,
      field: '(file)',
    });
  }
  if (text.length > MAX_SETTINGS_BYTES)
    throw new TyError('E_INVALID_SETTINGS', `settings file ${file} is larger than 1 MiB`, { file, field: '(file)' });
  let json: unknown;
  try {
    json = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (e) {
    throw new TyError(
      'E_INVALID_SETTINGS',
      `settings file ${file} is not valid JSON: ${e instanceof Error ? e.message : 'parse error'}`,
      { file, field: '(file)' },
    );
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new TyError('E_INVALID_SETTINGS', `settings file ${file} must hold one JSON object`, {
      file,
      field: '(top level)',
    });
  }
  // checked by hand (node/settings/check.ts); the schema (zod) loads only for what that cannot vouch for, with its
  // message
  const plain = (await import('./check.js')).plainSettings(json);
  if (plain !== undefined) return plain;
  const { parseSettings } = await import('./schema.js');
  return parseSettings(json, file);
}

/** What a project or local file sets that weakens isolation or policy (empty when nothing). */
export function weakeningsOf(s: Settings): string[] {
  const out: string[] = [];
  if (s.sandbox === 'off') out.push('sandbox "off"');
  if (s.permissions?.mode === 'unrestricted') out.push('permissions.mode "unrestricted"');
  const allow = s.permissions?.allow?.length ?? 0;
  if (allow > 0) out.push(`${allow} permissions.allow rule${allow === 1 ? '' : 's'}`);
  const hooks = (['preToolUse', 'postToolUse', 'permissionRequest'] as const).filter(
    (e) => (s.hooks?.[e]?.length ?? 0) > 0,
  );
  if (hooks.length > 0)
    out.push(`hooks that run shell commands as you (${hooks.map((e) => `${e}: ${s.hooks?.[e]?.length}`).join(', ')})`);
  return out;
}

/**
 * Check a project `.tycli` folder. One owned by another user (not root) is not ours: it is ignored, with
 * a warning, so nobody can plant settings for us (nor block us by planting them, e.g. in /tmp). One we
 * own but others can write is refused (untrustedReason).
 * @returns a warning when the folder is ignored
 * @throws TyError E_INVALID_SETTINGS
 */
async function checkProjectDir(dir: string): Promise<string | undefined> {
  let st;
  try {
    st = await stat(dir);
  } catch {
    return undefined; // gone: the files inside are then absent too
  }
  const uid = currentUid();
  if (uid !== undefined && st.uid !== uid && st.uid !== 0) {
    return `warning: ignoring project settings folder ${dir}: it is owned by uid ${st.uid}, not by you (uid ${uid}) or root, so its settings are not read`;
  }
  const why = untrustedReason(st);
  if (why !== undefined) refuseUntrusted('settings folder', dir, why);
  return undefined;
}

const MODE_STRENGTH: Record<string, number> = { strict: 2, standard: 1, unrestricted: 0 };
const SANDBOX_STRENGTH: Record<string, number> = { required: 2, auto: 1, off: 0 };

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

/**
 * The project root: the nearest folder from `cwd` upwards holding a `.tycli/` folder. The walk checks
 * each folder and stops after the git root (a folder holding `.git`), after `homeDir`, or at the
 * file-system root. Undefined when none.
 */
export async function findProjectRoot(cwd: string, homeDir: string = homedir()): Promise<string | undefined> {
  let dir = resolve(cwd);
  const home = resolve(homeDir);
  for (;;) {
    if (await exists(join(dir, PROJECT_DIR))) {
      try {
        if ((await stat(join(dir, PROJECT_DIR))).isDirectory()) return dir;
      } catch {
        /* raced away: keep walking */
      }
    }
    if (dir === home || (await exists(join(dir, '.git')))) return undefined;
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

export interface SettingsFiles {
  user: string;
  /** Set when `user` is the pre-XDG location, read because the new file does not exist: the new path. */
  movedTo?: string;
  project?: string;
  local?: string;
  projectRoot?: string;
}

/**
 * Where settings come from:
 * - user: `<home>/config/settings.json` with `--home` or `TYCLI_HOME` (so they also move the user settings); with the
 *   default home, the per-user config folder's `tycli/settings.json` (XDG), or the old `<data
 * folder>/config/settings.json`
 *   while only that one exists (node/store/paths.ts tycliPaths).
 * - project: `<root>/.tycli/settings.json`; local: `<root>/.tycli/settings.local.json` (keep it out of git).
 */
export async function settingsFiles(opts: { home: string; cwd: string; homeDir?: string }): Promise<SettingsFiles> {
  const p = tycliPaths(opts.home);
  const out: SettingsFiles = { user: p.settingsFile };
  if (p.legacySettingsFile && !(await exists(p.settingsFile)) && (await exists(p.legacySettingsFile))) {
    out.user = p.legacySettingsFile;
    out.movedTo = p.settingsFile;
  }
  const root = await findProjectRoot(opts.cwd, opts.homeDir);
  if (root !== undefined) {
    out.projectRoot = root;
    out.project = join(root, PROJECT_DIR, PROJECT_FILE);
    out.local = join(root, PROJECT_DIR, LOCAL_FILE);
  }
  return out;
}

/** `text` the first time `key` is noted for this home (a marker under state/notes/), else undefined. */
async function oneTimeNote(home: string, key: string, text: string): Promise<string | undefined> {
  const marker = join(tycliPaths(home).state, 'notes', key);
  if (await exists(marker)) return undefined;
  try {
    await mkdir(join(tycliPaths(home).state, 'notes'), { recursive: true, mode: 0o700 });
    await writeFile(marker, `${new Date().toISOString()}\n`, { mode: 0o600 });
  } catch {
    /* read-only home: show the note every time rather than never */
  }
  return text;
}

export interface LoadedSettings {
  files: { scope: FileScope; path: string; present: boolean }[];
  projectRoot?: string;
  /** Rule sets of every scope (user, project, local, session, flags), for compilePolicy. */
  sets: RuleSet[];
  policy: Policy;
  /** Hooks of every file scope, user first, then project, then local; all of them run. */
  hooks: Record<HookEvent, HookSpec[]>;
  /** ms; the most specific file that sets it wins */
  askWaitMs: number;
  /** `session_idle`, ms (undefined: the bridge's default); the most specific file that sets it wins */
  sessionIdleMs?: number;
  /** The desktop dialog ask channel (settings `ask.dialog`): `auto` (default) or `off`; the most specific file wins. */
  askDialog: 'auto' | 'off';
  sandbox?: 'auto' | 'required' | 'off';
  runtime?: 'node' | 'deno';
  pause: PauseConfig;
  /** `store.url` of the user settings (project and local files may not set it). */
  storeUrl?: string;
  /** `gateway` of the user settings: OIDC for the HTTP servers (project and local files may not set it). */
  gateway?: NonNullable<Settings['gateway']>;
  /**
   * One line per project or local file that weakens isolation or policy (sandbox off, mode unrestricted,
   * allow rules, hooks), naming the file and what it sets. The CLI prints them on stderr (node/host/host.ts).
   */
  warnings: string[];
}

export interface LoadOptions {
  /** The resolved tycli home (node/store/paths.ts resolveHome). */
  home: string;
  cwd: string;
  /** The user's home folder, where the project walk stops (default os.homedir()). */
  homeDir?: string;
  /** Command-line flags: repeated --allow / --deny and --mode (scope `flags`, highest precedence). */
  flags?: { allow?: string[]; deny?: string[]; mode?: string | undefined };
  /** In-memory rules of this session. */
  session?: Omit<RuleSet, 'scope'>;
}

/**
 * Load, validate and merge every scope. Nothing is skipped silently: an invalid file is an error, and so
 * is a settings file or project `.tycli` folder owned by another user (not root) or writable by group or
 * others. Project and local files that weaken isolation or policy are reported in `warnings`.
 * @throws TyError E_INVALID_SETTINGS naming the file and field (or the reason it is not trusted); E_USAGE for a bad
 *   --allow/--deny/--mode.
 */
export async function loadSettings(opts: LoadOptions): Promise<LoadedSettings> {
  const where = await settingsFiles(opts);
  const order: [FileScope, string | undefined][] = [
    ['user', where.user],
    ['project', where.project],
    ['local', where.local],
  ];
  const files: LoadedSettings['files'] = [];
  const sets: RuleSet[] = [];
  const hooks: Record<HookEvent, HookSpec[]> = { preToolUse: [], postToolUse: [], permissionRequest: [] };
  let askWaitMs = DEFAULT_ASK_WAIT_MS;
  let sessionIdleMs: number | undefined;
  let askDialog: LoadedSettings['askDialog'] = 'auto';
  let sandbox: LoadedSettings['sandbox'];
  let runtime: LoadedSettings['runtime'];
  const pause: PauseConfig = { ...DEFAULT_PAUSE };
  const warnings: string[] = [];
  let storeUrl: string | undefined;
  let gateway: LoadedSettings['gateway'];
  if (where.movedTo) {
    const note = await oneTimeNote(
      opts.home,
      'settings-location',
      `note: tycli reads your settings from the old location ${where.user}; move the file to ${where.movedTo} (the per-user config folder). This note is shown once.`,
    );
    if (note) warnings.push(note);
  }
  const ignored =
    where.projectRoot !== undefined ? await checkProjectDir(join(where.projectRoot, PROJECT_DIR)) : undefined;
  if (ignored !== undefined) warnings.push(ignored);
  let userMode: string | undefined;
  let userSandbox: string | undefined;
  for (const [scope, path] of order) {
    if (path === undefined || (scope !== 'user' && ignored !== undefined)) continue;
    const s = await readSettingsFile(path);
    files.push({ scope, path, present: s !== undefined });
    if (!s) continue;
    if (scope === 'user') {
      userMode = s.permissions?.mode;
      userSandbox = s.sandbox;
      if (s.store?.url !== undefined) storeUrl = s.store.url;
      if (s.gateway !== undefined) gateway = s.gateway;
    } else {
      // where the state lives and who may connect are the user's to say, never a project's (a cloned repository)
      for (const key of ['store', 'gateway'] as const)
        if (s[key] !== undefined)
          throw new TyError(
            'E_INVALID_SETTINGS',
            `${scope} settings ${path} sets ${key}: ${key === 'store' ? 'the store' : 'the gateway identities'} can be set in your user settings only`,
            { file: path, field: key },
          );
      const weak = weakeningsOf(s);
      const mode = s.permissions?.mode;
      if (
        mode !== undefined &&
        mode !== 'unrestricted' &&
        userMode !== undefined &&
        (MODE_STRENGTH[mode] ?? 0) < (MODE_STRENGTH[userMode] ?? 0)
      ) {
        weak.push(`permissions.mode "${mode}" (your user settings say "${userMode}")`);
      }
      if (
        s.sandbox !== undefined &&
        s.sandbox !== 'off' &&
        userSandbox !== undefined &&
        (SANDBOX_STRENGTH[s.sandbox] ?? 0) < (SANDBOX_STRENGTH[userSandbox] ?? 0)
      ) {
        weak.push(`sandbox "${s.sandbox}" (your user settings say "${userSandbox}")`);
      }
      if (weak.length > 0)
        warnings.push(`warning: ${scope} settings ${path} sets ${weak.join(', ')}; review it if you did not write it`);
    }
    if (s.permissions) sets.push({ scope, source: path, ...s.permissions });
    for (const event of ['preToolUse', 'postToolUse', 'permissionRequest'] as const) {
      for (const [index, h] of (s.hooks?.[event] ?? []).entries()) {
        hooks[event].push({
          event,
          matcher: h.matcher,
          command: h.command,
          timeoutMs: h.timeoutMs,
          scope,
          source: path,
          index,
        });
      }
    }
    if (s.ask_wait !== undefined) askWaitMs = s.ask_wait;
    if (s.session_idle !== undefined) sessionIdleMs = s.session_idle;
    if (s.ask?.dialog !== undefined) askDialog = s.ask.dialog;
    if (s.sandbox !== undefined) sandbox = s.sandbox;
    if (s.runtime !== undefined) runtime = s.runtime;
    if (s.pause?.maxRefusals !== undefined) pause.maxRefusals = s.pause.maxRefusals;
    if (s.pause?.windowMs !== undefined) pause.windowMs = s.pause.windowMs;
  }
  if (opts.session) sets.push({ ...opts.session, scope: 'session', source: 'session' });
  const f = opts.flags;
  if (f && (f.allow?.length || f.deny?.length || f.mode !== undefined)) {
    const flags: RuleSet = { scope: 'flags', source: 'command line' };
    if (f.allow?.length) flags.allow = f.allow;
    if (f.deny?.length) flags.deny = f.deny;
    if (f.mode !== undefined) flags.mode = f.mode as RuleSet['mode'];
    sets.push(flags);
  }
  const policy = compilePolicy(sets);
  const out: LoadedSettings = { files, sets, policy, hooks, askWaitMs, askDialog, pause, warnings };
  if (where.projectRoot !== undefined) out.projectRoot = where.projectRoot;
  if (sandbox !== undefined) out.sandbox = sandbox;
  if (sessionIdleMs !== undefined) out.sessionIdleMs = sessionIdleMs;
  if (runtime !== undefined) out.runtime = runtime;
  if (storeUrl !== undefined) out.storeUrl = storeUrl;
  if (gateway !== undefined) out.gateway = gateway;
  return out;
}

/** The gate's view of loaded settings (core/policy/gate.ts GateConfig). */
export function gateConfigOf(s: LoadedSettings): GateConfig {
  return { policy: s.policy, hooks: s.hooks };
}

export interface NodeGateOptions {
  store: Store;
  settings: LoadedSettings;
  /** Asks a person (core/ask/router.ts AskRouter over the terminal / question-store channels). */
  asker?: Asker;
  /**
   * Secret values known to the host, withheld as tokens from text the host did not write: hook input, question
   * previews, a tool's own error text (core/policy/gate.ts GateDeps.withheld). Never searched for in audit records.
   */
  withheld?: () => Iterable<string>;
  /** Where hooks run when there is no project root. */
  cwd: string;
  /** Environment for hooks (default: the CLI's own). */
  env?: NodeJS.ProcessEnv;
  clock?: () => number;
  /** Traces the gate's decisions and questions (core/exec/trace.ts). */
  tracer?: import('../../core/exec/trace.js').CallTracer;
  /**
   * Loads the settings again with the same options: given, the gate follows edits of the settings files
   * (node/settings/watch.ts SettingsWatch: stamps checked at most once a second, files re-read when they moved).
   */
  reload?: () => Promise<LoadedSettings>;
}

/**
 * The CLI's gate: PermissionGate over the loaded settings (kept current when `reload` is given), the store's audit log
 * (`audit`), pause records (`pause`, thresholds from settings) and permanent decisions (`decisions`), with hooks run by
 * NodeHookRunner in the project root.
 */
export function createNodeGate(o: NodeGateOptions): PermissionGate {
  const watch = o.reload ? new SettingsWatch(o.settings, o.reload, gateConfigOf) : undefined;
  const deps: GateDeps = {
    config: watch ? () => watch.config() : () => gateConfigOf(o.settings),
    audit: new StoreAuditLog(o.store),
    pause: new PauseTracker(o.store, o.settings.pause, o.clock),
    decisions: new StoreDecisions(o.store),
    hooks: new NodeHookRunner(
      o.env ? { cwd: o.settings.projectRoot ?? o.cwd, env: o.env } : { cwd: o.settings.projectRoot ?? o.cwd },
    ),
    hostId: hostIdentity(),
  };
  if (o.asker) deps.asker = o.asker;
  if (o.withheld) deps.withheld = o.withheld;
  if (o.clock) deps.clock = o.clock;
  if (o.tracer) deps.tracer = o.tracer;
  return new PermissionGate(deps);
}
