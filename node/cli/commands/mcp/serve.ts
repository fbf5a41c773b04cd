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
import { httpPortOption, untilStopped, writeTokenFile } from '../../serve-loop.js';

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
  if (ctx.globals.sandbox !== undefined) {
    // --sandbox doubles as the client-context name here; say plainly when it set the isolation posture instead.
    ctx.io.stderr.write(
      `note: --sandbox ${ctx.globals.sandbox} sets the OS isolation posture of local tool calls (${ctx.globals.sandbox === 'off' ? 'no OS sandbox' : ctx.globals.sandbox}), ` +
        `not a client name; name the client context with --client NAME\n`,
    );
  }
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(client)) usage('--client takes 1-64 of A-Z, a-z, 0-9, _ . -');
  const httpPort = httpPortOption(v.http);
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
  const { FileStoreBackend } = await import('../../../store/file-store.js');
  const paths = (await import('../../../store/paths.js')).tycliPaths(home);
  await mkdir(paths.store, { recursive: true, mode: 0o700 });
  const backend = new FileStoreBackend(paths.store);
  const store = new Store(backend);
  const { SecretsFile } = await import('../../../store/secrets.js');
  const { knownSecretValues } = await import('../../../host/wiring.js');
  // Secret values are withheld from question previews, hook input and tools' own error text here too (as in tycli run).
  const withheld = await knownSecretValues(
    new SecretsFile(paths.secretsFile, (fn) => backend.withLock('secrets-file', fn)),
  );
  // one asker for approvals and elicitation forms: one question at a time
  const asker = createNodeAsker({ home, askWaitMs: settings.askWaitMs, dialog: settings.askDialog, env: ctx.env });
  const gate = createNodeGate({ store, settings, asker, withheld, cwd: ctx.cwd, env: ctx.env });
  const { Elicitor } = await import('../../../../core/mcp/input/elicit.js');
  const { StoreAuditLog } = await import('../../../../core/audit/trail.js');
  const elicit = new Elicitor({
    policy: () => settings.policy,
    asker,
    audit: new StoreAuditLog(store),
    principal,
  });
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
  });
  await mkdir(paths.state, { recursive: true, mode: 0o700 });
  const logFile = join(paths.state, 'mcp-requests.log');
  // request log lines are written off the call's path, batched: at most every 100 ms (or 256 lines) one append
  // (a diagnostic log; the audit trail is the durable record), the rest written when the bridge stops
  let chain = Promise.resolve();
  let pending: string[] = [];
  let flushTimer: ReturnType<typeof setTimeout> | undefined;
  const flushLog = (): void => {
    if (flushTimer !== undefined) clearTimeout(flushTimer);
    flushTimer = undefined;
    if (pending.length === 0) return;
    const lines = pending;
    pending = [];
    chain = chain.then(() => appendLine(logFile, lines.join('\n'), { sync: false })).catch(() => undefined);
  };
  const log = (line: string): void => {
    pending.push(`${new Date().toISOString()} ${client} ${line.replace(/[\r\n]/g, ' ')}`);
    if (pending.length >= 256) flushLog();
    else if (flushTimer === undefined) {
      flushTimer = setTimeout(flushLog, 100);
      flushTimer.unref?.();
    }
  };
  const entry = process.argv[1] ?? '';
  const hubLauncher = (def: { name: string }) => ({
    command: process.execPath,
    args: [...process.execArgv, entry, '--home', home, 'mcp', 'hub', def.name],
  });
  const { StoreDefinitionMemory } = await import('../../../../core/mcp/bridge/definitions.js');
  const { singleNaming } = await import('../../../../core/mcp/bridge/naming.js');
  // a proxy offers its one server under its own names; registered tools and namespaces are not offered
  const { mcpServeHint } = await import('../../hints.js');
  const bridge = new McpBridge({
    home,
    sandbox: client,
    log,
    gate,
    pause,
    hubLauncher,
    elicit,
    hint: mcpServeHint,
    definitions: new StoreDefinitionMemory(store),
    ...(proxy !== undefined
      ? { naming: singleNaming(proxy) }
      : { local: localTools(host.invoker, host.registry, principal) }),
  });
  const onDropped = (r: string): void => log(JSON.stringify({ dropped: r.slice(0, 200) }));
  let stopHttp: (() => Promise<void>) | undefined;
  const stopped = untilStopped(ctx, httpPort === undefined);
  try {
    if (httpPort === undefined) {
      // A person who started it in a terminal learns it is running and waiting; a client's pipe gets nothing.
      if ((ctx.io.stderr as { isTTY?: boolean }).isTTY) {
        ctx.io.stderr.write(
          `tycli mcp ${proxy !== undefined ? `proxy: MCP proxy for ${proxy}` : 'serve: MCP bridge'} on stdio (client context "${client}"), waiting for an MCP client on stdin; Ctrl-C stops it\n`,
        );
      }
      await Promise.race([
        serveStream(bridge, ctx.io.stdin as NodeJS.ReadStream, ctx.io.stdout as NodeJS.WriteStream, onDropped),
        stopped,
      ]);
    } else {
      const { serveHttp } = await import('../../../mcp/serve-http.js');
      const refusals = { counter: host.refusals, principal };
      const h = await serveHttp(
        bridge,
        settings.sessionIdleMs === undefined
          ? { port: httpPort, onDropped, refusals }
          : { port: httpPort, onDropped, refusals, idleMs: settings.sessionIdleMs },
      );
      stopHttp = () => h.close();
      const tokenFile = await writeTokenFile(
        paths.run,
        proxy !== undefined ? `mcp-proxy-${proxy}.token` : 'mcp-http.token',
        h.token,
      );
      if (ctx.globals.json) outJson(ctx, { ok: true, url: h.url, tokenFile });
      else
        note(
          ctx,
          `MCP ${proxy !== undefined ? `proxy for ${proxy}` : 'bridge'} at ${h.url} (bearer token in ${tokenFile}); Ctrl-C stops it`,
        );
      await stopped;
    }
  } finally {
    await stopHttp?.();
    await bridge.close();
    await external.close();
    await host.close();
    flushLog();
    await chain;
  }
  return 0;
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
    return runBridge(ctx, v, undefined);
  },
};

const proxy: CliCommand = {
  path: ['mcp', 'proxy'],
  summary: 'serve one bridged MCP server under its own names, every call through the gate (stdio, or HTTP on loopback)',
  usage: `Usage: tycli mcp proxy NAME [--client NAME] [--http PORT]

What to put in an MCP client's configuration in place of the server's own command: speaks MCP on
stdin/stdout (or, with --http PORT, streamable HTTP at http://127.0.0.1:PORT/mcp with a bearer token
written 0600 to <home>/run/mcp-proxy-NAME.token and the Host/Origin checks of mcp serve --http) and offers
the one server NAME under its own tool, prompt and resource names (no SERVER__ prefix, no URI rewriting),
with the server's instructions. Every call goes through the same gate, rules, audit, message rules and
session limits as mcp serve; registered tools are not offered.`,
  options: { client: { type: 'string' }, http: { type: 'string' } },
  allowPositionals: true,
  async run(ctx: CliContext, v, pos) {
    const name = pos[0];
    if (name === undefined || pos.length > 1) usage('give one server name: tycli mcp proxy NAME [--http PORT]');
    const { SERVER_NAME_RE } = await import('../../../mcp/definitions.js');
    if (!SERVER_NAME_RE.test(name)) usage('a server name is 1-32 of a-z, 0-9 and single dashes');
    return runBridge(ctx, v, name);
  },
};

export const serveCommands: CliCommand[] = [serve, proxy];
