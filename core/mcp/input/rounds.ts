// The bridge's input rounds (MCP 2026-07-28 multi-round-trip): what a client's request brings for input requests
// (its declared capabilities; on a retry its answers, checked against the bridge's own requestState), and the
// `input_required` result a client gets for relayed requests; core, trusted side.
import type { BridgeContext } from '../bridge/context.js';
import { RpcFailure } from '../wire/errors.js';
import { RPC, declaredCapabilities } from '../wire/messages.js';
import { checkedResponses, formShapes, type CallRound, type RelayedInput } from './relay.js';
import { RequestStates } from './state.js';

/** What the SDK Server's request context gives of one request for its input round. */
export interface RoundRequest {
  _meta?: unknown;
  envelope?: unknown;
  inputResponses?: Record<string, unknown>;
  droppedInputResponseKeys?: string[];
  requestState: () => unknown;
}

/** One bridge's input rounds: the requestStates it issued (bound to one call each, used once, expiring). */
export class InputRounds {
  private readonly states = new RequestStates();

  constructor(private readonly ctx: BridgeContext) {}

  /**
   * What one tools/call (or prompts/get, `tool` then `prompts/get:NAME`) brings for input requests: undefined for a
   * 2025-era request (it cannot take any); else the capabilities the client declared and, on a retry, its answers
   * checked against the input requests the bridge relayed and the server's own state, taken from the bridge's
   * requestState (bound to this call, used once).
   * @throws RpcFailure -32602 E_MCP_REQUEST_STATE (a state tampered with, expired, replayed, for another call, or
   *   answers without one; audited), -32602 E_INVALID_ARGS (an answer missing or not the result its request needs).
   */
  async round(
    sessionId: string,
    server: string,
    tool: string,
    args: unknown,
    req: RoundRequest,
  ): Promise<CallRound | undefined> {
    const state = req.requestState();
    const retry =
      state !== undefined || req.inputResponses !== undefined || (req.droppedInputResponseKeys?.length ?? 0) > 0;
    if (req.envelope === undefined && !retry) return undefined;
    const clientCapabilities = declaredCapabilities(req._meta) ?? {};
    if (!retry) return { clientCapabilities };
    const refuse = async (reason: string, message: string): Promise<never> => {
      this.ctx.log(server, 'tools/call', tool, `refused:E_MCP_REQUEST_STATE:${reason}`);
      await this.ctx.opts.elicit
        ?.auditInput?.(server, 'state', {
          decision: 'deny',
          rule: `requestState ${reason}`,
          list: 'mode',
          scope: 'default',
          outcome: 'denied',
          code: 'E_MCP_REQUEST_STATE',
        })
        .catch(() => undefined);
      throw new RpcFailure(RPC.INVALID_PARAMS, message, { code: 'E_MCP_REQUEST_STATE', reason } as { code: string });
    };
    if (req.envelope === undefined)
      return refuse(
        'no-envelope',
        'inputResponses and requestState are part of protocol revision 2026-07-28; this request is not one',
      );
    if (state === undefined)
      return refuse(
        'missing',
        'inputResponses answer input requests the bridge relayed and need the requestState it issued with them; call again without inputResponses',
      );
    const opened = await this.states.open(state, {
      principal: `${this.ctx.opts.sandbox}\0${sessionId}`,
      server,
      tool,
      args: args ?? {},
    });
    if (!opened.ok)
      return refuse(
        opened.reason,
        `requestState refused (${opened.reason}): it is not one the bridge issued for this call, or it was used already or expired; call again without inputResponses and requestState`,
      );
    let responses: Record<string, unknown>;
    try {
      responses = checkedResponses(opened.keys, req.inputResponses, opened.forms);
    } catch (e) {
      throw this.ctx.mcpError(e);
    }
    return {
      clientCapabilities,
      responses,
      ...(opened.upstreamState !== undefined ? { upstreamState: opened.upstreamState } : {}),
      ...(opened.suspension !== undefined ? { suspension: opened.suspension } : {}),
    };
  }

  /**
   * The `input_required` result a client gets for relayed input requests: the server's requests and the bridge's own
   * state for this call (sealed: core/mcp/input/state.ts), which carries the server's state and the forms' shapes.
   */
  async relayedAnswer(
    sessionId: string,
    server: string,
    tool: string,
    args: unknown,
    r: RelayedInput,
  ): Promise<Record<string, unknown>> {
    const keys = Object.fromEntries(Object.entries(r.inputRequests).map(([k, q]) => [k, q.method]));
    const requestState = await this.states.mint(
      { principal: `${this.ctx.opts.sandbox}\0${sessionId}`, server, tool, args: args ?? {} },
      keys,
      r.upstreamState,
      r.suspension,
      formShapes(r.inputRequests),
    );
    return { resultType: 'input_required', inputRequests: r.inputRequests, requestState };
  }
}
