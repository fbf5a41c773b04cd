// What every part of the MCP bridge shares: its options, the pool of upstream sessions, the client sessions' SDK
// Servers, the request log, the definition a request names and the error a client sees; core, trusted side.
import type { CallToolResult, Server, Tool } from '@modelcontextprotocol/server';
import type { Gate } from '../../exec/runtime.js';
import { TyError } from '../../errors.js';
import { prefixedNaming, type Naming } from './naming.js';
import type { DefinitionMemory } from './definitions.js';
import type { ClientHint } from './results.js';
import { toMcpError } from '../wire/errors.js';
import { requestLogLine } from '../wire/messages.js';
import { SessionPool, type PoolLimits } from '../upstream/pool.js';
import type { McpDefinition, McpDefinitionSource, UpstreamConnector } from '../server-definition.js';
import { UpstreamSession, type UpstreamOptions } from '../upstream/session.js';
import type { Elicitor } from '../input/elicit.js';
import { elicitOptions } from '../input/elicit-hook.js';

/** The bridge's implementation identity (initialize and server/discover results; 2026-07-28 results' `_meta`). */
export const BRIDGE_SERVER_INFO: Readonly<{ name: string; version: string }> = Object.freeze({
  name: 'tysandbox',
  version: '0.1.0',
});

/**
 * Registered tool revisions offered next to bridged tools (wired by the CLI from the registry and core/exec/invoke.ts).
 */
export interface LocalTools {
  list(): Promise<Tool[]>;
  /** Run one call through the registry's gate, argument checks and audit; returns MCP content. */
  call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult>;
}

/** The publish side of a serving entry's `subscriptions/listen` streams (the SDK's ServerNotifier). */
export interface ListenNotifier {
  toolsChanged(): void;
  promptsChanged(): void;
  resourcesChanged(): void;
  resourceUpdated(uri: string): void;
}

export interface BridgeOptions {
  /** Where definitions and namespaces come from (loaded again on every gated request). */
  source: McpDefinitionSource;
  /** How upstream servers are reached (default: core's fetch-based streamableHttpConnector, url servers only). */
  connect?: UpstreamConnector;
  /** The client context the limits count per; principal `mcp:SANDBOX` unless `principal` is given. */
  sandbox: string;
  /**
   * The principal gated requests act as, when the client authenticated as one (a team gateway's per-client token or
   * OIDC: `user:NAME`); default `mcp:SANDBOX`.
   */
  principal?: string;
  /**
   * Every bridged tools/call, resources/read and prompts/get goes through `gate.run` (pause, deny rules,
   * the server's own rule as a preapproved allow or else a question, hooks, audit). Without a gate only the
   * server's own rule lets a request through, and nothing is audited (library and benchmark use only).
   */
  gate?: Gate;
  local?: LocalTools;
  /** One line per request: server, method, tool name, outcome; never arguments or answers. */
  log?: (line: string) => void;
  limits?: Partial<PoolLimits>;
  /**
   * Pause tracking (core/policy/pause.ts PauseTracker) keyed by the offered tool name: a paused tool is refused
   * first; refusals made by the bridge itself (bad arguments, unknown tool, no rule and no one to ask)
   * count toward the pause. The gate counts its own refusals.
   */
  pause?: { check(tool: string): Promise<void>; recordRefusal(tool: string): Promise<boolean> };
  /**
   * Where the definitions calls were let through under are remembered (core/mcp/bridge/definitions.ts), so a
   * question after a changed definition says what changed. Decisions are keyed by the definition hash
   * whether or not this is given.
   */
  definitions?: DefinitionMemory;
  /**
   * How names and URIs appear to the client (core/mcp/bridge/naming.ts): `prefixedNaming` (default, `mcp serve`:
   * SERVER__NAME, tymcp://SERVER/URI) or `singleNaming(SERVER)` (a proxy: one server under its own
   * names; registered tools and namespaces are not offered).
   */
  naming?: Naming;
  /**
   * The host's hint appended to a refusal's message for the client (core/mcp/bridge/results.ts ClientHint; default
   * mcpHint, which names rules and settings only). A host may name its own command, e.g. the one that lifts a pause.
   */
  hint?: ClientHint;
  /**
   * While a tools/call that carries a progress token waits at the gate (a question for a person), a
   * `notifications/progress` ("waiting for approval of SERVER/TOOL") goes out after `firstMs` and then
   * every `everyMs`, so a client that resets its timeout on progress keeps waiting (default 1 000 / 15 000).
   */
  waitingProgress?: { firstMs: number; everyMs: number };
  /**
   * Servers' elicitation requests answered by a person (core/mcp/input/elicit.ts Elicitor): a session declares form
   * elicitation only when a rule allows it for that server at its start; every request is checked again. Absent:
   * refused, as every other server-to-client request.
   */
  elicit?: Pick<Elicitor, 'enabledFor' | 'elicit'> & Partial<Pick<Elicitor, 'inputRule' | 'auditInput'>>;
  /**
   * `url` servers that cannot be opened with 2026-07-28 negotiation are opened with the 2025 handshake (UpstreamOptions
   * `legacyFallback`; the browser host); the fallback is logged (`{"method":"connect","outcome":"fallback:CODE"}`).
   */
  legacyFallback?: boolean;
  /** Test seam: how a server session starts. */
  startUpstream?: (def: McpDefinition, opts: UpstreamOptions, signal: AbortSignal) => Promise<UpstreamSession>;
}

/**
 * Where a server session's notifications go (the bridge's notification relay, core/mcp/bridge/notify.ts): `server`
 * is the client session's SDK Server as it was when the server session started.
 */
export type UpstreamNotify = (
  server: Server | undefined,
  sessionId: string,
  name: string,
  method: string,
  params: unknown,
) => void;

/**
 * The one object the bridge's parts share (calls, the gate step, routes, input relay, notification relay, the
 * direct path): the options, the bounded pool of upstream sessions for one sandbox (keyed by client session and
 * server), each client session's SDK Server, the request log, and the look-ups every request starts with.
 */
export class BridgeContext {
  readonly naming: Naming;
  readonly pool: SessionPool<UpstreamSession>;
  /** Each client session's SDK Server, by client session id. */
  readonly servers = new Map<string, Server>();

  constructor(
    readonly opts: BridgeOptions,
    private readonly notify: UpstreamNotify,
  ) {
    this.pool = new SessionPool<UpstreamSession>(opts.limits);
    this.naming = opts.naming ?? prefixedNaming;
  }

  /** One request-log line (core/mcp/wire/messages.ts requestLogLine); never arguments or answers. */
  log(server: string, method: string, name: string | undefined, outcome: string): void {
    this.opts.log?.(requestLogLine({ server, method, name, outcome }));
  }

  /** A refusal as the JSON-RPC error the client sees, with the host's hint (core/mcp/wire/errors.ts toMcpError). */
  mcpError(e: unknown): Error {
    return toMcpError(e, this.opts.hint);
  }

  /** The pool key of SERVER's session in a client session. */
  poolKey(sessionId: string, server: string): string {
    return `${sessionId}\0${server}`;
  }

  /**
   * Run `fn` on the live session of `def` in client session `sessionId`, started when there is none (or its definition
   * fingerprint changed); a start is logged with the protocol revision negotiated.
   * @throws the pool's codes (E_BUSY, E_ABORTED), the session's start failures, what `fn` throws.
   */
  async withUpstream<T>(
    sessionId: string,
    def: McpDefinition,
    fn: (u: UpstreamSession) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    const key = this.poolKey(sessionId, def.name);
    const server = this.servers.get(sessionId);
    const start = async (sig: AbortSignal): Promise<UpstreamSession> => {
      const uopts: UpstreamOptions = {
        onNotification: (method, params) => this.notify(server, sessionId, def.name, method, params),
        onFiltered: (w) =>
          this.log(
            def.name,
            w.method ?? '(message)',
            undefined,
            w.action === 'answer' ? 'refused-server-request' : 'dropped',
          ),
        onClose: () => void this.pool.end(key),
        onToolRefused: (tool, reason) => {
          const line = JSON.parse(
            requestLogLine({
              server: def.name,
              method: 'tools/list',
              name: tool,
              outcome: 'hidden:unsupported-schema',
            }),
          ) as Record<string, string>;
          this.opts.log?.(JSON.stringify({ ...line, reason: reason.slice(0, 300) }));
        },
        ...(this.opts.connect ? { connect: this.opts.connect } : {}),
        ...(this.opts.legacyFallback
          ? {
              legacyFallback: true,
              onLegacyFallback: (code: string) => this.log(def.name, 'connect', undefined, `fallback:${code}`),
            }
          : {}),
        ...(await elicitOptions(this.opts.elicit, def, (o) => this.log(def.name, 'elicitation/create', undefined, o))),
      };
      const u = await (this.opts.startUpstream ?? ((d, o, s) => UpstreamSession.start(d, o, s)))(def, uopts, sig);
      // the revision negotiated with this server (2026-07-28, or a 2025 one after the handshake)
      this.log(def.name, 'connect', undefined, `protocol:${u.protocolVersion ?? 'unknown'}`);
      return u;
    };
    return this.pool.use(key, this.opts.source.fingerprint(def), start, fn, signal);
  }

  /**
   * Load the definition named by a client request.
   * @throws TyError E_UNKNOWN_TOOL when there is none (removed servers are refused; their sessions end).
   */
  async definition(sessionId: string, server: string): Promise<McpDefinition> {
    const def = await this.opts.source.load(server);
    if (def === undefined) {
      await this.pool.end(this.poolKey(sessionId, server));
      throw new TyError(
        'E_UNKNOWN_TOOL',
        `no MCP server "${server.slice(0, 40)}" is defined (it may have been removed)`,
      );
    }
    return def;
  }

  /** Count one of the bridge's own refusals toward the pause (never a busy server, a pause or a cancelled call). */
  async countRefusal(tool: string, code: string): Promise<void> {
    if (!this.opts.pause || code === 'E_PAUSED' || code === 'E_BUSY' || code === 'E_ABORTED' || code === 'E_MCP')
      return;
    await this.opts.pause.recordRefusal(tool).catch(() => undefined);
  }
}
