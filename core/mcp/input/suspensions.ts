// The bridge's 2025-era calls held open for a 2026-07-28 client (core/mcp/input/suspend.ts Suspension): started when
// a rule relays the server's elicitations, resumed by the client's retries, ended with the bridge; core, trusted side.
import type { CallToolResult } from '@modelcontextprotocol/server';
import { TyError } from '../../errors.js';
import type { BridgeContext } from '../bridge/context.js';
import { mapToolResult } from '../bridge/naming.js';
import type { McpDefinition } from '../server-definition.js';
import type { UpstreamSession } from '../upstream/session.js';
import { RpcFailure } from '../wire/errors.js';
import { RPC } from '../wire/messages.js';
import { isRelayed, type CallRound, type RelayedInput } from './relay.js';
import { Suspension } from './suspend.js';

/** One bridge's suspended calls, by id (the id travels in the bridge's requestState). */
export class Suspensions {
  private readonly held = new Map<string, Suspension>();

  constructor(private readonly ctx: BridgeContext) {}

  /**
   * A 2025-era server's call that may be suspended: its `elicitation/create` requests while it is the session's only
   * call are relayed to the client as input_required results, the call held open (its session held busy) until it
   * ends. Undefined when an `mcp-input(SERVER/elicitation)` rule does not allow it now (checked again here, as the
   * rules may change) or the session is not ready to hold.
   */
  async start(
    sessionId: string,
    def: McpDefinition,
    u: UpstreamSession,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    onprogress?: (p: { progress: number; total?: number; message?: string }) => void,
  ): Promise<CallToolResult | RelayedInput | undefined> {
    const rule = await this.ctx.opts.elicit?.inputRule?.(def.name, 'elicitation');
    if (rule === undefined) return undefined;
    const held = this.ctx.pool.tryHold(this.ctx.poolKey(sessionId, def.name), this.ctx.opts.source.fingerprint(def));
    if (held === undefined) return undefined;
    const id = globalThis.crypto.randomUUID();
    const sus = new Suspension(id, () => {
      this.held.delete(id);
      held.release();
    });
    this.held.set(id, sus);
    // the client cancelling its first request before the server asked cancels the call
    const onAbort = (): void => sus.controller.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const call = u.callTool(tool, args, {
      signal: sus.controller.signal,
      ...(onprogress ? { onprogress } : {}),
      onInput: (m, p, s) => sus.ask(m, p, s),
    });
    try {
      const r = await sus.start(call);
      if (!isRelayed(r)) return r;
      await this.ctx.opts.elicit?.auditInput?.(def.name, 'elicitation', {
        decision: 'allow',
        rule: rule.rule,
        list: 'allow',
        scope: rule.scope,
        outcome: 'ok',
      });
      this.ctx.log(def.name, 'tools/call', tool, 'input-required:elicitation');
      return { ...r, suspension: id };
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  /**
   * A retry answering a 2025-era server's call the bridge holds open: the client's answer goes to the server (the
   * `mcp-input(SERVER/elicitation)` rule checked again: gone, the server gets `cancel` and the retry
   * E_CAPABILITY_DENIED), then the call's result (mapped as any bridged result) or the server's next request, relayed
   * again.
   * @throws RpcFailure -32602 E_MCP_REQUEST_STATE (the held call has ended), E_CAPABILITY_DENIED.
   */
  async resume(server: string, tool: string, round: CallRound): Promise<CallToolResult | RelayedInput> {
    const sus = this.held.get(round.suspension!);
    const waiting = sus?.waitingKey;
    if (sus === undefined || waiting === undefined)
      throw new RpcFailure(
        RPC.INVALID_PARAMS,
        'requestState refused (expired): the server call it answered has ended; call again without inputResponses and requestState',
        { code: 'E_MCP_REQUEST_STATE', reason: 'expired' } as { code: string },
      );
    const elicit = this.ctx.opts.elicit;
    const rule = await elicit?.inputRule?.(server, 'elicitation');
    if (rule === undefined) {
      sus.end();
      await elicit
        ?.auditInput?.(server, 'elicitation', {
          decision: 'deny',
          rule: `no allow rule mcp-input(${server}/elicitation)`,
          list: 'mode',
          scope: 'default',
          outcome: 'denied',
          code: 'E_CAPABILITY_DENIED',
        })
        .catch(() => undefined);
      throw this.ctx.mcpError(
        new TyError(
          'E_CAPABILITY_DENIED',
          `the rule that relayed ${server}'s request is gone; the server was told the request was cancelled`,
          { suggestedRule: `mcp-input(${server}/elicitation)` },
        ),
      );
    }
    const r = await sus.resume(round.responses?.[waiting.key]);
    if (isRelayed(r)) {
      await elicit?.auditInput?.(server, 'elicitation', {
        decision: 'allow',
        rule: rule.rule,
        list: 'allow',
        scope: rule.scope,
        outcome: 'ok',
      });
      this.ctx.log(server, 'tools/call', tool, 'input-required:elicitation');
      return { ...r, suspension: sus.id };
    }
    this.ctx.log(server, 'tools/call', tool, r.isError ? 'tool-error' : 'ok');
    return mapToolResult(r, server, this.ctx.naming);
  }

  /** End every held call: a request still waiting is cancelled toward its server, the call aborted. */
  close(): void {
    for (const sus of [...this.held.values()]) {
      sus.end();
      sus.controller.abort();
    }
  }
}
