// tycli mcp serve | mcp proxy: the client-facing MCP bridge over stdio or loopback HTTP, every call through the gate;
// Node host, trusted side.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { CallToolResult, Tool } from '@modelcontextprotocol/server';
import { appendLine } from '../../../store/append.js';
import { TyError } from '../../../../core/errors.js';
import type { LocalTools } from '../../../mcp/bridge.js';
import type { CliCommand, CliContext } from '../../types.js';
import { note, outJson, usage } from '../../output.js';
import { untilStopped, writeTokenFile } from '../../serve-loop.js';
import { GATEWAY_OPTIONS, GATEWAY_USAGE } from '../../../gateway/serve.js';

/**
 * Registered tool revisions offered through the bridge, run by the host's Invoker (gate, checks, audit).
 * Trusted-native tools (host authority, e.g. the built-in native python) are never offered to an MCP
 * client: listing skips them and a call to one is refused before the invoker runs.
 */
export function localTools(
  invoker: {
    invoke(
      ref: string,
      args: unknown,
      o: { signal: AbortSignal; principal: string },
    ): Promise<
      | { ok: true; result: unknown }
      | { ok: false; error: { code: string; message: string; data?: Record<string, unknown> } }
    >;
  },
  registry: {
    list(): Promise<{ name: string; active: string | undefined }[]>;
    resolve(ref: string): Promise<{
      manifest: { name: string; description: string; parameters: Record<string, unknown>; execution: { kind: string } };
    }>;
  },
  principal: string,
): LocalTools {
  return {
    async list() {
      const tools: Tool[] = [];
      for (const b of await registry.list()) {
        if (b.active === undefined) continue;
        const r = await registry.resolve(b.name);
        if (r.manifest.execution.kind === 'trusted-native') continue;
        tools.push({
          name: r.manifest.name,
          description: r.manifest.description,
          inputSchema: { type: 'object', ...r.manifest.parameters } as Tool['inputSchema'],
        });
      }
      return tools;
    },
    async call(name, args, signal): Promise<CallToolResult> {
      const target = await registry.resolve(name);
      if (target.manifest.execution.kind === 'trusted-native') {
        throw new TyError(
          'E_CAPABILITY_DENIED',
          `"${target.manifest.name}" is a trusted-native tool (host authority); it is not offered to MCP clients`,
        );
      }
      const r = await invoker.invoke(name, args, { signal, principal });
      if (!r.ok) throw new TyError(r.error.code as 'E_TOOL_FAILED', r.error.message, r.error.data);
      const text = typeof r.result === 'string' ? r.result : JSON.stringify(r.result);
      return { content: [{ type: 'text', text }] };
    },
  };
}

/**
 * Run the bridge until stdin ends (stdio) or SIGINT/SIGTERM (HTTP): `mcp serve` (every server as
 * SERVER__NAME, registered tools too) or, with `proxy`, one server under its own names.
 */
async function runBridge(ctx: CliContext, v: Record<string, unknown>, proxy: string | undefined): Promise<number> {
  const client = (v.client as string | undefined) ?? 'default';
  if (ctx.globals.sandbox !== undefined && v['log-format'] !== 'json') {
    // --sandbox doubles as the client-context name here; say plainly when it set the isolation posture instead (not
    // on a JSON log, where every stderr line is a record for a collector).
    ctx.io.stderr.write(
      `note: --sandbox ${ctx.globals.sandbox} sets the OS isolation posture of local tool calls (${ctx.globals.sandbox === 'off' ? 'no OS sandbox' : ctx.globals.sandbox}), ` +
        `not a client name; name the client context with --client NAME\n`,
    );
  }
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(client)) usage('--client takes 1-64 of A-Z, a-z, 0-9, _ . -');
  if (v.http === undefined)
    for (const f of ['tls-cert', 'tls-key', 'behind-proxy', 'log-format'])
      if (v[f] !== undefined) usage(`--${f} goes with --http`);
  const gw = v.http === undefined ? undefined : await import('../../../gateway/serve.js');
  const flags = gw?.gatewayFlags(v);
  const instruments = gw ? await gw.gatewayInstruments(ctx.env) : undefined;
  const { McpBridge } = await import('../../../mcp/bridge.js');
  const { serveStream } = await import('../../../mcp/serve.js');
  const { createMcpExternal } = await import('../../../mcp/external.js');
  const { createNodeHost } = await import('../../../host/host.js');
  const { loadSettings, createNodeGate } = await import('../../../settings/load.js');
  const { createNodeAsker } = await import('../../../ask/channels.js');
  const home = ctx.globals.home;
  if (proxy !== undefined) {
    const { loadDefinition } = await import('../../../mcp/definitions.js');
    if ((await loadDefinition(home, proxy)) === undefined)
      throw new TyError(
        'E_UNKNOWN_TOOL',
        `no MCP server "${proxy.slice(0, 40)}" is defined; add it with 'tycli mcp add ${proxy.slice(0, 40)} -- COMMAND ARGS...'`,
      );
  }
  const principal = `mcp:${client}`;
  const settings = await loadSettings({
    home,
    cwd: ctx.cwd,
    flags: { allow: ctx.globals.allow, deny: ctx.globals.deny, mode: ctx.globals.mode },
  });
  const { Store } = await import('../../../../core/store/contract.js');
  const paths = (await import('../../../store/paths.js')).tycliPaths(home);
  // the store this home uses: its files, or PostgreSQL (TYCLI_STORE / store.url) shared by every instance
  const { openTycliStore } = await import('../../../store/open.js');
  const opened = await openTycliStore({ home, env: ctx.env });
  try {
    const store = new Store(opened.backend);
    const { knownSecretValues } = await import('../../../host/wiring.js');
    // Secret values are withheld from question previews, hook input and tools' own error text here too (as in tycli
    // run).
    const withheld = await knownSecretValues(opened.secrets);
    // one asker for approvals and elicitation forms: one question at a time; questions wait in the store, so on
    // PostgreSQL 'tycli answer' on any machine answers them
    const asker = createNodeAsker({
      home,
      questions: await opened.questions(),
      askWaitMs: settings.askWaitMs,
      dialog: settings.askDialog,
      env: ctx.env,
    });
    const gate = createNodeGate({ store, settings, asker, withheld, cwd: ctx.cwd, env: ctx.env });
    const { Elicitor } = await import('../../../../core/mcp/input/elicit.js');
    const { StoreAuditLog } = await import('../../../../core/audit/trail.js');
    const { PauseTracker } = await import('../../../../core/policy/pause.js');
    const pause = new PauseTracker(store, settings.pause);
    const external = createMcpExternal(home, { gate });
    const host = await createNodeHost({
      home,
      globals: ctx.globals,
      io: ctx.io,
      env: ctx.env,
      cwd: ctx.cwd,
      external,
      principal,
      gate,
      store: opened,
      ...(instruments?.tracing ? { tracer: instruments.tracing.callTracer } : {}),
      ...(instruments ? { observe: (r) => instruments.observe(r) } : {}),
    });
    await mkdir(paths.state, { recursive: true, mode: 0o700 });
    const requestLog = new RequestLog(join(paths.state, 'mcp-requests.log'), client);
    const log = (line: string): void => requestLog.line(line);
    const entry = process.argv[1] ?? '';
    const hubLauncher = (def: { name: string }) => ({
      command: process.execPath,
      args: [...process.execArgv, entry, '--home', home, 'mcp', 'hub', def.name],
    });
    const { StoreDefinitionMemory } = await import('../../../../core/mcp/bridge/definitions.js');
    const { singleNaming } = await import('../../../../core/mcp/bridge/naming.js');
    // a proxy offers its one server under its own names; registered tools and namespaces are not offered
    const { mcpServeHint } = await import('../../hints.js');
    // one bridge per principal: a gateway client authenticated as user:NAME acts as itself (its gate requests, its
    // elicitation records, its local tool calls), with upstream sessions of its own
    const bridges = new Map<string, InstanceType<typeof McpBridge>>();
    const bridgeFor = (who: string | undefined): InstanceType<typeof McpBridge> => {
      const p = who ?? principal;
      let b = bridges.get(p);
      if (b === undefined) {
        b = new McpBridge({
          home,
          sandbox: client,
          ...(who !== undefined ? { principal: who } : {}),
          log,
          gate,
          pause,
          hubLauncher,
          elicit: new Elicitor({
            policy: () => settings.policy,
            asker,
            audit: new StoreAuditLog(store),
            principal: p,
          }),
          hint: mcpServeHint,
          definitions: new StoreDefinitionMemory(store),
          ...(proxy !== undefined
            ? { naming: singleNaming(proxy) }
            : { local: localTools(host.invoker, host.registry, p) }),
        });
        bridges.set(p, b);
      }
      return b;
    };
    const onDropped = (r: string): void => log(JSON.stringify({ dropped: r.slice(0, 200) }));
    let stopHttp: (() => Promise<void>) | undefined;
    const stopped = untilStopped(ctx, !gw);
    try {
      if (!gw || !flags || !instruments) {
        // A person who started it in a terminal learns it is running and waiting; a client's pipe gets nothing.
        if ((ctx.io.stderr as { isTTY?: boolean }).isTTY) {
          ctx.io.stderr.write(
            `tycli mcp ${proxy !== undefined ? `proxy: MCP proxy for ${proxy}` : 'serve: MCP bridge'} on stdio (client context "${client}"), waiting for an MCP client on stdin; Ctrl-C stops it\n`,
          );
        }
        await Promise.race([
          serveStream(
            bridgeFor(undefined),
            ctx.io.stdin as NodeJS.ReadStream,
            ctx.io.stdout as NodeJS.WriteStream,
            onDropped,
          ),
          stopped,
        ]);
      } else {
        const { mcpRoute } = await import('../../../mcp/serve-http.js');
        let base = 'http://127.0.0.1';
        const route = mcpRoute({
          bridgeFor,
          endpoint: () => `${base}/mcp`,
          onDropped,
          ...(settings.sessionIdleMs === undefined ? {} : { idleMs: settings.sessionIdleMs }),
        });
        // a tool registered or activated, or a server defined, on any instance: every client hears listChanged
        const session = await opened.session();
        const stopChanges = session?.onChange((e) => {
          if (e.ns === 'bindings' || e.ns === 'mcp-definitions') void route.listsChanged();
        });
        const serving = await gw.startServing({
          flags,
          host,
          settings,
          instruments,
          tokenPrefix: proxy !== undefined ? `mcp-proxy-${proxy}` : 'mcp-http',
          paths: ['/mcp'],
          sessions: () => route.sessions,
          route: (req, res, c, admission) =>
            route.handle(req, res, { principal: c.principal }, (who) => {
              const p = admission.openSession(who);
              return p.ok ? p : { ok: false, message: admission.message(p.reason) };
            }),
          stderr: ctx.io.stderr,
          writeTokenFile: (name, token) => writeTokenFile(paths.run, name, token),
        });
        base = serving.gateway.base;
        stopHttp = async () => {
          stopChanges?.();
          await route.close();
          await serving.close();
        };
        if (ctx.globals.json) outJson(ctx, { ok: true, url: serving.url, tokenFile: serving.tokenFile });
        else
          note(
            ctx,
            `MCP ${proxy !== undefined ? `proxy for ${proxy}` : 'bridge'} at ${serving.url} (bearer token in ${serving.tokenFile}); Ctrl-C stops it`,
          );
        await stopped;
      }
    } finally {
      await stopHttp?.();
      for (const b of bridges.values()) await b.close();
      await external.close();
      await host.close();
      await requestLog.close();
    }
  } finally {
    await opened.close();
  }
  return 0;
}

/**
 * The diagnostic request log (`<home>/state/mcp-requests.log`): lines written off the call's path, batched (at most
 * every 100 ms or 256 lines one append), the rest written on close. The audit trail is the durable record.
 */
class RequestLog {
  #chain = Promise.resolve();
  #pending: string[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  constructor(
    readonly file: string,
    readonly client: string,
  ) {}
  line(text: string): void {
    this.#pending.push(`${new Date().toISOString()} ${this.client} ${text.replace(/[\r\n]/g, ' ')}`);
    if (this.#pending.length >= 256) this.#flush();
    else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.#flush(), 100);
      this.#timer.unref?.();
    }
  }
  #flush(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pending.length === 0) return;
    const lines = this.#pending;
    this.#pending = [];
    this.#chain = this.#chain
      .then(() => appendLine(this.file, lines.join('\n'), { sync: false }))
      .catch(() => undefined);
  }
  async close(): Promise<void> {
    this.#flush();
    await this.#chain;
  }
}

const serve: CliCommand = {
  path: ['mcp', 'serve'],
  summary: 'serve registered tools and bridged MCP servers to an MCP client (stdio, or HTTP: a team gateway instance)',
  usage: `Usage: tycli mcp serve [--sandbox NAME | --client NAME] [--http [HOST:]PORT [--tls-cert FILE --tls-key FILE |
                 --behind-proxy]]

${GATEWAY_USAGE}

Speaks MCP on stdin/stdout (or, with --http, streamable HTTP at http(s)://HOST:PORT/mcp). Offers the active
registered tool revisions (each call through the gate and its sandbox) and every defined server's tools
as SERVER__TOOL. A registered tool whose name contains "__" is not offered (such names always mean
SERVER__TOOL; the log says so). A server's tool whose schema holds a pattern the linear-time regex engine
cannot run (backreference, lookahead, lookbehind) is not offered either; calls to it get -32602. A call no server
rule (--allow, --ask none) lets through is asked about through the gate (terminal, or 'tycli questions' /
'tycli answer'); with no one to ask it is refused. --sandbox NAME (or --client NAME) names the client context the
session limits count per (default "default"); principal mcp:NAME. A posture value (--sandbox auto|required|off)
still sets the OS isolation of local tool calls. One line per request (server, method, tool name; never arguments)
goes to <home>/state/mcp-requests.log.

Over HTTP a client authenticates with a bearer token: this server's own token, written 0600 to
<home>/run/mcp-http-HOST-PORT.token (one per listening address; the client acts as mcp:NAME), a per-client token
('tycli token create --principal NAME': it acts as user:NAME, its sessions its own) or an OIDC access token
(gateway.oidc in the user settings; only then is OAuth protected-resource metadata, RFC 9728, advertised). Host and
Origin are checked, /healthz, /readyz and /metrics are served, and admission bounds connections, calls and sessions
per server and per principal (429 E_BUSY with Retry-After). On a PostgreSQL store (TYCLI_STORE) every instance
serves one state: a tool registered anywhere is listed everywhere (listChanged), questions are answered anywhere.
`,
  options: { client: { type: 'string' }, http: { type: 'string' }, ...GATEWAY_OPTIONS },
  sandboxNames: true,
  allowPositionals: false,
  async run(ctx: CliContext, v) {
    return runBridge(ctx, v, undefined);
  },
};

const proxy: CliCommand = {
  path: ['mcp', 'proxy'],
  summary: 'serve one bridged MCP server under its own names, every call through the gate (stdio, or HTTP)',
  usage: `Usage: tycli mcp proxy NAME [--client NAME] [--http [HOST:]PORT [--tls-cert FILE --tls-key FILE |
                 --behind-proxy]]

${GATEWAY_USAGE}

What to put in an MCP client's configuration in place of the server's own command: speaks MCP on
stdin/stdout (or, with --http, streamable HTTP at http(s)://HOST:PORT/mcp with its own bearer token written 0600
to <home>/run/mcp-proxy-NAME-HOST-PORT.token, per-client and OIDC tokens, and the checks of mcp serve --http) and offers
the one server NAME under its own tool, prompt and resource names (no SERVER__ prefix, no URI rewriting),
with the server's instructions. Every call goes through the same gate, rules, audit, message rules and
session limits as mcp serve; registered tools are not offered.`,
  options: { client: { type: 'string' }, http: { type: 'string' }, ...GATEWAY_OPTIONS },
  allowPositionals: true,
  async run(ctx: CliContext, v, pos) {
    const name = pos[0];
    if (name === undefined || pos.length > 1) usage('give one server name: tycli mcp proxy NAME [--http [HOST:]PORT]');
    const { SERVER_NAME_RE } = await import('../../../mcp/definitions.js');
    if (!SERVER_NAME_RE.test(name)) usage('a server name is 1-32 of a-z, 0-9 and single dashes');
    return runBridge(ctx, v, name);
  },
};

export const serveCommands: CliCommand[] = [serve, proxy];
