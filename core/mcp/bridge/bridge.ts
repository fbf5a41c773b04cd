// The client-facing MCP bridge: one SDK Server per client session offering registered tools and bridged servers' tools,
// every call checked and gated, transports injected; composed of small parts sharing one BridgeContext; core, trusted
// side.
import type { CallToolResult, Server } from '@modelcontextprotocol/server';
import type { GateRequest } from '../../exec/runtime.js';
import { BridgeContext, type BridgeOptions, type ListenNotifier } from './context.js';
import { BridgedCalls, type CallBridged, type OnProgress } from './calls.js';
import { DirectCalls, type DirectPath } from './direct.js';
import { serverRule } from './gate.js';
import { NamespaceCalls } from './namespace-calls.js';
import { NotificationRelay } from './notify.js';
import { SessionServers } from './server.js';
import { paramHeaders, type ParamHeader } from '../wire/http-headers.js';
import type { CallRound, RelayedInput } from '../input/relay.js';
import { InputRounds } from '../input/rounds.js';
import { Suspensions } from '../input/suspensions.js';
import type { McpDefinition } from '../server-definition.js';
import type { SessionPool } from '../upstream/pool.js';
import type { UpstreamSession } from '../upstream/session.js';

export { BRIDGE_SERVER_INFO, type BridgeOptions, type ListenNotifier, type LocalTools } from './context.js';

/**
 * Holds the bounded pool of server sessions for one sandbox and makes one SDK Server per client
 * session. Every gated request reloads the server's definition (a removed server is refused; a changed one
 * ends older sessions), checks arguments against the tool's own schema (unlisted fields refused), then
 * runs it through the gate (`gate.run`: deny rules and the pause first, the definition's own rule only
 * replacing the question, hooks, audit). Hosts construct it with their McpDefinitionSource and
 * UpstreamConnector (see core/mcp/index.ts).
 *
 * Its parts share one BridgeContext (core/mcp/bridge/context.ts): the session servers (server.ts), bridged calls
 * (calls.ts) and namespace calls (namespace-calls.ts) through the gate step (gate.ts), the direct path (direct.ts),
 * the notification relay (notify.ts), input rounds and suspended 2025-era calls (core/mcp/input/rounds.ts,
 * suspensions.ts), routed requests (routes.ts).
 */
export class McpBridge {
  private readonly ctx: BridgeContext;
  private readonly notifications: NotificationRelay;
  private readonly suspensions: Suspensions;
  private readonly rounds: InputRounds;
  private readonly calls: BridgedCalls;
  private readonly namespaces: NamespaceCalls;
  private readonly direct: DirectCalls;
  private readonly sessions: SessionServers;
  private seq = 0;

  constructor(opts: BridgeOptions) {
    this.ctx = new BridgeContext(
      opts,
      (server, sessionId, name, method, params) =>
        void this.notifications.forward(server, sessionId, name, method, params),
    );
    this.notifications = new NotificationRelay(this.ctx);
    this.suspensions = new Suspensions(this.ctx);
    this.rounds = new InputRounds(this.ctx);
    this.calls = new BridgedCalls(this.ctx, this.suspensions);
    this.namespaces = new NamespaceCalls(this.ctx);
    // the other parts start a bridged call through this.callBridged, so one method sees every one of them
    const callBridged: CallBridged = (...a) => this.callBridged(...a);
    this.direct = new DirectCalls(this.ctx, callBridged, this.rounds);
    this.sessions = new SessionServers(this.ctx, {
      callBridged,
      namespaces: this.namespaces,
      rounds: this.rounds,
      suspensions: this.suspensions,
      notifications: this.notifications,
    });
  }

  /** The bounded pool of server sessions (keys `SESSION\0SERVER`). */
  get pool(): SessionPool<UpstreamSession> {
    return this.ctx.pool;
  }

  /**
   * The definition's rules: `--ask none`, or `--allow NAME` (a tool name, `resources/read` or `prompts/get`).
   * They only replace asking a person: with a gate, deny rules, alwaysAsk, the pause, hooks and the audit
   * still apply (see serverRule).
   */
  static allowedByRules(def: McpDefinition, kind: GateRequest['kind'], name: string): boolean {
    return serverRule(def, kind, name) !== undefined;
  }

  /** A new client session id. */
  newSessionId(): string {
    return `s${++this.seq}`;
  }

  /** Build the SDK Server for one client session. Connect it to a guarded transport (see node/mcp/serve.ts). */
  createServer(sessionId: string): Server {
    return this.sessions.create(sessionId);
  }

  /** The direct path of one client session (core/mcp/bridge/direct.ts DirectCalls.path). */
  directPath(sessionId: string, reply: (message: unknown) => void): DirectPath {
    return this.direct.path(sessionId, reply);
  }

  /**
   * One bridged tools/call: definition reloaded, tool looked up, arguments checked (before approval and
   * before forwarding), approved, then forwarded (core/mcp/bridge/calls.ts BridgedCalls.call).
   * @throws TyError with a stable code (E_UNKNOWN_TOOL, the gate's codes, the session's codes).
   */
  async callBridged(
    sessionId: string,
    server: string,
    tool: string,
    args: unknown,
    signal: AbortSignal,
    onprogress?: OnProgress,
    loaded?: McpDefinition,
  ): Promise<CallToolResult>;
  async callBridged(
    sessionId: string,
    server: string,
    tool: string,
    args: unknown,
    signal: AbortSignal,
    onprogress: OnProgress | undefined,
    loaded: McpDefinition | undefined,
    round: CallRound | undefined,
  ): Promise<CallToolResult | RelayedInput>;
  async callBridged(
    sessionId: string,
    server: string,
    tool: string,
    args: unknown,
    signal: AbortSignal,
    onprogress?: OnProgress,
    loaded?: McpDefinition,
    round?: CallRound,
  ): Promise<CallToolResult | RelayedInput> {
    return this.calls.call(sessionId, server, tool, args, signal, onprogress, loaded, round);
  }

  /**
   * One namespace call (core/mcp/bridge/namespace-calls.ts NamespaceCalls.call): every chosen target's own schema
   * checked, each target approved by its own server's rules or the gate, then all forwarded.
   */
  async callNamespace(
    sessionId: string,
    nsName: string,
    actionName: string,
    args: unknown,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    return this.namespaces.call(sessionId, nsName, actionName, args, signal);
  }

  /**
   * The `Mcp-Param-*` headers a tools/call for `name` (as the client sees it) must carry: the `x-mcp-header`
   * declarations of the bridged tool's input schema (core/mcp/wire/http-headers.ts). None when the name is no bridged
   * server's tool or the server cannot be reached (the call then fails on its own).
   */
  async paramHeadersOf(sessionId: string, name: string, signal?: AbortSignal): Promise<ParamHeader[]> {
    const split = this.ctx.naming.parseName(name);
    if (split === undefined) return [];
    try {
      const def = await this.ctx.opts.source.load(split.server);
      if (def === undefined) return [];
      const tool = await this.ctx.withUpstream(
        sessionId,
        def,
        async (u) => (await u.tools(signal)).get(split.rest),
        signal,
      );
      const h = tool === undefined ? undefined : paramHeaders(tool.inputSchema);
      return h?.ok === true ? h.headers : [];
    } catch {
      return [];
    }
  }

  /**
   * Where a stateless (2026-07-28 over HTTP) client session's change notifications go: the serving entry's
   * `subscriptions/listen` streams (the SDK handler's `notify`), as its per-request Servers have no channel of their
   * own.
   */
  setListenNotifier(sessionId: string, notify: ListenNotifier): void {
    this.notifications.setListenNotifier(sessionId, notify);
  }

  /**
   * Log the protocol revision a client session speaks, once per session (`{"server":"client","method":
   * "session","outcome":"protocol:2026-07-28"}`).
   */
  noteClientProtocol(sessionId: string, version: string): void {
    this.sessions.noteClientProtocol(sessionId, version);
  }

  /**
   * Tell every client session that the tool, prompt and resource lists changed (MCP listChanged): e.g. a tool was
   * registered or activated on another instance of a team gateway.
   */
  listsChanged(): Promise<void> {
    return this.notifications.listsChanged();
  }

  /** The client session ended: its server sessions stop (a start still running is cancelled). */
  async closeSession(sessionId: string): Promise<void> {
    const s = this.ctx.servers.get(sessionId);
    this.ctx.servers.delete(sessionId);
    this.notifications.endSession(sessionId);
    this.sessions.endSession(sessionId);
    this.direct.endSession(sessionId);
    await this.ctx.pool.endPrefix(`${sessionId}\0`);
    await s?.close().catch(() => undefined);
  }

  /** Stop every session and server. */
  async close(): Promise<void> {
    this.suspensions.close();
    this.notifications.close();
    await Promise.all([...this.ctx.servers.keys()].map((k) => this.closeSession(k)));
    await this.ctx.pool.closeAll();
  }

  /**
   * Load the definition named by a client request (for a host's own listings, e.g. browser/mcp/bridge.ts).
   * @throws TyError E_UNKNOWN_TOOL when there is none (removed servers are refused; their sessions end).
   */
  protected definition(sessionId: string, server: string): Promise<McpDefinition> {
    return this.ctx.definition(sessionId, server);
  }

  /** Run `fn` on the live session of `def` in client session `sessionId` (core/mcp/bridge/context.ts withUpstream). */
  protected withUpstream<T>(
    sessionId: string,
    def: McpDefinition,
    fn: (u: UpstreamSession) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    return this.ctx.withUpstream(sessionId, def, fn, signal);
  }
}
