// tycli mcp add|list|show|remove|namespace|hub: MCP server definitions, namespaces and the shared-server hub (serve and
// proxy in serve.ts); Node host, trusted side.
import { TyError } from '../../../../core/errors.js';
import type { CliCommand } from '../../types.js';
import { note, out, outJson, terminalSafe, usage } from '../../output.js';
import { inertJson } from '../../../../core/ask/text.js';
import { canonicalJson } from '../../../../core/revisions/canonical.js';
import { serveCommands as bridgeCommands } from './serve.js';

/** Server definitions (zod schemas): loaded only by the commands that use them. */
const defs = () => import('../../../mcp/definitions.js');

/**
 * The top-level fields of two server definitions whose values differ (names only: environment values are secrets),
 * compared as canonical JSON. `folder` is where `mcp add` ran, not part of what runs, so it is left out.
 */
function changedFields(a: object, b: object): string[] {
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(ra), ...Object.keys(rb)])].filter((k) => k !== 'folder' && k !== 'v').sort();
  return keys.filter((k) => canonicalJson(ra[k] ?? null) !== canonicalJson(rb[k] ?? null));
}

/** `changedFields` for a message: the environment's differing variable names (never values), and the verb agreeing. */
function describeChange(
  a: { env: Record<string, string> },
  b: { env: Record<string, string> },
  changed: string[],
): string {
  const names = changed.map((k) => {
    if (k !== 'env') return k;
    const vars = [...new Set([...Object.keys(a.env), ...Object.keys(b.env)])]
      .filter((v) => a.env[v] !== b.env[v])
      .sort();
    return `env (${vars.slice(0, 6).join(', ')}${vars.length > 6 ? `, ${vars.length - 6} more` : ''})`;
  });
  return `${names.join(', ')} ${names.length === 1 ? 'differs' : 'differ'}`;
}

const add: CliCommand = {
  path: ['mcp', 'add'],
  summary: 'define an MCP server the bridge may run (0600 file in the settings folder)',
  usage: `Usage: tycli mcp add NAME [--env K=V ...] [--env-from K ...] [--allow TOOL ...] [--ask none] [--shared] [--timeout MS] [--approve-replacement] -- COMMAND ARGS...
       tycli mcp add NAME --url https://HOST/PATH [--header 'Name: value' ...] [--header-env 'Name=VAR' ...] [--allow TOOL ...] [--ask none] [--timeout MS] [--approve-replacement]

--timeout MS (default 60000, reset by progress): a server that answers no request within it is taken as
hung; its session and process end (E_MCP_TIMEOUT) and the next call starts a fresh one.

--env-from K and --header-env Name=VAR take the value from tycli's own environment, so a token never
appears on a command line. --shared runs one server for every session, under a hub (tycli mcp hub).

The server runs in /, with only PATH, HOME, USER/LOGNAME, the locale, TMPDIR, SSH_AUTH_SOCK and the
desktop-session variables as they are now, plus each --env value (kept as secrets, never printed).
The command must be an absolute path or a name on PATH (stored as the absolute path found now).
Arguments that are relative paths (./x, ../x, or any name of a file or folder in the current folder)
are refused: give absolute paths. --allow TOOL (or resources/read, prompts/get) lets those calls
through without asking; --ask none lets every call through without asking. Either only replaces the
question: deny rules (any scope), alwaysAsk rules, the pause, hooks and the audit still apply to every
call. Adding a name again with anything different (command, arguments, environment, rules) needs
--approve-replacement: the new definition replaces the old and ends its running sessions; the same
definition again changes nothing.`,
  options: {
    env: { type: 'string', multiple: true },
    'env-from': { type: 'string', multiple: true },
    'header-env': { type: 'string', multiple: true },
    ask: { type: 'string' },
    url: { type: 'string' },
    header: { type: 'string', multiple: true },
    shared: { type: 'boolean' },
    timeout: { type: 'string' },
    'approve-replacement': { type: 'boolean' },
  },
  async run(ctx, v, pos) {
    const { buildDefinition, describeDefinition, loadDefinition, parseEnvPairs, saveDefinition } = await defs();
    const [name, ...command] = pos;
    if (name === undefined) usage('give a server name: tycli mcp add NAME -- COMMAND ARGS...');
    if (v.shared === true && v.url !== undefined)
      throw new TyError('E_USAGE', '--shared is for command servers, not --url');
    const ask = v.ask as string | undefined;
    if (ask !== undefined && ask !== 'none' && ask !== 'default') usage('--ask takes none (or default)');
    const fromEnv = (name: string): string => {
      const val = ctx.env[name];
      if (val === undefined) throw new TyError('E_USAGE', `${name} is not set in this environment`);
      return val;
    };
    const env = parseEnvPairs((v.env as string[] | undefined) ?? []);
    for (const k of (v['env-from'] as string[] | undefined) ?? [])
      Object.assign(env, parseEnvPairs([`${k}=${fromEnv(k)}`]));
    const headers = [...((v.header as string[] | undefined) ?? [])];
    for (const h of (v['header-env'] as string[] | undefined) ?? []) {
      const i = h.indexOf('=');
      if (i <= 0) usage("--header-env takes 'Header-Name=ENV_VAR'");
      headers.push(`${h.slice(0, i)}: ${fromEnv(h.slice(i + 1))}`);
    }
    const def = buildDefinition({
      name,
      ...(command.length > 0 ? { command } : {}),
      ...(v.url !== undefined ? { url: v.url as string } : {}),
      headers,
      env,
      // the global --allow doubles as the server's rule list here: no session runs during `mcp add`
      allow: ctx.globals.allow,
      ask: (ask as 'none' | 'default' | undefined) ?? 'default',
      shared: v.shared === true,
      ...(v.timeout !== undefined ? { timeoutMs: Number(v.timeout) } : {}),
      folder: ctx.cwd,
      processEnv: ctx.env,
    });
    const { listNamespaces } = await import('../../../mcp/namespaces.js');
    if ((await listNamespaces(ctx.globals.home)).includes(def.name))
      throw new TyError('E_USAGE', `"${def.name}" is already an MCP namespace name`);
    // an unreadable earlier file (refused by loadDefinition) may be replaced: that is its repair
    const prev = await loadDefinition(ctx.globals.home, def.name).catch(() => undefined);
    const changed = prev === undefined ? [] : changedFields(prev, def);
    if (prev !== undefined && changed.length === 0) {
      if (ctx.globals.json)
        outJson(ctx, { ok: true, server: describeDefinition(def), replaced: false, unchanged: true });
      else out(ctx, `unchanged: MCP server ${def.name} is defined exactly so already`);
      return 0;
    }
    if (prev !== undefined && v['approve-replacement'] !== true) {
      throw new TyError(
        'E_APPROVAL_REQUIRED',
        `MCP server "${def.name}" is defined already; replacing it (${describeChange(prev, def, changed)}) ends its running sessions and needs --approve-replacement`,
        { name: def.name, approval: 'replacement', kind: 'mcp-server', changed },
      );
    }
    await saveDefinition(ctx.globals.home, def);
    if (ctx.globals.json)
      outJson(ctx, {
        ok: true,
        server: describeDefinition(def),
        replaced: prev !== undefined,
        ...(prev !== undefined ? { changed } : {}),
      });
    else
      out(
        ctx,
        `${prev !== undefined ? `replaced (${changed.join(', ')})` : 'added'} MCP server ${def.name} (${Object.keys(def.env).length} environment values kept, not shown)`,
      );
    // an absolute path argument that names nothing (a script not built yet, a typo): the server cannot start as it is
    const { existsSync } = await import('node:fs');
    for (const a of [def.command ?? '', ...command.slice(1)]) {
      if (a.startsWith('/') && !existsSync(a))
        note(
          ctx,
          `note: ${terminalSafe(ctx, a.slice(0, 200), ctx.io.stderr)} does not exist; the server will not start until it does`,
        );
    }
    return 0;
  },
};

const list: CliCommand = {
  path: ['mcp', 'list'],
  summary: 'list MCP server definitions',
  usage: 'Usage: tycli mcp list',
  allowPositionals: false,
  async run(ctx) {
    const { describeDefinition, listDefinitions, loadDefinition } = await defs();
    const rows: Record<string, unknown>[] = [];
    for (const n of await listDefinitions(ctx.globals.home)) {
      try {
        const d = await loadDefinition(ctx.globals.home, n);
        if (d) rows.push(describeDefinition(d));
      } catch (e) {
        rows.push({ name: n, error: (e as TyError).code ?? 'E_INVALID_SETTINGS' });
      }
    }
    const { listNamespaces } = await import('../../../mcp/namespaces.js');
    const namespaces = await listNamespaces(ctx.globals.home);
    if (ctx.globals.json) outJson(ctx, { ok: true, servers: rows, namespaces });
    else if (rows.length === 0 && namespaces.length === 0)
      note(ctx, "no MCP servers; add one with 'tycli mcp add NAME -- COMMAND ARGS...'");
    else {
      for (const r of rows)
        out(
          ctx,
          terminalSafe(
            ctx,
            `${String(r.name)}  ${r.error ? `refused: ${String(r.error)}` : r.url ? String(r.url) : (r.command as string[]).join(' ')}${r.shared ? '  (shared)' : ''}`,
          ),
        );
      for (const n of namespaces) out(ctx, `${n}  (namespace)`);
    }
    return 0;
  },
};

const show: CliCommand = {
  path: ['mcp', 'show'],
  summary: 'show one MCP server definition (environment names only, never values)',
  usage: 'Usage: tycli mcp show NAME',
  async run(ctx, _v, pos) {
    const { describeDefinition, loadDefinition } = await defs();
    if (pos.length !== 1) usage('give one server name');
    const d = await loadDefinition(ctx.globals.home, pos[0]!);
    if (!d) throw new TyError('E_UNKNOWN_TOOL', `no MCP server "${pos[0]!.slice(0, 40)}"`);
    const desc = describeDefinition(d);
    if (ctx.globals.json) outJson(ctx, { ok: true, server: desc });
    else out(ctx, inertJson(desc, 2));
    return 0;
  },
};

const remove: CliCommand = {
  path: ['mcp', 'remove'],
  summary: 'remove an MCP server definition (its next call is refused)',
  usage: 'Usage: tycli mcp remove NAME',
  async run(ctx, _v, pos) {
    const { removeDefinition } = await defs();
    if (pos.length !== 1) usage('give one server name');
    if (!(await removeDefinition(ctx.globals.home, pos[0]!)))
      throw new TyError('E_UNKNOWN_TOOL', `no MCP server "${pos[0]!.slice(0, 40)}"`);
    if (ctx.globals.json) outJson(ctx, { ok: true, removed: pos[0] });
    else out(ctx, `removed MCP server ${pos[0]}`);
    return 0;
  },
};

const nsSet: CliCommand = {
  path: ['mcp', 'namespace', 'set'],
  summary: "define an MCP namespace (several servers' tools behind one schema per action) from a JSON file",
  usage: `Usage: tycli mcp namespace set FILE.json

FILE holds {"v":1,"name":"NAME","actions":[{"name":"find","access":"read"|"mutation","broadcast":false,
"targets":[{"kind":"a","server":"SERVER","tool":"TOOL"}, ...]}]}. It is validated and saved as a 0600
file in the settings folder; clients see NAME__ACTION with a kind selector.`,
  async run(ctx, _v, pos) {
    const { listDefinitions } = await defs();
    if (pos.length !== 1) usage('give one JSON file');
    const { readFile } = await import('node:fs/promises');
    const { resolve } = await import('node:path');
    const { parseNamespace, saveNamespace } = await import('../../../mcp/namespaces.js');
    let raw: unknown;
    try {
      raw = JSON.parse(await readFile(resolve(ctx.cwd, pos[0]!), 'utf8'));
    } catch {
      throw new TyError('E_USAGE', `cannot read ${pos[0]!.slice(0, 200)} as JSON`);
    }
    const ns = parseNamespace(raw, pos[0]!.slice(0, 200));
    if ((await listDefinitions(ctx.globals.home)).includes(ns.name))
      throw new TyError('E_USAGE', `"${ns.name}" is already an MCP server name`);
    await saveNamespace(ctx.globals.home, ns);
    if (ctx.globals.json) outJson(ctx, { ok: true, namespace: ns.name, actions: ns.actions.map((a) => a.name) });
    else out(ctx, `saved MCP namespace ${ns.name} (${ns.actions.length} actions)`);
    return 0;
  },
};

const nsRemove: CliCommand = {
  path: ['mcp', 'namespace', 'remove'],
  summary: 'remove an MCP namespace',
  usage: 'Usage: tycli mcp namespace remove NAME',
  async run(ctx, _v, pos) {
    if (pos.length !== 1) usage('give one namespace name');
    const { removeNamespace } = await import('../../../mcp/namespaces.js');
    if (!(await removeNamespace(ctx.globals.home, pos[0]!)))
      throw new TyError('E_UNKNOWN_TOOL', `no MCP namespace "${pos[0]!.slice(0, 40)}"`);
    if (ctx.globals.json) outJson(ctx, { ok: true, removed: pos[0] });
    else out(ctx, `removed MCP namespace ${pos[0]}`);
    return 0;
  },
};

const hub: CliCommand = {
  path: ['mcp', 'hub'],
  summary: 'run the hub of a --shared MCP server (started by the bridge; stops when idle)',
  usage: `Usage: tycli mcp hub NAME [--idle-ms MS]

Runs one server process for every session naming NAME, on a 0600 Unix socket in the settings folder.
Exits at once when another hub holds the lock. Stops after MS (default 300000) without a session and
kills the server's whole process group. On SIGTERM or Ctrl-C it stops within a second: each request
still waiting is answered (E_MCP_ENDED), each session's socket closed, the server's process group
stopped (SIGTERM, then SIGKILL after 0.4 s), the socket and lock files removed; exit 143 (130).`,
  options: { 'idle-ms': { type: 'string' } },
  async run(ctx, v, pos) {
    if (pos.length !== 1) usage('give one server name');
    const idle = v['idle-ms'] === undefined ? undefined : Number(v['idle-ms']);
    if (idle !== undefined && (!Number.isInteger(idle) || idle < 1)) usage('--idle-ms takes a whole number of ms');
    const { runHub } = await import('../../../mcp/hub.js');
    const ran = await runHub(ctx.globals.home, pos[0]!, {
      ...(idle === undefined ? {} : { idleMs: idle }),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    if (!ran) note(ctx, 'another hub is running for this server');
    return 0;
  },
};

export const mcpCommands: CliCommand[] = [add, list, show, remove, nsSet, nsRemove, ...bridgeCommands, hub];
