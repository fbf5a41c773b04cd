// tycli mcp add|list|show|remove|namespace|serve|hub: MCP server definitions, namespaces, the client-facing bridge and the shared-server hub; Node host, trusted side.
import { mkdir } from 'node:fs/promises';
import { appendLine } from '../../append.js';
import { join } from 'node:path';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { TyError } from '../../../core/errors.js';
import type { LocalTools } from '../../mcp/bridge.js';
import type { CliCommand, CliContext } from '../types.js';
import { note, out, outJson, terminalSafe, usage } from '../output.js';

/** Server definitions (zod schemas): loaded only by the commands that use them. */
const defs = () => import('../../mcp/definitions.js');

const add: CliCommand = {
  path: ['mcp', 'add'],
  summary: 'define an MCP server the bridge may run (0600 file in the settings folder)',
  usage: `Usage: tycli mcp add NAME [--env K=V ...] [--env-from K ...] [--allow TOOL ...] [--ask none] [--shared] [--timeout MS] -- COMMAND ARGS...
       tycli mcp add NAME --url https://HOST/PATH [--header 'Name: value' ...] [--header-env 'Name=VAR' ...] [--allow TOOL ...] [--ask none] [--timeout MS]

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
call. Adding a name again replaces it and ends its running sessions.`,
  options: {
    env: { type: 'string', multiple: true },
    'env-from': { type: 'string', multiple: true },
    'header-env': { type: 'string', multiple: true },
    ask: { type: 'string' },
    url: { type: 'string' },
    header: { type: 'string', multiple: true },
    shared: { type: 'boolean' },
    timeout: { type: 'string' },
  },
  async run(ctx, v, pos) {
    const { buildDefinition, describeDefinition, loadDefinition, parseEnvPairs, saveDefinition } = await defs();
    const [name, ...command] = pos;
    if (name === undefined) usage('give a server name: tycli mcp add NAME -- COMMAND ARGS...');
    if (v.shared === true && v.url !== undefined) throw new TyError('E_USAGE', '--shared is for command servers, not --url');
    const ask = v.ask as string | undefined;
    if (ask !== undefined && ask !== 'none' && ask !== 'default') usage('--ask takes none (or default)');
    const fromEnv = (name: string): string => {
      const val = ctx.env[name];
      if (val === undefined) throw new TyError('E_USAGE', `${name} is not set in this environment`);
      return val;
    };
    const env = parseEnvPairs((v.env as string[] | undefined) ?? []);
    for (const k of (v['env-from'] as string[] | undefined) ?? []) Object.assign(env, parseEnvPairs([`${k}=${fromEnv(k)}`]));
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
    const { listNamespaces } = await import('../../mcp/namespaces.js');
    if ((await listNamespaces(ctx.globals.home)).includes(def.name)) throw new TyError('E_USAGE', `"${def.name}" is already an MCP namespace name`);
    const existed = (await loadDefinition(ctx.globals.home, def.name).catch(() => undefined)) !== undefined;
    await saveDefinition(ctx.globals.home, def);
    if (ctx.globals.json) outJson(ctx, { ok: true, server: describeDefinition(def), replaced: existed });
    else out(ctx, `${existed ? 'replaced' : 'added'} MCP server ${def.name} (${Object.keys(def.env).length} environment values kept, not shown)`);
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
    const { listNamespaces } = await import('../../mcp/namespaces.js');
    const namespaces = await listNamespaces(ctx.globals.home);
    if (ctx.globals.json) outJson(ctx, { ok: true, servers: rows, namespaces });
    else if (rows.length === 0 && namespaces.length === 0) note(ctx, "no MCP servers; add one with 'tycli mcp add NAME -- COMMAND ARGS...'");
    else {
      for (const r of rows) out(ctx, terminalSafe(ctx, `${String(r.name)}  ${r.error ? `refused: ${String(r.error)}` : r.url ? String(r.url) : (r.command as string[]).join(' ')}${r.shared ? '  (shared)' : ''}`));
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
    else out(ctx, terminalSafe(ctx, JSON.stringify(desc, null, 2)));
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
    if (!(await removeDefinition(ctx.globals.home, pos[0]!))) throw new TyError('E_UNKNOWN_TOOL', `no MCP server "${pos[0]!.slice(0, 40)}"`);
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
    const { parseNamespace, saveNamespace } = await import('../../mcp/namespaces.js');
    let raw: unknown;
    try {
      raw = JSON.parse(await readFile(resolve(ctx.cwd, pos[0]!), 'utf8'));
    } catch {
      throw new TyError('E_USAGE', `cannot read ${pos[0]!.slice(0, 200)} as JSON`);
    }
    const ns = parseNamespace(raw, pos[0]!.slice(0, 200));
    if ((await listDefinitions(ctx.globals.home)).includes(ns.name)) throw new TyError('E_USAGE', `"${ns.name}" is already an MCP server name`);
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
    const { removeNamespace } = await import('../../mcp/namespaces.js');
    if (!(await removeNamespace(ctx.globals.home, pos[0]!))) throw new TyError('E_UNKNOWN_TOOL', `no MCP namespace "${pos[0]!.slice(0, 40)}"`);
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
kills the server's whole process group.`,
  options: { 'idle-ms': { type: 'string' } },
  async run(ctx, v, pos) {
    if (pos.length !== 1) usage('give one server name');
    const idle = v['idle-ms'] === undefined ? undefined : Number(v['idle-ms']);
    if (idle !== undefined && (!Number.isInteger(idle) || idle < 1)) usage('--idle-ms takes a whole number of ms');
    const { runHub } = await import('../../mcp/hub.js');
    const ran = await runHub(ctx.globals.home, pos[0]!, idle === undefined ? {} : { idleMs: idle });
    if (!ran) note(ctx, 'another hub is running for this server');
    return 0;
  },
};

/**
 * Registered tool revisions offered through the bridge, run by the host's Invoker (gate, checks, audit).
 * Trusted-native tools (host authority, e.g. the built-in native python) are never offered to an MCP
 * client: listing skips them and a call to one is refused before the invoker runs.
 */
export function localTools(
  invoker: { invoke(ref: string, args: unknown, o: { signal: AbortSignal; principal: string }): Promise<{ ok: true; result: unknown } | { ok: false; error: { code: string; message: string } }> },
  registry: { list(): Promise<{ name: string; active: string | undefined }[]>; resolve(ref: string): Promise<{ manifest: { name: string; description: string; parameters: Record<string, unknown>; execution: { kind: string } } }> },
  principal: string,
): LocalTools {
  return {
    async list() {
      const tools: Tool[] = [];
      for (const b of await registry.list()) {
        if (b.active === undefined) continue;
        const r = await registry.resolve(b.name);
        if (r.manifest.execution.kind === 'trusted-native') continue;
        tools.push({ name: r.manifest.name, description: r.manifest.description, inputSchema: { type: 'object', ...r.manifest.parameters } as Tool['inputSchema'] });
      }
      return tools;
    },
    async call(name, args, signal): Promise<CallToolResult> {
      const target = await registry.resolve(name);
      if (target.manifest.execution.kind === 'trusted-native') {
        throw new TyError('E_CAPABILITY_DENIED', `"${target.manifest.name}" is a trusted-native tool (host authority); it is not offered to MCP clients`);
      }
      const r = await invoker.invoke(name, args, { signal, principal });
      if (!r.ok) throw new TyError(r.error.code as 'E_TOOL_FAILED', r.error.message);
      const text = typeof r.result === 'string' ? r.result : JSON.stringify(r.result);
      return { content: [{ type: 'text', text }] };
    },
  };
}

const serve: CliCommand = {
  path: ['mcp', 'serve'],
  summary: 'serve registered tools and bridged MCP servers to an MCP client (stdio, or HTTP on loopback)',
  usage: `Usage: tycli mcp serve [--sandbox NAME | --client NAME] [--http PORT]

Speaks MCP on stdin/stdout (or, with --http PORT, streamable HTTP at http://127.0.0.1:PORT/mcp with a
bearer token written 0600 to <home>/run/mcp-http.token and an Origin/Host check). Offers the active
registered tool revisions (each call through the gate and its sandbox) and every defined server's tools
as SERVER__TOOL. A registered tool whose name contains "__" is not offered (such names always mean
SERVER__TOOL; the log says so). A server's tool whose schema holds a pattern the linear-time regex engine
cannot run (backreference, lookahead, lookbehind) is not offered either; calls to it get -32602. A call no server rule (--allow, --ask none) lets through is asked about through the
gate (terminal, or 'tycli questions' / 'tycli answer'); with no one to ask it is refused. --sandbox NAME
(or --client NAME) names the client context the session limits count per (default "default"); principal
mcp:NAME. A posture value (--sandbox auto|required|off) still sets the OS isolation of local tool calls. One line
per request (server, method, tool name; never arguments) goes to <home>/state/mcp-requests.log.`,
  options: { client: { type: 'string' }, http: { type: 'string' } },
  sandboxNames: true,
  allowPositionals: false,
  async run(ctx: CliContext, v) {
    const client = (v.client as string | undefined) ?? 'default';
    if (ctx.globals.sandbox !== undefined) {
      // --sandbox doubles as the client-context name here; say plainly when it set the isolation posture instead.
      ctx.io.stderr.write(`note: --sandbox ${ctx.globals.sandbox} sets the OS isolation posture of local tool calls (${ctx.globals.sandbox === 'off' ? 'no OS sandbox' : ctx.globals.sandbox}), not a client name; name the client context with --client NAME\n`);
    }
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(client)) usage('--client takes 1-64 of A-Z, a-z, 0-9, _ . -');
    const httpPort = v.http === undefined ? undefined : Number(v.http);
    if (httpPort !== undefined && (!Number.isInteger(httpPort) || httpPort < 0 || httpPort > 65535)) usage('--http takes a port number (0 for any free port)');
    const { McpBridge } = await import('../../mcp/bridge.js');
    const { serveStream } = await import('../../mcp/serve.js');
    const { createMcpExternal } = await import('../../mcp/external.js');
    const { createNodeHost } = await import('../../host.js');
    const { loadSettings, createNodeGate } = await import('../../settings.js');
    const { createNodeAsker } = await import('../../ask-store.js');
    const home = ctx.globals.home;
    const principal = `mcp:${client}`;
    const settings = await loadSettings({ home, cwd: ctx.cwd, flags: { allow: ctx.globals.allow, deny: ctx.globals.deny, mode: ctx.globals.mode } });
    const { Store } = await import('../../../core/store.js');
    const { FileStoreBackend } = await import('../../store.js');
    const paths = (await import('../../paths.js')).tycliPaths(home);
    await mkdir(paths.store, { recursive: true, mode: 0o700 });
    const backend = new FileStoreBackend(paths.store);
    const store = new Store(backend);
    const { SecretsFile } = await import('../../secrets-file.js');
    const { knownSecretValues } = await import('../../host.js');
    // Secret values are withheld from questions, hook input and audit here too (as in tycli run).
    const withheld = await knownSecretValues(new SecretsFile(paths.secretsFile, (fn) => backend.withLock('secrets-file', fn)));
    const gate = createNodeGate({ store, settings, asker: createNodeAsker({ home, askWaitMs: settings.askWaitMs, dialog: settings.askDialog, env: ctx.env }), withheld, cwd: ctx.cwd, env: ctx.env });
    const { PauseTracker } = await import('../../../core/pause.js');
    const pause = new PauseTracker(store, settings.pause);
    const external = createMcpExternal(home, { gate });
    const host = await createNodeHost({ home, globals: ctx.globals, io: ctx.io, env: ctx.env, cwd: ctx.cwd, external, principal, gate });
    await mkdir(paths.state, { recursive: true, mode: 0o700 });
    const logFile = join(paths.state, 'mcp-requests.log');
    let chain = Promise.resolve();
    const log = (line: string): void => {
      const stamped = `${new Date().toISOString()} ${client} ${line.replace(/[\r\n]/g, ' ')}`;
      chain = chain.then(() => appendLine(logFile, stamped, { sync: false })).catch(() => undefined);
    };
    const entry = process.argv[1] ?? '';
    const hubLauncher = (def: { name: string }) => ({ command: process.execPath, args: [...process.execArgv, entry, '--home', home, 'mcp', 'hub', def.name] });
    const { StoreDefinitionMemory } = await import('../../../core/mcp/definitions.js');
    const bridge = new McpBridge({ home, sandbox: client, log, gate, pause, hubLauncher, definitions: new StoreDefinitionMemory(store), local: localTools(host.invoker, host.registry, principal) });
    const onDropped = (r: string): void => log(JSON.stringify({ dropped: r.slice(0, 200) }));
    let stopHttp: (() => Promise<void>) | undefined;
    const stopped = new Promise<void>((resolve) => {
      const stop = (): void => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        if (httpPort === undefined) (ctx.io.stdin as NodeJS.ReadStream).destroy?.();
        resolve();
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    try {
      if (httpPort === undefined) {
        await Promise.race([serveStream(bridge, ctx.io.stdin as NodeJS.ReadStream, ctx.io.stdout as NodeJS.WriteStream, onDropped), stopped]);
      } else {
        const { serveHttp } = await import('../../mcp/serve-http.js');
        const h = await serveHttp(bridge, settings.sessionIdleMs === undefined ? { port: httpPort, onDropped } : { port: httpPort, onDropped, idleMs: settings.sessionIdleMs });
        stopHttp = () => h.close();
        await mkdir(paths.run, { recursive: true, mode: 0o700 });
        const tokenFile = join(paths.run, 'mcp-http.token');
        const { default: writeFileAtomic } = await import('write-file-atomic');
        await writeFileAtomic(tokenFile, `${h.token}\n`, { mode: 0o600 });
        if (ctx.globals.json) outJson(ctx, { ok: true, url: h.url, tokenFile });
        else note(ctx, `MCP bridge at ${h.url} (bearer token in ${tokenFile}); Ctrl-C stops it`);
        await stopped;
      }
    } finally {
      await stopHttp?.();
      await bridge.close();
      await external.close();
      await host.close();
      await chain;
    }
    return 0;
  },
};

export const mcpCommands: CliCommand[] = [add, list, show, remove, nsSet, nsRemove, serve, hub];
