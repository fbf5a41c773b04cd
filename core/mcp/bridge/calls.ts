// The MCP bridge's gated tools/call of a bridged server's tool: definition reloaded, tool looked up, arguments checked
// against its own schema, the gate step, then forwarded (input requests relayed, answered or refused); core, trusted
// side.
import type { CallToolResult } from '@modelcontextprotocol/server';
import { TyError, toTyError } from '../../errors.js';
import { checkToolArguments } from './args.js';
import { toolErrorResult, withFeedback } from './results.js';
import { NAME_SEP, mapToolResult } from './naming.js';
import type { McpDefinition } from '../server-definition.js';
import type { BridgeContext } from './context.js';
import { gated, hintsOf, previewOf } from './gate.js';
import { callTakingInput, isRelayed, type CallRound, type RelayedInput } from '../input/relay.js';
import type { Suspensions } from '../input/suspensions.js';
import type { CallInput } from '../upstream/session.js';

/** A progress update of a call as the client gets it. */
export type OnProgress = (p: { progress: number; total?: number; message?: string }) => void;

/** One bridged tools/call (BridgedCalls.call), as the parts that start one are given it. */
export type CallBridged = (
  sessionId: string,
  server: string,
  tool: string,
  args: unknown,
  signal: AbortSignal,
  onprogress?: OnProgress,
  loaded?: McpDefinition,
  round?: CallRound,
) => Promise<CallToolResult | RelayedInput>;

/**
 * The logged outcome of a call that threw: `refused:CODE` while it was still being checked (a refusal the gate did
 * not count is counted here), `failed` once it had been forwarded.
 */
export async function failedOutcome(
  ctx: BridgeContext,
  e: unknown,
  outcome: string,
  byGate: boolean,
  offered: string,
): Promise<string> {
  if (outcome !== 'refused') return 'failed';
  const code = toTyError(e, 'E_MCP').code;
  if (!byGate) await ctx.countRefusal(offered, code);
  return `refused:${code}`;
}

/** Bridged tools/calls, each logged once with its outcome. */
export class BridgedCalls {
  constructor(
    private readonly ctx: BridgeContext,
    private readonly suspensions: Suspensions,
  ) {}

  /**
   * One bridged tools/call: definition reloaded (unless `loaded`, loaded for this very request), tool looked up,
   * arguments checked (before approval and before forwarding), approved, then forwarded. With `round` (a 2026-07-28
   * client) a server's input requests may come back as a RelayedInput.
   * @returns the mapped result; arguments the schema refuses are a tool execution error result (E_INVALID_ARGS).
   * @throws TyError E_UNKNOWN_TOOL, E_INVALID_ARGS (a tool not offered), the gate's codes, the session's codes.
   */
  async call(
    sessionId: string,
    server: string,
    tool: string,
    args: unknown,
    signal: AbortSignal,
    onprogress?: OnProgress,
    loaded?: McpDefinition,
    round?: CallRound,
  ): Promise<CallToolResult | RelayedInput> {
    const ctx = this.ctx;
    let outcome = 'refused';
    let byGate = false;
    const offered = `${server}${NAME_SEP}${tool}`;
    try {
      await ctx.opts.pause?.check(offered);
      // `loaded`: the caller loaded it for this very request (one stat per call)
      const def = loaded ?? (await ctx.definition(sessionId, server));
      const result = await ctx.withUpstream(
        sessionId,
        def,
        async (u) => {
          const t = (await u.tools(signal)).get(tool);
          if (t === undefined) {
            const why = u.refusedTool(tool);
            if (why !== undefined)
              throw new TyError('E_INVALID_ARGS', `${offered} is not offered: its schema ${why.slice(0, 300)}`);
            throw new TyError('E_UNKNOWN_TOOL', `server "${server}" has no tool "${tool.slice(0, 80)}"`);
          }
          const checked = checkToolArguments(t.inputSchema, args);
          // a tool execution error (MCP 2025-11-25): the model sees it in the result and can correct itself
          if (!checked.ok) {
            const code = 'E_INVALID_ARGS';
            outcome = `refused:${code}`;
            await ctx.countRefusal(offered, code);
            return toolErrorResult(code, `${ctx.naming.name(server, tool)}: ${checked.message}`);
          }
          byGate = ctx.opts.gate !== undefined;
          const onWaiting =
            onprogress === undefined
              ? undefined
              : (n: number) =>
                  onprogress({ progress: n, message: `waiting for approval of ${server}/${tool.slice(0, 80)}` });
          const r = await gated(
            ctx,
            def,
            'mcp',
            tool,
            {
              hints: hintsOf(t),
              preview: previewOf(checked.args),
              input: { arguments: checked.args },
              definition: t as Record<string, unknown>,
              ...(onWaiting ? { onWaiting } : {}),
            },
            signal,
            async (): Promise<CallToolResult | RelayedInput> => {
              outcome = 'forwarded';
              // a 2025-era server's elicitation during the call, relayed to a 2026-07-28 client as input_required
              if (
                u.era !== 'modern' &&
                round?.clientCapabilities?.elicitation !== undefined &&
                ctx.opts.elicit?.inputRule !== undefined
              ) {
                const suspend = await this.suspensions.start(sessionId, def, u, tool, checked.args, signal, onprogress);
                if (suspend !== undefined) return suspend;
              }
              // a 2026-07-28 server may answer input_required: relayed, answered by a person or refused
              // (core/mcp/input/relay.ts)
              if (u.era === 'modern' && (round !== undefined || ctx.opts.elicit !== undefined)) {
                const send = (input: CallInput) =>
                  u.callTool(tool, checked.args, onprogress ? { signal, onprogress, input } : { signal, input });
                return callTakingInput(ctx.opts.elicit, server, round, signal, send, (o) =>
                  ctx.log(server, 'tools/call', tool, o),
                ) as Promise<CallToolResult | RelayedInput>;
              }
              return u.callTool(tool, checked.args, onprogress ? { signal, onprogress } : { signal });
            },
          );
          if (isRelayed(r.value)) return r.value;
          return mapToolResult(withFeedback(r.value, r.feedback), server, ctx.naming);
        },
        signal,
      );
      if (isRelayed(result)) outcome = 'input-required';
      else if (outcome === 'refused' || outcome === 'forwarded') outcome = result.isError ? 'tool-error' : 'ok';
      return result;
    } catch (e) {
      outcome = await failedOutcome(ctx, e, outcome, byGate, offered);
      throw e;
    } finally {
      ctx.log(server, 'tools/call', tool, outcome);
    }
  }
}
