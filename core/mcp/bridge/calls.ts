// The MCP bridge's gated calls: one bridged tools/call and one namespace call (target choice, every target's own
// schema, each approved, then forwarded); core, trusted side.
import type { CallToolResult, Tool } from '@modelcontextprotocol/server';
import type { Question } from '../../exec/runtime.js';
import { TyError, toTyError } from '../../errors.js';
import { checkToolArguments } from './args.js';
import { toolErrorResult } from './results.js';
import { NAME_SEP, mapToolResult } from './naming.js';
import { chooseTargets, mergedSchema, type NamespaceAction } from './namespace.js';
import type { McpDefinition } from '../server-definition.js';
import { BridgeBase } from './context.js';
import { callTakingInput, checkedResponses, isRelayed, type CallRound, type RelayedInput } from '../input/relay.js';
import { RequestStates } from '../input/required.js';
import { paramHeaders, type ParamHeader } from '../wire/http-headers.js';
import { RPC, declaredCapabilities } from '../wire/messages.js';
import { RpcFailure } from './util.js';
import type { CallInput, UpstreamSession } from '../upstream/session.js';
import { Suspension } from '../input/suspend.js';
import { hintsOf, previewOf, withFeedback } from './util.js';

/** BridgeBase with the bridged and namespace tools/call paths (McpBridge adds the client-facing Server). */
export class BridgeCalls extends BridgeBase {
  /**
   * One bridged tools/call: definition reloaded, tool looked up, arguments checked (before approval and
   * before forwarding), approved, then forwarded.
   */
  async callBridged(
    sessionId: string,
    server: string,
    tool: string,
    args: unknown,
    signal: AbortSignal,
    onprogress?: (p: { progress: number; total?: number; message?: string }) => void,
    loaded?: McpDefinition,
  ): Promise<CallToolResult>;
  async callBridged(
    sessionId: string,
    server: string,
    tool: string,
    args: unknown,
    signal: AbortSignal,
    onprogress: ((p: { progress: number; total?: number; message?: string }) => void) | undefined,
    loaded: McpDefinition | undefined,
    round: CallRound | undefined,
  ): Promise<CallToolResult | RelayedInput>;
  async callBridged(
    sessionId: string,
    server: string,
    tool: string,
    args: unknown,
    signal: AbortSignal,
    onprogress?: (p: { progress: number; total?: number; message?: string }) => void,
    loaded?: McpDefinition,
    round?: CallRound,
  ): Promise<CallToolResult | RelayedInput> {
    let outcome = 'refused';
    let byGate = false;
    const offered = `${server}${NAME_SEP}${tool}`;
    try {
      await this.opts.pause?.check(offered);
      // `loaded`: the caller loaded it for this very request (one stat per call)
      const def = loaded ?? (await this.definition(sessionId, server));
      const result = await this.withUpstream(
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
            await this.countRefusal(offered, code);
            return toolErrorResult(code, `${this.naming.name(server, tool)}: ${checked.message}`);
          }
          byGate = this.opts.gate !== undefined;
          const onWaiting =
            onprogress === undefined
              ? undefined
              : (n: number) =>
                  onprogress({ progress: n, message: `waiting for approval of ${server}/${tool.slice(0, 80)}` });
          const r = await this.gated(
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
                this.opts.elicit?.inputRule !== undefined
              ) {
                const suspend = await this.suspendable(sessionId, def, u, tool, checked.args, signal, onprogress);
                if (suspend !== undefined) return suspend;
              }
              // a 2026-07-28 server may answer input_required: relayed, answered by a person or refused
              // (bridge-input.ts)
              if (u.era === 'modern' && (round !== undefined || this.opts.elicit !== undefined)) {
                const send = (input: CallInput) =>
                  u.callTool(tool, checked.args, onprogress ? { signal, onprogress, input } : { signal, input });
                return callTakingInput(this.opts.elicit, server, round, signal, send, (o) =>
                  this.log(server, 'tools/call', tool, o),
                ) as Promise<CallToolResult | RelayedInput>;
              }
              return u.callTool(tool, checked.args, onprogress ? { signal, onprogress } : { signal });
            },
          );
          if (isRelayed(r.value)) return r.value;
          return mapToolResult(withFeedback(r.value, r.feedback), server, this.naming);
        },
        signal,
      );
      if (isRelayed(result)) outcome = 'input-required';
      else if (outcome === 'refused' || outcome === 'forwarded') outcome = result.isError ? 'tool-error' : 'ok';
      return result;
    } catch (e) {
      outcome = await this.failedOutcome(e, outcome, byGate, offered);
      throw e;
    } finally {
      this.log(server, 'tools/call', tool, outcome);
    }
  }

  /**
   * A 2025-era server's call that may be suspended (core/mcp/input/suspend.ts): its `elicitation/create` requests
   * while it is the session's only call are relayed to the client as input_required results, the call held open (its
   * session held busy) until it ends. Undefined when an `mcp-input(SERVER/elicitation)` rule does not allow it now
   * (checked again here, as the rules may change) or the session is not ready to hold.
   */
  private async suspendable(
    sessionId: string,
    def: McpDefinition,
    u: UpstreamSession,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    onprogress?: (p: { progress: number; total?: number; message?: string }) => void,
  ): Promise<CallToolResult | RelayedInput | undefined> {
    const rule = await this.opts.elicit?.inputRule?.(def.name, 'elicitation');
    if (rule === undefined) return undefined;
    const held = this.pool.tryHold(`${sessionId}\0${def.name}`, this.opts.source.fingerprint(def));
    if (held === undefined) return undefined;
    const id = globalThis.crypto.randomUUID();
    const sus = new Suspension(id, () => {
      this.suspensions.delete(id);
      held.release();
    });
    this.suspensions.set(id, sus);
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
      await this.opts.elicit?.auditInput?.(def.name, 'elicitation', {
        decision: 'allow',
        rule: rule.rule,
        list: 'allow',
        scope: rule.scope,
        outcome: 'ok',
      });
      this.log(def.name, 'tools/call', tool, 'input-required:elicitation');
      return { ...r, suspension: id };
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  /**
   * One namespace call: the namespace and every chosen provider's definition are reloaded (a removed one is
   * refused); `kind` picks the target (or every target of a broadcast read); the other fields are checked
   * against each chosen target's own schema before any approval or forwarding; each target is approved by
   * its own server's rules or the gate; a broadcast's results are joined under each kind.
   */
  async callNamespace(
    sessionId: string,
    nsName: string,
    actionName: string,
    args: unknown,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    let outcome = 'refused';
    let byGate = false;
    const offered = `${nsName}${NAME_SEP}${actionName}`;
    try {
      await this.opts.pause?.check(offered);
      const ns = await (this.opts.source.loadNamespace?.(nsName) ?? Promise.resolve(undefined));
      if (ns === undefined) throw new TyError('E_UNKNOWN_TOOL', `no MCP namespace "${nsName}"`);
      const action = ns.actions.find((a) => a.name === actionName);
      if (action === undefined)
        throw new TyError('E_UNKNOWN_TOOL', `namespace "${nsName}" has no action "${actionName.slice(0, 80)}"`);
      const choice = chooseTargets(action, args);
      if (!choice.ok) {
        outcome = 'refused:E_INVALID_ARGS';
        await this.countRefusal(offered, 'E_INVALID_ARGS');
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
        const def = await this.opts.source.load(t.server);
        if (def === undefined)
          throw new TyError(
            'E_UNKNOWN_TOOL',
            `provider "${t.server}" of ${nsName}${NAME_SEP}${actionName} (kind ${t.kind}) was removed`,
          );
        const tool = await this.withUpstream(sessionId, def, async (u) => (await u.tools(signal)).get(t.tool), signal);
        if (tool === undefined)
          throw new TyError('E_UNKNOWN_TOOL', `provider "${t.server}" has no tool "${t.tool}" (kind ${t.kind})`);
        const checked = checkToolArguments(tool.inputSchema, choice.args);
        if (!checked.ok) {
          outcome = 'refused:E_INVALID_ARGS';
          await this.countRefusal(offered, 'E_INVALID_ARGS');
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
              result: await this.withUpstream(sessionId, q.def, (u) => u.callTool(q.tool, q.args, { signal }), signal),
            });
          return;
        }
        const r = await this.gated(
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
      byGate = this.opts.gate !== undefined;
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
      outcome = await this.failedOutcome(e, outcome, byGate, offered);
      throw e;
    } finally {
      this.log(nsName, 'tools/call', actionName, outcome);
    }
  }

  /**
   * The logged outcome of a call that threw: `refused:CODE` while it was still being checked (a refusal the gate did
   * not count is counted here), `failed` once it had been forwarded.
   */
  private async failedOutcome(e: unknown, outcome: string, byGate: boolean, offered: string): Promise<string> {
    if (outcome !== 'refused') return 'failed';
    const code = toTyError(e, 'E_MCP').code;
    if (!byGate) await this.countRefusal(offered, code);
    return `refused:${code}`;
  }

  /** The offered tools of every namespace (a namespace named like a server is skipped). */
  protected async namespaceTools(sessionId: string, servers: Set<string>, signal: AbortSignal): Promise<Tool[]> {
    const out: Tool[] = [];
    for (const n of await (this.opts.source.listNamespaces?.() ?? Promise.resolve([]))) {
      if (servers.has(n)) {
        this.log(n, 'tools/list', undefined, 'skipped:namespace-named-like-a-server');
        continue;
      }
      try {
        const ns = await (this.opts.source.loadNamespace?.(n) ?? Promise.resolve(undefined));
        if (!ns) continue;
        for (const a of ns.actions) out.push(await this.actionTool(sessionId, n, a, signal));
      } catch (e) {
        this.log(n, 'tools/list', undefined, `failed:${toTyError(e, 'E_MCP').code}`);
      }
    }
    return out;
  }

  protected async actionTool(sessionId: string, ns: string, a: NamespaceAction, signal: AbortSignal): Promise<Tool> {
    const schemas = new Map<string, unknown>();
    for (const t of a.targets) {
      const def = await this.opts.source.load(t.server).catch(() => undefined);
      if (!def) continue;
      const tool = await this.withUpstream(
        sessionId,
        def,
        async (u) => (await u.tools(signal)).get(t.tool),
        signal,
      ).catch(() => undefined);
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

  /**
   * What one tools/call brings for input requests (MCP 2026-07-28): undefined for a 2025-era request (it cannot take
   * any); else the capabilities the client declared and, on a retry, its answers checked against the input requests
   * the bridge relayed and the server's own state, taken from the bridge's requestState (bound to this call, used
   * once).
   * @throws RpcFailure -32602 E_MCP_REQUEST_STATE (a state tampered with, expired, replayed, for another call, or
   *   answers without one; audited), -32602 E_INVALID_ARGS (an answer missing or not the result its request needs).
   */
  protected async inputRound(
    sessionId: string,
    server: string,
    tool: string,
    args: unknown,
    req: {
      _meta?: unknown;
      envelope?: unknown;
      inputResponses?: Record<string, unknown>;
      droppedInputResponseKeys?: string[];
      requestState: () => unknown;
    },
  ): Promise<CallRound | undefined> {
    const state = req.requestState();
    const retry =
      state !== undefined || req.inputResponses !== undefined || (req.droppedInputResponseKeys?.length ?? 0) > 0;
    if (req.envelope === undefined && !retry) return undefined;
    const clientCapabilities = declaredCapabilities(req._meta) ?? {};
    if (!retry) return { clientCapabilities };
    const refuse = async (reason: string, message: string): Promise<never> => {
      this.log(server, 'tools/call', tool, `refused:E_MCP_REQUEST_STATE:${reason}`);
      await this.opts.elicit
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
      principal: `${this.opts.sandbox}\0${sessionId}`,
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
      responses = checkedResponses(opened.keys, req.inputResponses);
    } catch (e) {
      throw this.mcpError(e);
    }
    return {
      clientCapabilities,
      responses,
      ...(opened.upstreamState !== undefined ? { upstreamState: opened.upstreamState } : {}),
      ...(opened.suspension !== undefined ? { suspension: opened.suspension } : {}),
    };
  }
  protected readonly states = new RequestStates();

  /**
   * A retry answering a 2025-era server's call the bridge holds open: the client's answer goes to the server (the
   * `mcp-input(SERVER/elicitation)` rule checked again: gone, the server gets `cancel` and the retry
   * E_CAPABILITY_DENIED),
   * then the call's result (mapped as any bridged result) or the server's next request, relayed again.
   * @throws RpcFailure -32602 E_MCP_REQUEST_STATE (the held call has ended), E_CAPABILITY_DENIED.
   */
  protected async resumeSuspended(
    server: string,
    tool: string,
    round: CallRound,
  ): Promise<CallToolResult | RelayedInput> {
    const sus = this.suspensions.get(round.suspension!);
    const waiting = sus?.waitingKey;
    if (sus === undefined || waiting === undefined)
      throw new RpcFailure(
        RPC.INVALID_PARAMS,
        'requestState refused (expired): the server call it answered has ended; call again without inputResponses and requestState',
        { code: 'E_MCP_REQUEST_STATE', reason: 'expired' } as { code: string },
      );
    const rule = await this.opts.elicit?.inputRule?.(server, 'elicitation');
    if (rule === undefined) {
      sus.end();
      await this.opts.elicit
        ?.auditInput?.(server, 'elicitation', {
          decision: 'deny',
          rule: `no allow rule mcp-input(${server}/elicitation)`,
          list: 'mode',
          scope: 'default',
          outcome: 'denied',
          code: 'E_CAPABILITY_DENIED',
        })
        .catch(() => undefined);
      throw this.mcpError(
        new TyError(
          'E_CAPABILITY_DENIED',
          `the rule that relayed ${server}'s request is gone; the server was told the request was cancelled`,
          { suggestedRule: `mcp-input(${server}/elicitation)` },
        ),
      );
    }
    const r = await sus.resume(round.responses?.[waiting.key]);
    if (isRelayed(r)) {
      await this.opts.elicit?.auditInput?.(server, 'elicitation', {
        decision: 'allow',
        rule: rule.rule,
        list: 'allow',
        scope: rule.scope,
        outcome: 'ok',
      });
      this.log(server, 'tools/call', tool, 'input-required:elicitation');
      return { ...r, suspension: sus.id };
    }
    this.log(server, 'tools/call', tool, r.isError ? 'tool-error' : 'ok');
    return mapToolResult(r, server, this.naming);
  }

  /**
   * The `Mcp-Param-*` headers a tools/call for `name` (as the client sees it) must carry: the `x-mcp-header`
   * declarations of the bridged tool's input schema (core/mcp/wire/http-headers.ts). None when the name is no bridged
   * server's tool or the server cannot be reached (the call then fails on its own).
   */
  async paramHeadersOf(sessionId: string, name: string, signal?: AbortSignal): Promise<ParamHeader[]> {
    const split = this.naming.parseName(name);
    if (split === undefined) return [];
    try {
      const def = await this.opts.source.load(split.server);
      if (def === undefined) return [];
      const tool = await this.withUpstream(
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
   * The `input_required` result a client gets for relayed input requests: the server's requests and the bridge's own
   * state for this call.
   */
  protected async relayedAnswer(
    sessionId: string,
    server: string,
    tool: string,
    args: unknown,
    r: RelayedInput,
  ): Promise<Record<string, unknown>> {
    const keys = Object.fromEntries(Object.entries(r.inputRequests).map(([k, q]) => [k, q.method]));
    const requestState = await this.states.mint(
      { principal: `${this.opts.sandbox}\0${sessionId}`, server, tool, args: args ?? {} },
      keys,
      r.upstreamState,
      r.suspension,
    );
    return { resultType: 'input_required', inputRequests: r.inputRequests, requestState };
  }
}
