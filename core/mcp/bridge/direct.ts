// The bridge's direct path: a client's tools/call for a defined server answered by the bridge itself, without the SDK
// Server's and Client's schema passes, with the same checks, gate step and log as the SDK path; core, trusted side.
import type { CallToolResult } from '@modelcontextprotocol/server';
import { checkToolArguments } from './args.js';
import { mapToolResult } from './naming.js';
import { BRIDGE_SERVER_INFO, type BridgeContext } from './context.js';
import { serverRule } from './gate.js';
import type { CallBridged, OnProgress } from './calls.js';
import { RPC, declaredCapabilities, type RpcId } from '../wire/messages.js';
import { encodeModernToolResult, toolCallParams } from '../wire/tool-call.js';
import { callTakingInput, isRelayed, type CallRound, type RelayedInput } from '../input/relay.js';
import type { InputRounds } from '../input/rounds.js';
import type { McpDefinition } from '../server-definition.js';
import type { CancelSignal } from '../upstream/session.js';

/** The first protocol revision of the stateless era (per-request `_meta` envelope). */
const MODERN_REVISION = '2026-07-28';

/** What a guarded transport hands the bridge directly instead of to the session's SDK Server. */
export interface DirectPath {
  /**
   * A client `tools/call` request that passed the message rules; false: give it to the SDK Server.
   * `pinnedModern`: the connection already sent the SDK Server a 2026-07-28 request other than
   * `server/discover`, so its era is fixed (the SDK's serveStdio pins it on that request); until then an
   * enveloped request goes to the SDK Server, which pins the era.
   */
  request(message: Record<string, unknown>, pinnedModern?: boolean): boolean;
  /** A client `notifications/cancelled`; false when it names no call on the direct path. */
  cancelled(params: unknown): boolean;
}

/**
 * The abort switch of one direct-path call: it makes a real AbortSignal only when one is asked for (making
 * one costs microseconds on every call, and the common call never needs it).
 */
export class CallAbort implements CancelSignal {
  aborted = false;
  private ac: AbortController | undefined;
  private listeners: (() => void)[] = [];
  get signal(): AbortSignal {
    if (this.ac === undefined) {
      this.ac = new AbortController();
      if (this.aborted) this.ac.abort();
    }
    return this.ac.signal;
  }
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.ac?.abort();
    for (const f of this.listeners.splice(0)) f();
  }
  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.aborted) this.listeners.push(listener);
  }
  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners.indexOf(listener);
    if (i >= 0) this.listeners.splice(i, 1);
  }
}

/** Every client session's direct path and its calls in flight. */
export class DirectCalls {
  /** Calls on the direct path in flight, per client session, by the client's request id. */
  private readonly inFlight = new Map<string, Map<RpcId, CallAbort>>();

  constructor(
    private readonly ctx: BridgeContext,
    /** The bridge's callBridged (every bridged call not forwarded at once goes through it). */
    private readonly callBridged: CallBridged,
    private readonly rounds: InputRounds,
  ) {}

  /**
   * The direct path of one client session (see node/mcp/serve.ts): a `tools/call` for a defined server is
   * run by BridgedCalls itself (the definition loaded once, the tool looked up, arguments checked against
   * its schema, the rules or the gate asked, the call forwarded) and answered on `reply`, without the SDK
   * Server's and Client's schema passes; BridgedCalls and UpstreamSession.callTool apply the same checks.
   * Anything else (a namespace, a registered tool, an unknown or undefined server, params the structural
   * check of toolCallParams does not take) returns false and goes to the session's SDK Server.
   */
  path(sessionId: string, reply: (message: unknown) => void): DirectPath {
    return {
      request: (message, pinnedModern) => this.toolCall(sessionId, message, reply, pinnedModern === true),
      cancelled: (params) => {
        const id = (params as { requestId?: unknown } | undefined)?.requestId;
        const ac = typeof id === 'string' || typeof id === 'number' ? this.inFlight.get(sessionId)?.get(id) : undefined;
        if (ac === undefined) return false;
        ac.abort();
        return true;
      },
    };
  }

  /** A client session ended: its direct calls are cancelled. */
  endSession(sessionId: string): void {
    for (const ac of this.inFlight.get(sessionId)?.values() ?? []) ac.abort();
    this.inFlight.delete(sessionId);
  }

  private toolCall(
    sessionId: string,
    message: Record<string, unknown>,
    reply: (message: unknown) => void,
    pinnedModern: boolean,
  ): boolean {
    const ctx = this.ctx;
    const id = message.id;
    if (typeof id !== 'string' && typeof id !== 'number') return false;
    const sdk = ctx.servers.get(sessionId);
    if (sdk === undefined) return false;
    const p = toolCallParams(message.params);
    const split = p === undefined ? undefined : ctx.naming.parseName(p.name);
    if (p === undefined || split === undefined) return false;
    // the era of the request is the session's: a 2026-07-28 request on a connection pinned to the version it
    // names, a 2025-era one on a connection that is not 2026-07-28 (the SDK Server refuses the others)
    const negotiated = sdk.getNegotiatedProtocolVersion();
    const modern = p.envelope !== undefined;
    if (modern ? !pinnedModern || negotiated !== p.envelope : negotiated !== undefined && negotiated >= MODERN_REVISION)
      return false;
    let def: McpDefinition | undefined;
    try {
      def = ctx.opts.source.loadSync?.(split.server);
    } catch {
      return false; // the SDK path refuses it with its stable code
    }
    if (def === undefined) return false;
    let calls = this.inFlight.get(sessionId);
    if (calls === undefined) this.inFlight.set(sessionId, (calls = new Map()));
    if (calls.has(id)) return false;
    const ac = new CallAbort();
    calls.set(id, ac);
    const token = p.progressToken;
    // written at once, in arrival order, so all of a call's progress goes out before its result
    const onprogress: OnProgress | undefined =
      token === undefined
        ? undefined
        : (pr) =>
            void (
              ac.aborted ||
              reply({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, ...pr } })
            );
    // a 2026-07-28 client may take input requests (multi-round-trip); its retries take the SDK path (toolCallParams)
    const round: CallRound | undefined = modern
      ? { clientCapabilities: declaredCapabilities((message.params as { _meta?: unknown })._meta) ?? {} }
      : undefined;
    (
      this.forwardAtOnce(sessionId, def, split.rest, p.arguments, ac, onprogress, round) ??
      this.callBridged(sessionId, split.server, split.rest, p.arguments, ac.signal, onprogress, def, round)
    )
      .then((r) => (isRelayed(r) ? this.rounds.relayedAnswer(sessionId, split.server, split.rest, p.arguments, r) : r))
      .then(
        (result) => {
          calls.delete(id);
          // a cancelled request gets no response (MCP cancellation); 2026-07-28 results encoded as the SDK Server does
          if (!ac.aborted)
            reply({
              jsonrpc: '2.0',
              id,
              result: modern
                ? encodeModernToolResult(result as unknown as Record<string, unknown>, BRIDGE_SERVER_INFO)
                : result,
            });
        },
        (e: unknown) => {
          calls.delete(id);
          if (ac.aborted) return;
          // the JSON-RPC error the SDK Server would send for the same throw
          const err = ctx.mcpError(e) as Error & { code?: unknown; data?: unknown };
          const thrown = typeof err.code === 'number' && Number.isSafeInteger(err.code) ? err.code : RPC.INTERNAL_ERROR;
          // the SDK's 2026-07-28 codec sends -32002 (resource not found) as -32602
          const code = modern && thrown === -32002 ? RPC.INVALID_PARAMS : thrown;
          reply({
            jsonrpc: '2.0',
            id,
            error:
              err.data === undefined ? { code, message: err.message } : { code, message: err.message, data: err.data },
          });
        },
      );
    return true;
  }

  /**
   * BridgedCalls' checks when each can be made at once: no gate and no pause tracker, a ready session whose definition
   * fingerprint is `def`'s, the tool in its cached list, arguments that pass the tool's schema, a rule of `def`
   * (loaded for this request) that allows the call; then the call is forwarded and logged as BridgedCalls logs it.
   * Undefined whenever any check cannot pass at once: BridgedCalls then decides, asks or refuses (so every refusal,
   * question and count stays in one place).
   */
  private forwardAtOnce(
    sessionId: string,
    def: McpDefinition,
    tool: string,
    args: unknown,
    signal: CallAbort,
    onprogress: OnProgress | undefined,
    round: CallRound | undefined,
  ): Promise<CallToolResult | RelayedInput> | undefined {
    const ctx = this.ctx;
    // with a gate every call goes through gate.run in BridgedCalls (pause, deny rules, hooks, audit)
    if (ctx.opts.gate !== undefined || ctx.opts.pause !== undefined || serverRule(def, 'mcp', tool) === undefined)
      return undefined;
    const held = ctx.pool.tryHold(ctx.poolKey(sessionId, def.name), ctx.opts.source.fingerprint(def));
    if (held === undefined) return undefined;
    const u = held.session;
    // a 2025-era server's call that may be held open for a 2026-07-28 client's input: BridgedCalls' (suspendable)
    if (
      u.era !== 'modern' &&
      round?.clientCapabilities?.elicitation !== undefined &&
      ctx.opts.elicit?.inputRule !== undefined
    ) {
      held.release();
      return undefined;
    }
    const t = u.alive ? u.cachedTool(tool) : undefined;
    const checked = t === undefined ? undefined : checkToolArguments(t.inputSchema, args);
    if (checked === undefined || !checked.ok) {
      held.release();
      return undefined;
    }
    const server = def.name;
    // a 2026-07-28 server may answer input_required: taken as BridgedCalls takes it (core/mcp/input/relay.ts)
    const call: Promise<CallToolResult | RelayedInput> =
      u.era === 'modern' && (round !== undefined || ctx.opts.elicit !== undefined)
        ? (callTakingInput(
            ctx.opts.elicit,
            server,
            round,
            signal.signal,
            (input) => u.callTool(tool, checked.args, onprogress ? { signal, onprogress, input } : { signal, input }),
            (o) => ctx.log(server, 'tools/call', tool, o),
          ) as Promise<CallToolResult | RelayedInput>)
        : u.callTool(tool, checked.args, onprogress ? { signal, onprogress } : { signal });
    return call.then(
      (r) => {
        held.release();
        if (isRelayed(r)) {
          ctx.log(server, 'tools/call', tool, 'input-required');
          return r;
        }
        ctx.log(server, 'tools/call', tool, r.isError ? 'tool-error' : 'ok');
        return mapToolResult(r, server, ctx.naming);
      },
      (e: unknown) => {
        held.release();
        ctx.log(server, 'tools/call', tool, 'failed');
        throw e;
      },
    );
  }
}
