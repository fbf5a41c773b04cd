// The MCP bridge's namespaces as offered tools and their calls: target choice, every chosen target's own schema, each
// target approved, then all forwarded; core, trusted side.
import type { CallToolResult, Tool } from '@modelcontextprotocol/server';
import type { Question } from '../../exec/runtime.js';
import { TyError, toTyError } from '../../errors.js';
import { checkToolArguments } from './args.js';
import { toolErrorResult, withFeedback } from './results.js';
import { NAME_SEP } from './naming.js';
import { chooseTargets, mergedSchema, type NamespaceAction } from './namespace.js';
import type { McpDefinition } from '../server-definition.js';
import type { BridgeContext } from './context.js';
import { gated, hintsOf, previewOf } from './gate.js';
import { failedOutcome } from './calls.js';

/** Namespace tools: listed with a merged schema, called through each target's own rules. */
export class NamespaceCalls {
  constructor(private readonly ctx: BridgeContext) {}

  /**
   * One namespace call: the namespace and every chosen provider's definition are reloaded (a removed one is
   * refused); `kind` picks the target (or every target of a broadcast read); the other fields are checked
   * against each chosen target's own schema before any approval or forwarding; each target is approved by
   * its own server's rules or the gate; a broadcast's results are joined under each kind.
   * @returns the target's result (a broadcast's joined); arguments no target takes are a tool execution error result.
   * @throws TyError E_UNKNOWN_TOOL (no such namespace, action or provider), the gate's codes, the sessions' codes.
   */
  async call(
    sessionId: string,
    nsName: string,
    actionName: string,
    args: unknown,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    const ctx = this.ctx;
    let outcome = 'refused';
    let byGate = false;
    const offered = `${nsName}${NAME_SEP}${actionName}`;
    try {
      await ctx.opts.pause?.check(offered);
      const ns = await (ctx.opts.source.loadNamespace?.(nsName) ?? Promise.resolve(undefined));
      if (ns === undefined) throw new TyError('E_UNKNOWN_TOOL', `no MCP namespace "${nsName}"`);
      const action = ns.actions.find((a) => a.name === actionName);
      if (action === undefined)
        throw new TyError('E_UNKNOWN_TOOL', `namespace "${nsName}" has no action "${actionName.slice(0, 80)}"`);
      const choice = chooseTargets(action, args);
      if (!choice.ok) {
        outcome = 'refused:E_INVALID_ARGS';
        await ctx.countRefusal(offered, 'E_INVALID_ARGS');
        return toolErrorResult('E_INVALID_ARGS', `${nsName}${NAME_SEP}${actionName}: ${choice.message}`);
      }
      // 1. every chosen provider exists and the arguments fit each one's own schema: nothing asked or sent yet
      const plans: {
        kind: string;
        def: McpDefinition;
        tool: string;
        args: Record<string, unknown>;
        hints: Question['hints'];
        definition: Record<string, unknown>;
      }[] = [];
      for (const t of choice.targets) {
        const def = await ctx.opts.source.load(t.server);
        if (def === undefined)
          throw new TyError(
            'E_UNKNOWN_TOOL',
            `provider "${t.server}" of ${nsName}${NAME_SEP}${actionName} (kind ${t.kind}) was removed`,
          );
        const tool = await ctx.withUpstream(sessionId, def, async (u) => (await u.tools(signal)).get(t.tool), signal);
        if (tool === undefined)
          throw new TyError('E_UNKNOWN_TOOL', `provider "${t.server}" has no tool "${t.tool}" (kind ${t.kind})`);
        const checked = checkToolArguments(tool.inputSchema, choice.args);
        if (!checked.ok) {
          outcome = 'refused:E_INVALID_ARGS';
          await ctx.countRefusal(offered, 'E_INVALID_ARGS');
          return toolErrorResult(
            'E_INVALID_ARGS',
            `${nsName}${NAME_SEP}${actionName} (kind ${t.kind}): ${checked.message}`,
          );
        }
        plans.push({
          kind: t.kind,
          def,
          tool: t.tool,
          args: checked.args,
          hints: hintsOf(tool),
          definition: tool as Record<string, unknown>,
        });
      }
      // 2. each target through the gate (its own server's rule, else a person; pre-hooks) and only when every
      // one passed, 3. forward them all: target i's gated step runs the steps of targets i+1.. inside it
      const results: { kind: string; result: CallToolResult }[] = [];
      const feedback: string[] = [];
      const step = async (i: number): Promise<void> => {
        const p = plans[i];
        if (p === undefined) {
          outcome = 'forwarded';
          for (const q of plans)
            results.push({
              kind: q.kind,
              result: await ctx.withUpstream(sessionId, q.def, (u) => u.callTool(q.tool, q.args, { signal }), signal),
            });
          return;
        }
        const r = await gated(
          ctx,
          p.def,
          'mcp',
          p.tool,
          { hints: p.hints, preview: previewOf(p.args), input: { arguments: p.args }, definition: p.definition },
          signal,
          async () => {
            await step(i + 1);
            return results[i]!.result;
          },
        );
        if (r.feedback) feedback.push(...r.feedback);
      };
      byGate = ctx.opts.gate !== undefined;
      await step(0);
      outcome = results.every((r) => r.result.isError === true) ? 'tool-error' : 'ok';
      if (results.length === 1 && !action.broadcast) return withFeedback(results[0]!.result, feedback);
      const content: CallToolResult['content'] = [];
      const structured: Record<string, unknown> = {};
      for (const r of results) {
        content.push({ type: 'text', text: `[${r.kind}]` });
        content.push(...r.result.content);
        structured[r.kind] = r.result.structuredContent ?? {
          content: r.result.content,
          isError: r.result.isError === true,
        };
      }
      return withFeedback(
        {
          content,
          structuredContent: { results: structured },
          isError: results.every((r) => r.result.isError === true),
        },
        feedback,
      );
    } catch (e) {
      outcome = await failedOutcome(ctx, e, outcome, byGate, offered);
      throw e;
    } finally {
      ctx.log(nsName, 'tools/call', actionName, outcome);
    }
  }

  /** The offered tools of every namespace (a namespace named like a server is skipped). */
  async tools(sessionId: string, servers: Set<string>, signal: AbortSignal): Promise<Tool[]> {
    const out: Tool[] = [];
    for (const n of await (this.ctx.opts.source.listNamespaces?.() ?? Promise.resolve([]))) {
      if (servers.has(n)) {
        this.ctx.log(n, 'tools/list', undefined, 'skipped:namespace-named-like-a-server');
        continue;
      }
      try {
        const ns = await (this.ctx.opts.source.loadNamespace?.(n) ?? Promise.resolve(undefined));
        if (!ns) continue;
        for (const a of ns.actions) out.push(await this.actionTool(sessionId, n, a, signal));
      } catch (e) {
        this.ctx.log(n, 'tools/list', undefined, `failed:${toTyError(e, 'E_MCP').code}`);
      }
    }
    return out;
  }

  /** One action as an offered tool: `NS__ACTION`, its kinds described, the targets' schemas merged. */
  private async actionTool(sessionId: string, ns: string, a: NamespaceAction, signal: AbortSignal): Promise<Tool> {
    const schemas = new Map<string, unknown>();
    for (const t of a.targets) {
      const def = await this.ctx.opts.source.load(t.server).catch(() => undefined);
      if (!def) continue;
      const tool = await this.ctx
        .withUpstream(sessionId, def, async (u) => (await u.tools(signal)).get(t.tool), signal)
        .catch(() => undefined);
      if (tool) schemas.set(t.kind, tool.inputSchema);
    }
    const kinds = a.targets.map((t) => `${t.kind} (${t.server}/${t.tool})`).join(', ');
    return {
      name: `${ns}${NAME_SEP}${a.name}`,
      description: `${a.description ?? a.name} [${a.access}${a.broadcast ? ', broadcast' : ''}; kind: ${kinds}]`,
      inputSchema: mergedSchema(a, schemas) as Tool['inputSchema'],
      annotations: { readOnlyHint: a.access === 'read' },
    };
  }
}
