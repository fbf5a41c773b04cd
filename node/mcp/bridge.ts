// The client-facing MCP bridge: one SDK Server per client session offering registered tools and bridged servers' tools, every call checked and gated; Node host, trusted side.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
  type Prompt,
  type Resource,
  type ResourceTemplate,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Gate, GateRequest, Question } from '../../core/runtime.js';
import { TyError, toTyError } from '../../core/errors.js';
import { checkToolArguments } from '../../core/mcp/args.js';
import { TOOL_EXECUTION_CODES, clientMessage, toolErrorResult } from '../../core/mcp/results.js';
import { NAME_SEP, mapPromptResult, mapToolResult, prefixedNaming, type Naming } from '../../core/mcp/naming.js';
import { definitionHash, definitionSnapshot, describeChange, type DefinitionKind, type DefinitionMemory } from '../../core/mcp/definitions.js';
import { RPC, requestLogLine, toolCallParams, type RpcId } from '../../core/mcp/messages.js';
import { SessionPool, type PoolLimits } from '../../core/mcp/pool.js';
import { fingerprint, listDefinitions, loadDefinition, loadDefinitionSync, type McpDefinition } from './definitions.js';
import { chooseTargets, mergedSchema, type NamespaceAction } from '../../core/mcp/namespace.js';
import { listNamespaces, loadNamespace } from './namespaces.js';
import { UpstreamSession, type CancelSignal, type UpstreamOptions } from './upstream.js';
import type { HubLauncher } from './hub.js';
import { installRouted, relayInstructions, type RouteContext } from './bridge-routes.js';
import { watchDefinitions } from './definition-watch.js';

/** Registered tool revisions offered next to bridged tools (wired by the CLI from the registry and core/invoke.ts). */
export interface LocalTools {
  list(): Promise<Tool[]>;
  /** Run one call through the registry's gate, argument checks and audit; returns MCP content. */
  call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult>;
}

export interface BridgeOptions {
  /** tycli home (definitions are read from it on every call). */
  home: string;
  /** The client context the limits count per; principal `mcp:SANDBOX`. */
  sandbox: string;
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
   * Pause tracking (core/pause.ts PauseTracker) keyed by the offered tool name: a paused tool is refused
   * first; refusals made by the bridge itself (bad arguments, unknown tool, no rule and no one to ask)
   * count toward the pause. The gate counts its own refusals.
   */
  pause?: { check(tool: string): Promise<void>; recordRefusal(tool: string): Promise<boolean> };
  /**
   * Where the definitions calls were let through under are remembered (core/mcp/definitions.ts), so a
   * question after a changed definition says what changed. Decisions are keyed by the definition hash
   * whether or not this is given.
   */
  definitions?: DefinitionMemory;
  /** How a hub for a shared server is started (default: this process's own tycli entry, `mcp hub NAME`). */
  hubLauncher?: HubLauncher;
  /**
   * How names and URIs appear to the client (core/mcp/naming.ts): `prefixedNaming` (default, `mcp serve`:
   * SERVER__NAME, tymcp://SERVER/URI) or `singleNaming(SERVER)` (`mcp proxy`: one server under its own
   * names; registered tools and namespaces are not offered).
   */
  naming?: Naming;
  /**
   * While a tools/call that carries a progress token waits at the gate (a question for a person), a
   * `notifications/progress` ("waiting for approval of SERVER/TOOL") goes out after `firstMs` and then
   * every `everyMs`, so a client that resets its timeout on progress keeps waiting (default 1 000 / 15 000).
   */
  waitingProgress?: { firstMs: number; everyMs: number };
  /** Test seam: how a server session starts. */
  startUpstream?: (def: McpDefinition, opts: UpstreamOptions, signal: AbortSignal) => Promise<UpstreamSession>;
}

/** What a guarded transport hands the bridge directly instead of to the session's SDK Server. */
export interface DirectPath {
  /** A client `tools/call` request that passed the message rules; false: give it to the SDK Server. */
  request(message: Record<string, unknown>): boolean;
  /** A client `notifications/cancelled`; false when it names no call on the direct path. */
  cancelled(params: unknown): boolean;
}

/**
 * The abort switch of one direct-path call: it makes a real AbortSignal only when one is asked for (making
 * one costs microseconds on every call, and the common call never needs it).
 */
class CallAbort implements CancelSignal {
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

/** Characters of a call's arguments (as one JSON line) handed to the gate as the question's preview. */
const PREVIEW_CHARS = 2000;

/** A call's arguments as one JSON line for the approval question (undefined when there are none). */
export function previewOf(args: unknown): string | undefined {
  if (args === undefined) return undefined;
  try {
    const s = JSON.stringify(args);
    return s === undefined || s === '{}' ? undefined : `arguments: ${s.slice(0, PREVIEW_CHARS)}`;
  } catch {
    return undefined;
  }
}

/** The trace scope of a server definition's own rule (audit `scope`, question "asked because"). */
export const SERVER_RULE_SCOPE = 'server definition';

/**
 * The definition's own rule that allows this request, as its trace text (`SERVER: --ask none`, `SERVER:
 * --allow TOOL`, `SERVER: --allow resources/read`), or undefined when none does.
 */
export function serverRule(def: McpDefinition, kind: GateRequest['kind'], name: string): string | undefined {
  if (def.ask === 'none') return `${def.name}: --ask none`;
  const allow = kind === 'mcp' ? name : kind === 'mcp-resource' ? 'resources/read' : kind === 'mcp-prompt' ? 'prompts/get' : undefined;
  return allow !== undefined && def.allow.includes(allow) ? `${def.name}: --allow ${allow}` : undefined;
}

/** A tools/call result with postToolUse feedback appended as text content (`[hook] ...`); as is without any. */
export function withFeedback(r: CallToolResult, feedback: readonly string[] | undefined): CallToolResult {
  if (!feedback?.length) return r;
  return { ...r, content: [...(r.content ?? []), ...feedback.map((f) => ({ type: 'text' as const, text: `[hook] ${f}` }))] };
}

/**
 * The revision identity of a bridged tool, prompt or resource for the gate (decisions, audit):
 * `mcp:SERVER:SERVER-FINGERPRINT16:sha256-DEFINITION-HASH` (core/mcp/definitions.ts definitionHash).
 */
export function definitionRevision(def: McpDefinition, hash: string): string {
  return `mcp:${def.name}:${fingerprint(def).slice(0, 16)}:sha256-${hash}`;
}

export { NAME_SEP };

/** A JSON-RPC error as the SDK Server sends it (`code`, `message` as is, `data`). */
export class RpcFailure extends Error {
  constructor(readonly code: number, message: string, readonly data: { code: string }) {
    super(message);
  }
}

/**
 * JSON-RPC codes (implementation-defined server errors, -32000..-32099) of a bridged server's own faults,
 * each distinct, and none the SDK's RequestTimeout (-32001) or ConnectionClosed (-32000): a server that
 * did not answer within its call timeout, one whose process exited, a session ended by a redefinition.
 */
export const SERVER_FAULT_CODES: Readonly<Record<string, number>> = { E_MCP_TIMEOUT: -32011, E_MCP_CRASHED: -32012, E_MCP_REDEFINED: -32013 };

/**
 * Map a refusal to the JSON-RPC error the client sees: -32602 for bad arguments or an unknown tool,
 * -32003 for E_BUSY, SERVER_FAULT_CODES for a server's faults, -32001 otherwise; `data.code` keeps the stable code. Errors from a server pass as they are.
 */
export function toMcpError(e: unknown): Error {
  if (e instanceof McpError || e instanceof RpcFailure) return e;
  const t = toTyError(e, 'E_MCP');
  const num = t.code === 'E_INVALID_ARGS' || t.code === 'E_UNKNOWN_TOOL' ? RPC.INVALID_PARAMS : (SERVER_FAULT_CODES[t.code] ?? (t.code === 'E_BUSY' ? -32003 : -32001));
  // core's messages are host-neutral; an MCP client's hint names the rule or setting, never a command line
  return new RpcFailure(num, clientMessage(t), { code: t.code });
}

/** `tycli mcp hub NAME` with the same runtime and entry as this process. */
export function defaultHubLauncher(home: string): HubLauncher {
  return (def) => ({ command: process.execPath, args: [...process.execArgv, process.argv[1] ?? '', '--home', home, 'mcp', 'hub', def.name] });
}

/** The server's hints for a tool, as shown in questions (they never skip asking). */
export function hintsOf(t: Tool): NonNullable<Question['hints']> {
  const a = t.annotations;
  const hints: NonNullable<Question['hints']> = {};
  if (typeof a?.readOnlyHint === 'boolean') hints.readOnlyHint = a.readOnlyHint;
  if (typeof a?.destructiveHint === 'boolean') hints.destructiveHint = a.destructiveHint;
  if (typeof a?.idempotentHint === 'boolean') hints.idempotentHint = a.idempotentHint;
  if (typeof a?.openWorldHint === 'boolean') hints.openWorldHint = a.openWorldHint;
  return hints;
}

/** `tymcp://SERVER/URI` <-> (server, uri) (core/mcp/naming.ts). */
export const wrapUri = (server: string, uri: string): string => prefixedNaming.uri(server, uri);
export const unwrapUri = (uri: string): { server: string; uri: string } | undefined => prefixedNaming.parseUri(uri);

/**
 * Holds the bounded pool of server sessions for one sandbox and makes one SDK Server per client
 * session. Every gated request reloads the server's definition (a removed server is refused; a changed one
 * ends older sessions), checks arguments against the tool's own schema (unlisted fields refused), then
 * runs it through the gate (`gate.run`: deny rules and the pause first, the definition's own rule only
 * replacing the question, hooks, audit).
 */
export class McpBridge {
  readonly pool: SessionPool<UpstreamSession>;
  private readonly naming: Naming;
  private readonly servers = new Map<string, Server>();
  /** Calls on the direct path in flight, per client session, by the client's request id. */
  private readonly direct = new Map<string, Map<RpcId, CallAbort>>();
  private seq = 0;
  private unwatch: (() => void) | undefined;

  constructor(private readonly opts: BridgeOptions) {
    this.pool = new SessionPool<UpstreamSession>(opts.limits);
    this.naming = opts.naming ?? prefixedNaming;
  }

  private log(server: string, method: string, name: string | undefined, outcome: string): void {
    this.opts.log?.(requestLogLine({ server, method, name, outcome }));
  }

  /** A new client session id. */
  newSessionId(): string {
    return `s${++this.seq}`;
  }

  /** The live upstream session (for tests and diagnostics). */
  private async withUpstream<T>(sessionId: string, def: McpDefinition, fn: (u: UpstreamSession) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const key = `${sessionId}\0${def.name}`;
    const server = this.servers.get(sessionId);
    const start = async (sig: AbortSignal): Promise<UpstreamSession> => {
      const uopts: UpstreamOptions = {
        onNotification: (method, params) => void this.forwardNotification(server, def.name, method, params),
        onFiltered: (w) => this.log(def.name, w.method ?? '(message)', undefined, w.action === 'answer' ? 'refused-server-request' : 'dropped'),
        onClose: () => void this.pool.end(key),
        onToolRefused: (tool, reason) => {
          const line = JSON.parse(requestLogLine({ server: def.name, method: 'tools/list', name: tool, outcome: 'hidden:unsupported-schema' })) as Record<string, string>;
          this.opts.log?.(JSON.stringify({ ...line, reason: reason.slice(0, 300) }));
        },
        hub: { home: this.opts.home, launcher: this.opts.hubLauncher ?? defaultHubLauncher(this.opts.home) },
      };
      return (this.opts.startUpstream ?? ((d, o, s) => UpstreamSession.start(d, o, s)))(def, uopts, sig);
    };
    return this.pool.use(key, fingerprint(def), start, fn, signal);
  }

  private async forwardNotification(server: Server | undefined, name: string, method: string, params: unknown): Promise<void> {
    if (!server) return;
    const p = (params ?? {}) as Record<string, unknown>;
    try {
      switch (method) {
        case 'notifications/tools/list_changed':
          return await server.sendToolListChanged();
        case 'notifications/prompts/list_changed':
          return await server.sendPromptListChanged();
        case 'notifications/resources/list_changed':
          return await server.sendResourceListChanged();
        case 'notifications/resources/updated':
          if (typeof p.uri === 'string') await server.sendResourceUpdated({ uri: this.naming.uri(name, p.uri) });
          return;
        case 'notifications/message': {
          // the server's own logger name is kept (under the server's name when several are offered)
          const own = typeof p.logger === 'string' ? p.logger.slice(0, 200) : undefined;
          const logger = this.naming.single !== undefined ? own : own !== undefined ? `${name}/${own}` : name;
          await server.notification({ method: 'notifications/message', params: { level: typeof p.level === 'string' ? p.level : 'info', ...(logger !== undefined ? { logger } : {}), data: p.data } });
          return;
        }
        default:
          return; // progress travels with its call; cancelled needs no relay
      }
    } catch {
      /* the client went away */
    }
  }

  /**
   * Load the definition named by a client request.
   * @throws TyError E_UNKNOWN_TOOL when there is none (removed servers are refused; their sessions end).
   */
  private async definition(sessionId: string, server: string): Promise<McpDefinition> {
    const def = await loadDefinition(this.opts.home, server);
    if (def === undefined) {
      await this.pool.end(`${sessionId}\0${server}`);
      throw new TyError('E_UNKNOWN_TOOL', `no MCP server "${server.slice(0, 40)}" is defined (it may have been removed)`);
    }
    return def;
  }

  /** Count one of the bridge's own refusals toward the pause (never a busy server, a pause or a cancelled call). */
  private async countRefusal(tool: string, code: string): Promise<void> {
    if (!this.opts.pause || code === 'E_PAUSED' || code === 'E_BUSY' || code === 'E_ABORTED' || code === 'E_MCP') return;
    await this.opts.pause.recordRefusal(tool).catch(() => undefined);
  }

  /**
   * The definition's rules: `--ask none`, or `--allow NAME` (a tool name, `resources/read` or `prompts/get`).
   * They only replace asking a person: with a gate, deny rules, alwaysAsk, the pause, hooks and the audit
   * still apply (see serverRule).
   */
  static allowedByRules(def: McpDefinition, kind: GateRequest['kind'], name: string): boolean {
    return serverRule(def, kind, name) !== undefined;
  }

  /**
   * Run `execute` (the forwarding of one request) through the gate, `gate.run`: pause, deny rules of every
   * scope, the definition's own rule as a `preapproved` allow (scope `server definition`; it replaces only
   * the asking step), else asking a person, then preToolUse hooks, `execute`, postToolUse hooks, the audit
   * record. Server hints go into the question and never skip asking. Without a gate (a library use; `tycli
   * mcp serve` always has one) only the definition's rule lets a request through, unaudited.
   * @returns the value and the postToolUse hooks' feedback.
   * @throws TyError E_APPROVAL_REQUIRED (no rule and no gate), or the gate's codes (E_CAPABILITY_DENIED,
   *   E_PAUSED, E_HOOK_BLOCKED, E_HOOK_FAILED, E_ABORTED), or what `execute` throws.
   */
  private async gated<T>(def: McpDefinition, kind: 'mcp' | 'mcp-resource' | 'mcp-prompt', name: string, what: { hints?: Question['hints']; preview?: string; input?: unknown; definition?: Record<string, unknown>; onWaiting?: (n: number) => void }, signal: AbortSignal, execute: () => Promise<T>): Promise<{ value: T; feedback?: string[] }> {
    const rule = serverRule(def, kind, name);
    const gate = this.opts.gate;
    if (!gate) {
      if (rule === undefined) throw new TyError('E_APPROVAL_REQUIRED', `no rule lets ${def.name}/${name} through and no one can be asked; the server definition's allow list ("${kind === 'mcp' ? name : kind === 'mcp-resource' ? 'resources/read' : 'prompts/get'}") or a permission rule would`);
      return { value: await execute() };
    }
    // the identity a decision is stored under covers what the person approved: the server definition and
    // the tool's (prompt's, resource's) own definition, hashed; any change makes it a new one (asked again)
    const dkind: DefinitionKind = kind === 'mcp' ? 'tool' : kind === 'mcp-prompt' ? 'prompt' : 'resource';
    const body = what.definition ?? (kind === 'mcp-resource' ? { uri: name } : { name });
    const hash = await definitionHash(dkind, body);
    const target = `${def.name}/${name}`;
    const req: GateRequest = {
      principal: `mcp:${this.opts.sandbox}`,
      kind,
      toolName: `${def.name}${NAME_SEP}${name}`,
      revision: definitionRevision(def, hash),
      target,
      requested: true,
    };
    const memory = this.opts.definitions;
    let changed: string[] = [];
    if (memory !== undefined) {
      const prev = await memory.get(dkind, target).catch(() => undefined);
      if (prev !== undefined && prev.hash !== hash) changed = describeChange(dkind, prev.snapshot, definitionSnapshot(dkind, body), { before: prev.hash, after: hash });
      const run = execute;
      execute = async () => {
        await memory.put({ target, kind: dkind, hash, snapshot: definitionSnapshot(dkind, body), at: Date.now() }).catch(() => undefined);
        return run();
      };
    }
    if (rule !== undefined) req.preapproved = { rule, scope: SERVER_RULE_SCOPE };
    if (what.hints !== undefined) req.hints = what.hints;
    if (what.input !== undefined) req.hookPayload = what.input;
    // what the person approves: the gate sanitizes it, withholds known secrets and cuts it for display
    const preview = [...changed, ...(what.preview !== undefined && what.preview.length > 0 ? [what.preview.slice(0, PREVIEW_CHARS)] : [])].join('\n');
    if (preview.length > 0) req.preview = preview;
    // progress while the gate decides (a question may wait minutes); it stops once the call is forwarded
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onWaiting = what.onWaiting;
    if (onWaiting !== undefined) {
      const { firstMs, everyMs } = this.opts.waitingProgress ?? { firstMs: 1000, everyMs: 15_000 };
      let n = 0;
      const tick = (): void => {
        onWaiting(++n);
        timer = setTimeout(tick, everyMs);
      };
      timer = setTimeout(tick, firstMs);
      const inner = execute;
      execute = () => {
        clearTimeout(timer);
        timer = undefined;
        return inner();
      };
    }
    try {
      return await gate.run(req, execute, signal);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
  }

  /**
   * One bridged tools/call: definition reloaded, tool looked up, arguments checked (before approval and
   * before forwarding), approved, then forwarded.
   */
  async callBridged(sessionId: string, server: string, tool: string, args: unknown, signal: AbortSignal, onprogress?: (p: { progress: number; total?: number; message?: string }) => void, loaded?: McpDefinition): Promise<CallToolResult> {
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
            if (why !== undefined) throw new TyError('E_INVALID_ARGS', `${offered} is not offered: its schema ${why.slice(0, 300)}`);
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
          const onWaiting = onprogress === undefined ? undefined : (n: number) => onprogress({ progress: n, message: `waiting for approval of ${server}/${tool.slice(0, 80)}` });
          const r = await this.gated(def, 'mcp', tool, { hints: hintsOf(t), preview: previewOf(checked.args), input: { arguments: checked.args }, definition: t as Record<string, unknown>, ...(onWaiting ? { onWaiting } : {}) }, signal, () => {
            outcome = 'forwarded';
            return u.callTool(tool, checked.args, onprogress ? { signal, onprogress } : { signal });
          });
          return mapToolResult(withFeedback(r.value, r.feedback), server, this.naming);
        },
        signal,
      );
      if (outcome === 'refused' || outcome === 'forwarded') outcome = result.isError ? 'tool-error' : 'ok';
      return result;
    } catch (e) {
      if (outcome === 'refused') {
        const code = toTyError(e, 'E_MCP').code;
        outcome = `refused:${code}`;
        if (!byGate) await this.countRefusal(offered, code);
      } else outcome = 'failed';
      throw e;
    } finally {
      this.log(server, 'tools/call', tool, outcome);
    }
  }

  /**
   * One namespace call: the namespace and every chosen provider's definition are reloaded (a removed one is
   * refused); `kind` picks the target (or every target of a broadcast read); the other fields are checked
   * against each chosen target's own schema before any approval or forwarding; each target is approved by
   * its own server's rules or the gate; a broadcast's results are joined under each kind.
   */
  async callNamespace(sessionId: string, nsName: string, actionName: string, args: unknown, signal: AbortSignal): Promise<CallToolResult> {
    let outcome = 'refused';
    let byGate = false;
    const offered = `${nsName}${NAME_SEP}${actionName}`;
    try {
      await this.opts.pause?.check(offered);
      const ns = await loadNamespace(this.opts.home, nsName);
      if (ns === undefined) throw new TyError('E_UNKNOWN_TOOL', `no MCP namespace "${nsName}"`);
      const action = ns.actions.find((a) => a.name === actionName);
      if (action === undefined) throw new TyError('E_UNKNOWN_TOOL', `namespace "${nsName}" has no action "${actionName.slice(0, 80)}"`);
      const choice = chooseTargets(action, args);
      if (!choice.ok) {
        outcome = 'refused:E_INVALID_ARGS';
        await this.countRefusal(offered, 'E_INVALID_ARGS');
        return toolErrorResult('E_INVALID_ARGS', `${nsName}${NAME_SEP}${actionName}: ${choice.message}`);
      }
      // 1. every chosen provider exists and the arguments fit each one's own schema: nothing asked or sent yet
      const plans: { kind: string; def: McpDefinition; tool: string; args: Record<string, unknown>; hints: Question['hints']; definition: Record<string, unknown> }[] = [];
      for (const t of choice.targets) {
        const def = await loadDefinition(this.opts.home, t.server);
        if (def === undefined) throw new TyError('E_UNKNOWN_TOOL', `provider "${t.server}" of ${nsName}${NAME_SEP}${actionName} (kind ${t.kind}) was removed`);
        const tool = await this.withUpstream(sessionId, def, async (u) => (await u.tools(signal)).get(t.tool), signal);
        if (tool === undefined) throw new TyError('E_UNKNOWN_TOOL', `provider "${t.server}" has no tool "${t.tool}" (kind ${t.kind})`);
        const checked = checkToolArguments(tool.inputSchema, choice.args);
        if (!checked.ok) {
          outcome = 'refused:E_INVALID_ARGS';
          await this.countRefusal(offered, 'E_INVALID_ARGS');
          return toolErrorResult('E_INVALID_ARGS', `${nsName}${NAME_SEP}${actionName} (kind ${t.kind}): ${checked.message}`);
        }
        plans.push({ kind: t.kind, def, tool: t.tool, args: checked.args, hints: hintsOf(tool), definition: tool as Record<string, unknown> });
      }
      // 2. each target through the gate (its own server's rule, else a person; pre-hooks) and only when every
      // one passed, 3. forward them all: target i's gated step runs the steps of targets i+1.. inside it
      const results: { kind: string; result: CallToolResult }[] = [];
      const feedback: string[] = [];
      const step = async (i: number): Promise<void> => {
        const p = plans[i];
        if (p === undefined) {
          outcome = 'forwarded';
          for (const q of plans) results.push({ kind: q.kind, result: await this.withUpstream(sessionId, q.def, (u) => u.callTool(q.tool, q.args, { signal }), signal) });
          return;
        }
        const r = await this.gated(p.def, 'mcp', p.tool, { hints: p.hints, preview: previewOf(p.args), input: { arguments: p.args }, definition: p.definition }, signal, async () => {
          await step(i + 1);
          return results[i]!.result;
        });
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
        structured[r.kind] = r.result.structuredContent ?? { content: r.result.content, isError: r.result.isError === true };
      }
      return withFeedback({ content, structuredContent: { results: structured }, isError: results.every((r) => r.result.isError === true) }, feedback);
    } catch (e) {
      if (outcome === 'refused') {
        const code = toTyError(e, 'E_MCP').code;
        outcome = `refused:${code}`;
        if (!byGate) await this.countRefusal(offered, code);
      } else outcome = 'failed';
      throw e;
    } finally {
      this.log(nsName, 'tools/call', actionName, outcome);
    }
  }

  /** The offered tools of every namespace (a namespace named like a server is skipped). */
  private async namespaceTools(sessionId: string, servers: Set<string>, signal: AbortSignal): Promise<Tool[]> {
    const out: Tool[] = [];
    for (const n of await listNamespaces(this.opts.home)) {
      if (servers.has(n)) {
        this.log(n, 'tools/list', undefined, 'skipped:namespace-named-like-a-server');
        continue;
      }
      try {
        const ns = await loadNamespace(this.opts.home, n);
        if (!ns) continue;
        for (const a of ns.actions) out.push(await this.actionTool(sessionId, n, a, signal));
      } catch (e) {
        this.log(n, 'tools/list', undefined, `failed:${toTyError(e, 'E_MCP').code}`);
      }
    }
    return out;
  }

  private async actionTool(sessionId: string, ns: string, a: NamespaceAction, signal: AbortSignal): Promise<Tool> {
    const schemas = new Map<string, unknown>();
    for (const t of a.targets) {
      const def = await loadDefinition(this.opts.home, t.server).catch(() => undefined);
      if (!def) continue;
      const tool = await this.withUpstream(sessionId, def, async (u) => (await u.tools(signal)).get(t.tool), signal).catch(() => undefined);
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

  /** Build the SDK Server for one client session. Connect it to a guarded transport (see node/mcp/serve.ts). */
  createServer(sessionId: string): Server {
    const server = new Server(
      { name: 'tysandbox', version: '0.1.0' },
      { capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true, subscribe: true }, logging: {}, completions: {} } },
    );
    this.servers.set(sessionId, server);
    // a server added, removed or defined again changes what every client session can list
    this.unwatch ??= watchDefinitions(this.opts.home, () => void this.listsChanged(), this.naming.single !== undefined ? { only: this.naming.single } : {});
    const defs = async (): Promise<McpDefinition[]> => {
      const out: McpDefinition[] = [];
      const single = this.naming.single;
      for (const n of single !== undefined ? [single] : await listDefinitions(this.opts.home)) {
        try {
          const d = await loadDefinition(this.opts.home, n);
          if (d) out.push(d);
        } catch (e) {
          this.log(n, 'load', undefined, `refused:${toTyError(e, 'E_INVALID_SETTINGS').code}`);
        }
      }
      return out;
    };
    const eachServer = async <T>(method: string, signal: AbortSignal, fn: (d: McpDefinition, u: UpstreamSession) => Promise<T[]>): Promise<T[]> => {
      const all: T[] = [];
      for (const d of await defs()) {
        try {
          all.push(...(await this.withUpstream(sessionId, d, (u) => fn(d, u), signal)));
          this.log(d.name, method, undefined, 'ok');
        } catch (e) {
          this.log(d.name, method, undefined, `failed:${toTyError(e, 'E_MCP').code}`);
          // one server behind a proxy: its failure is the answer; several: the others still list
          if (this.naming.single !== undefined) throw toMcpError(e);
        }
      }
      return all;
    };
    const ctx: RouteContext = {
      naming: this.naming,
      defs,
      definition: (name) => this.definition(sessionId, name),
      withUpstream: (def, fn, signal) => this.withUpstream(sessionId, def, fn, signal),
      log: (s, m, n, o) => this.log(s, m, n, o),
      toMcpError,
    };
    relayInstructions(server, ctx);
    installRouted(server, ctx);

    server.setRequestHandler(ListToolsRequestSchema, async (_req, extra) => {
      const bridged = await eachServer('tools/list', extra.signal, async (d, u) => [...(await u.tools(extra.signal)).values()].map((t) => ({ ...t, name: this.naming.name(d.name, t.name) }) as Tool));
      if (this.naming.single !== undefined) return { tools: bridged };
      const names = new Set(await listDefinitions(this.opts.home));
      const spaces = await this.namespaceTools(sessionId, names, extra.signal);
      // `SERVER__TOOL` names belong to bridged servers and namespaces: a registered tool named with `__` is
      // never offered (whether or not such a server exists now), so a name always means one thing
      const local = this.opts.local
        ? (await this.opts.local.list()).filter((t) => {
            if (!t.name.includes(NAME_SEP)) return true;
            this.log('local', 'tools/list', t.name, 'hidden:name-has-separator');
            return false;
          })
        : [];
      return { tools: [...local, ...bridged, ...spaces] };
    });

    server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
      const name = req.params.name;
      const split = this.naming.parseName(name);
      let def: McpDefinition | undefined;
      let known = false;
      if (split !== undefined) {
        try {
          def = loadDefinitionSync(this.opts.home, split.server);
          known = def !== undefined;
        } catch {
          known = true; // refused inside callBridged with its stable code
        }
      }
      // a removed server: its sessions in this client session end too
      if (split !== undefined && !known) await this.pool.end(`${sessionId}\0${split.server}`);
      if (this.naming.single !== undefined && !known) throw toMcpError(new TyError('E_UNKNOWN_TOOL', `no MCP server "${split?.server.slice(0, 40)}" is defined (it may have been removed)`));
      try {
        if (split !== undefined && known) {
          const token = extra._meta?.progressToken;
          // progress is relayed in order, and all of it before the result
          let relayed: Promise<void> = Promise.resolve();
          const onprogress =
            token === undefined
              ? undefined
              : (p: { progress: number; total?: number; message?: string }) => {
                  relayed = relayed.then(() => extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, ...p } })).catch(() => undefined);
                };
          const result = await this.callBridged(sessionId, split.server, split.rest, req.params.arguments, extra.signal, onprogress, def);
          await relayed;
          return result;
        }
        if (split !== undefined && (await loadNamespace(this.opts.home, split.server).catch(() => undefined)) !== undefined) {
          return await this.callNamespace(sessionId, split.server, split.rest, req.params.arguments, extra.signal);
        }
        if (this.opts.local && name.includes(NAME_SEP)) {
          this.log('local', 'tools/call', name, 'refused:E_UNKNOWN_TOOL');
          throw new TyError('E_UNKNOWN_TOOL', `no tool "${name.slice(0, 80)}": names with "${NAME_SEP}" are SERVER${NAME_SEP}TOOL (no such server or namespace); registered tools named with "${NAME_SEP}" are not offered over MCP, rename the tool`);
        }
        if (this.opts.local) {
          const args = req.params.arguments ?? {};
          try {
            const r = await this.opts.local.call(name, args, extra.signal);
            this.log('local', 'tools/call', name, r.isError ? 'tool-error' : 'ok');
            return r;
          } catch (e) {
            const t = toTyError(e, 'E_MCP');
            if (TOOL_EXECUTION_CODES.has(t.code)) {
              this.log('local', 'tools/call', name, `tool-error:${t.code}`);
              return toolErrorResult(t.code, clientMessage(t));
            }
            this.log('local', 'tools/call', name, `refused:${t.code}`);
            throw e;
          }
        }
        this.log(split?.server ?? 'local', 'tools/call', name, 'refused:E_UNKNOWN_TOOL');
        throw new TyError('E_UNKNOWN_TOOL', `no tool "${name.slice(0, 80)}"`);
      } catch (e) {
        throw toMcpError(e);
      }
    });

    server.setRequestHandler(ListPromptsRequestSchema, async (_req, extra) => ({
      // every page of every server (bounded in UpstreamSession.allPages), so nothing is dropped
      prompts: await eachServer('prompts/list', extra.signal, async (d, u) => (await u.allPrompts(extra.signal)).map((p) => ({ ...p, name: this.naming.name(d.name, String(p.name)) }) as Prompt)),
    }));

    server.setRequestHandler(GetPromptRequestSchema, async (req, extra) => {
      const split = this.naming.parseName(req.params.name);
      if (!split) throw new RpcFailure(RPC.INVALID_PARAMS, 'prompt names are SERVER__PROMPT', { code: 'E_UNKNOWN_TOOL' });
      let outcome = 'refused';
      try {
        const def = await this.definition(sessionId, split.server);
        // postToolUse feedback has no place in a prompt result: the hooks run, their output is not sent
        const definition = await this.withUpstream(sessionId, def, (u) => u.promptDefinition(split.rest, extra.signal), extra.signal).catch(() => undefined);
        const { value: r } = await this.gated(def, 'mcp-prompt', split.rest, { preview: previewOf(req.params.arguments), input: { arguments: req.params.arguments ?? {} }, ...(definition ? { definition } : {}) }, extra.signal, () => {
          outcome = 'forwarded';
          return this.withUpstream(sessionId, def, (u) => u.getPrompt(split.rest, req.params.arguments, extra.signal), extra.signal);
        });
        outcome = 'ok';
        return mapPromptResult(r, split.server, this.naming);
      } catch (e) {
        if (outcome === 'refused') outcome = `refused:${toTyError(e, 'E_MCP').code}`;
        throw toMcpError(e);
      } finally {
        this.log(split.server, 'prompts/get', split.rest, outcome);
      }
    });

    server.setRequestHandler(ListResourcesRequestSchema, async (_req, extra) => ({
      resources: await eachServer('resources/list', extra.signal, async (d, u) => (await u.allResources(extra.signal)).map((r) => ({ ...r, uri: this.naming.uri(d.name, String(r.uri)) }) as Resource)),
    }));

    server.setRequestHandler(ListResourceTemplatesRequestSchema, async (_req, extra) => ({
      // a template's URI is mapped like a resource's: filled in by the client, it reads back through the bridge
      resourceTemplates: await eachServer('resources/templates/list', extra.signal, async (d, u) =>
        (await u.allTemplates(extra.signal)).map((t) => ({ ...t, name: this.naming.single !== undefined ? t.name : this.naming.name(d.name, String(t.name)), uriTemplate: this.naming.uri(d.name, String(t.uriTemplate)) }) as ResourceTemplate),
      ),
    }));

    server.setRequestHandler(ReadResourceRequestSchema, async (req, extra) => {
      const w = this.naming.parseUri(req.params.uri);
      if (!w) throw new RpcFailure(RPC.INVALID_PARAMS, 'resource URIs are the tymcp: ones the bridge listed', { code: 'E_UNKNOWN_TOOL' });
      let outcome = 'refused';
      try {
        const def = await this.definition(sessionId, w.server);
        // postToolUse feedback has no place in a resource result: the hooks run, their output is not sent
        const definition = await this.withUpstream(sessionId, def, (u) => u.resourceDefinition(w.uri, extra.signal), extra.signal).catch(() => undefined);
        const { value: r } = await this.gated(def, 'mcp-resource', w.uri, { preview: `uri: ${w.uri.slice(0, PREVIEW_CHARS)}`, input: { uri: w.uri }, ...(definition ? { definition } : {}) }, extra.signal, () => {
          outcome = 'forwarded';
          return this.withUpstream(sessionId, def, (u) => u.readResource(w.uri, extra.signal), extra.signal);
        });
        outcome = 'ok';
        return { ...r, contents: r.contents.map((c) => ({ ...c, uri: this.naming.uri(w.server, c.uri) })) };
      } catch (e) {
        if (outcome === 'refused') outcome = `refused:${toTyError(e, 'E_MCP').code}`;
        throw toMcpError(e);
      } finally {
        this.log(w.server, 'resources/read', undefined, outcome);
      }
    });

    return server;
  }

  /**
   * The direct path of one client session (see node/mcp/serve.ts): a `tools/call` for a defined server is
   * run by callBridged itself (the definition loaded once, the tool looked up, arguments checked against
   * its schema, the rules or the gate asked, the call forwarded) and answered on `reply`, without the SDK
   * Server's and Client's schema passes; callBridged and UpstreamSession.callTool apply the same checks.
   * Anything else (a namespace, a registered tool, an unknown or undefined server, params the structural
   * check of toolCallParams does not take) returns false and goes to the session's SDK Server.
   */
  directPath(sessionId: string, reply: (message: unknown) => void): DirectPath {
    return {
      request: (message) => this.directToolCall(sessionId, message, reply),
      cancelled: (params) => {
        const id = (params as { requestId?: unknown } | undefined)?.requestId;
        const ac = typeof id === 'string' || typeof id === 'number' ? this.direct.get(sessionId)?.get(id) : undefined;
        if (ac === undefined) return false;
        ac.abort();
        return true;
      },
    };
  }

  private directToolCall(sessionId: string, message: Record<string, unknown>, reply: (message: unknown) => void): boolean {
    const id = message.id;
    if (typeof id !== 'string' && typeof id !== 'number') return false;
    if (!this.servers.has(sessionId)) return false;
    const p = toolCallParams(message.params);
    const split = p === undefined ? undefined : this.naming.parseName(p.name);
    if (p === undefined || split === undefined) return false;
    let def: McpDefinition | undefined;
    try {
      def = loadDefinitionSync(this.opts.home, split.server);
    } catch {
      return false; // the SDK path refuses it with its stable code
    }
    if (def === undefined) return false;
    let calls = this.direct.get(sessionId);
    if (calls === undefined) this.direct.set(sessionId, (calls = new Map()));
    if (calls.has(id)) return false;
    const ac = new CallAbort();
    calls.set(id, ac);
    const token = p.progressToken;
    // written at once, in arrival order, so all of a call's progress goes out before its result
    const onprogress =
      token === undefined ? undefined : (pr: { progress: number; total?: number; message?: string }) => void (ac.aborted || reply({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, ...pr } }));
    (this.forwardAtOnce(sessionId, def, split.rest, p.arguments, ac, onprogress) ?? this.callBridged(sessionId, split.server, split.rest, p.arguments, ac.signal, onprogress, def)).then(
      (result) => {
        calls.delete(id);
        // a cancelled request gets no response (MCP cancellation)
        if (!ac.aborted) reply({ jsonrpc: '2.0', id, result });
      },
      (e: unknown) => {
        calls.delete(id);
        if (ac.aborted) return;
        // the JSON-RPC error the SDK Server would send for the same throw
        const err = toMcpError(e) as Error & { code?: unknown; data?: unknown };
        const code = typeof err.code === 'number' && Number.isSafeInteger(err.code) ? err.code : RPC.INTERNAL_ERROR;
        reply({ jsonrpc: '2.0', id, error: err.data === undefined ? { code, message: err.message } : { code, message: err.message, data: err.data } });
      },
    );
    return true;
  }

  /**
   * callBridged's checks when each can be made at once: no pause tracker, a ready session whose definition
   * fingerprint is `def`'s, the tool in its cached list, arguments that pass the tool's schema, a rule of
   * `def` (loaded for this request) that allows the call; then the call is forwarded and logged as
   * callBridged logs it. Undefined whenever any check cannot pass at once: callBridged then decides, asks
   * or refuses (so every refusal, question and count stays in one place).
   */
  private forwardAtOnce(sessionId: string, def: McpDefinition, tool: string, args: unknown, signal: CancelSignal, onprogress?: (p: { progress: number; total?: number; message?: string }) => void): Promise<CallToolResult> | undefined {
    // with a gate every call goes through gate.run in callBridged (pause, deny rules, hooks, audit)
    if (this.opts.gate !== undefined || this.opts.pause !== undefined || !McpBridge.allowedByRules(def, 'mcp', tool)) return undefined;
    const held = this.pool.tryHold(`${sessionId}\0${def.name}`, fingerprint(def));
    if (held === undefined) return undefined;
    const u = held.session;
    const t = u.alive ? u.cachedTool(tool) : undefined;
    const checked = t === undefined ? undefined : checkToolArguments(t.inputSchema, args);
    if (checked === undefined || !checked.ok) {
      held.release();
      return undefined;
    }
    const server = def.name;
    return u.callTool(tool, checked.args, onprogress ? { signal, onprogress } : { signal }).then(
      (r) => {
        held.release();
        this.log(server, 'tools/call', tool, r.isError ? 'tool-error' : 'ok');
        return mapToolResult(r, server, this.naming);
      },
      (e: unknown) => {
        held.release();
        this.log(server, 'tools/call', tool, 'failed');
        throw e;
      },
    );
  }

  /** The client session ended: its server sessions stop (a start still running is cancelled). */
  async closeSession(sessionId: string): Promise<void> {
    const s = this.servers.get(sessionId);
    this.servers.delete(sessionId);
    for (const ac of this.direct.get(sessionId)?.values() ?? []) ac.abort();
    this.direct.delete(sessionId);
    await this.pool.endPrefix(`${sessionId}\0`);
    await s?.close().catch(() => undefined);
  }

  /** Tell every client session that the tool, prompt and resource lists changed (MCP listChanged). */
  private async listsChanged(): Promise<void> {
    for (const s of [...this.servers.values()]) {
      await s.sendToolListChanged().catch(() => undefined);
      await s.sendPromptListChanged().catch(() => undefined);
      await s.sendResourceListChanged().catch(() => undefined);
    }
  }

  /** Stop every session and server. */
  async close(): Promise<void> {
    this.unwatch?.();
    this.unwatch = undefined;
    await Promise.all([...this.servers.keys()].map((k) => this.closeSession(k)));
    await this.pool.closeAll();
  }
}
