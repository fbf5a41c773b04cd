// The MCP bridge's foundation: options, the pool of upstream sessions, notification relay, request log and the gate
// step every bridged request takes; core, trusted side.
import type { Server } from '@modelcontextprotocol/server';
import type { Gate, GateRequest, Question } from '../../exec/runtime.js';
import { TyError } from '../../errors.js';
import { NAME_SEP, prefixedNaming, type Naming } from './naming.js';
import {
  definitionHash,
  definitionSnapshot,
  describeChange,
  type DefinitionKind,
  type DefinitionMemory,
} from './definitions.js';
import { requestLogLine, type RpcId } from '../wire/messages.js';
import { SessionPool, type PoolLimits } from '../upstream/pool.js';
import type { McpDefinition, McpDefinitionSource, UpstreamConnector } from '../server-definition.js';
import { UpstreamSession, type UpstreamOptions } from '../upstream/session.js';
import type { Elicitor } from '../input/elicit.js';
import { elicitOptions } from '../input/elicit-hook.js';
import type { Suspension } from '../input/suspend.js';
import {
  PREVIEW_CHARS,
  SERVER_RULE_SCOPE,
  definitionRevision,
  serverRule,
  toMcpError,
  type CallAbort,
  type LocalTools,
} from './util.js';
import type { ClientHint } from './results.js';

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
 * What every part of the bridge shares: the bounded pool of upstream sessions for one sandbox (keyed by client
 * session and server), the client sessions' SDK Servers, the request log, and `gated`, the one gate step.
 */
export class BridgeBase {
  readonly pool: SessionPool<UpstreamSession>;
  protected readonly naming: Naming;
  protected readonly servers = new Map<string, Server>();
  /** Calls on the direct path in flight, per client session, by the client's request id. */
  protected readonly direct = new Map<string, Map<RpcId, CallAbort>>();
  protected seq = 0;
  /** A refusal as the JSON-RPC error the client sees, with the host's hint (bridge-util.ts toMcpError). */
  protected mcpError(e: unknown): Error {
    return toMcpError(e, this.opts.hint);
  }
  /** 2025-era servers' calls held open while their elicitations are relayed to a 2026-07-28 client, by id. */
  protected readonly suspensions = new Map<string, Suspension>();
  protected unwatch: (() => void) | undefined;

  constructor(protected readonly opts: BridgeOptions) {
    this.pool = new SessionPool<UpstreamSession>(opts.limits);
    this.naming = opts.naming ?? prefixedNaming;
  }

  protected log(server: string, method: string, name: string | undefined, outcome: string): void {
    this.opts.log?.(requestLogLine({ server, method, name, outcome }));
  }

  /** A new client session id. */
  newSessionId(): string {
    return `s${++this.seq}`;
  }

  /** The live upstream session (for tests and diagnostics). */
  protected async withUpstream<T>(
    sessionId: string,
    def: McpDefinition,
    fn: (u: UpstreamSession) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    const key = `${sessionId}\0${def.name}`;
    const server = this.servers.get(sessionId);
    const start = async (sig: AbortSignal): Promise<UpstreamSession> => {
      const uopts: UpstreamOptions = {
        onNotification: (method, params) => void this.forwardNotification(server, def.name, method, params, sessionId),
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
   * Where a stateless (2026-07-28 over HTTP) client session's change notifications go: the serving entry's
   * `subscriptions/listen` streams (the SDK handler's `notify`), as its per-request Servers have no channel of their
   * own.
   */
  setListenNotifier(sessionId: string, notify: ListenNotifier): void {
    this.notifiers.set(sessionId, notify);
  }
  protected readonly notifiers = new Map<string, ListenNotifier>();

  protected async forwardNotification(
    server: Server | undefined,
    name: string,
    method: string,
    params: unknown,
    sessionId?: string,
  ): Promise<void> {
    const p = (params ?? {}) as Record<string, unknown>;
    const notify = sessionId === undefined ? undefined : this.notifiers.get(sessionId);
    if (notify !== undefined) {
      // list changes and resource updates only: a stateless client has no stream for anything else
      if (method === 'notifications/tools/list_changed') notify.toolsChanged();
      else if (method === 'notifications/prompts/list_changed') notify.promptsChanged();
      else if (method === 'notifications/resources/list_changed') notify.resourcesChanged();
      else if (method === 'notifications/resources/updated' && typeof p.uri === 'string')
        notify.resourceUpdated(this.naming.uri(name, p.uri));
      return;
    }
    if (!server) return;
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
          await server.notification({
            method: 'notifications/message',
            params: {
              level: typeof p.level === 'string' ? p.level : 'info',
              ...(logger !== undefined ? { logger } : {}),
              data: p.data,
            },
          });
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
  protected async definition(sessionId: string, server: string): Promise<McpDefinition> {
    const def = await this.opts.source.load(server);
    if (def === undefined) {
      await this.pool.end(`${sessionId}\0${server}`);
      throw new TyError(
        'E_UNKNOWN_TOOL',
        `no MCP server "${server.slice(0, 40)}" is defined (it may have been removed)`,
      );
    }
    return def;
  }

  /** Count one of the bridge's own refusals toward the pause (never a busy server, a pause or a cancelled call). */
  protected async countRefusal(tool: string, code: string): Promise<void> {
    if (!this.opts.pause || code === 'E_PAUSED' || code === 'E_BUSY' || code === 'E_ABORTED' || code === 'E_MCP')
      return;
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
   * record. Server hints go into the question and never skip asking. Without a gate (a library use; a host's
   * served bridge always has one) only the definition's rule lets a request through, unaudited.
   * @returns the value and the postToolUse hooks' feedback.
   * @throws TyError E_APPROVAL_REQUIRED (no rule and no gate), or the gate's codes (E_CAPABILITY_DENIED,
   *   E_PAUSED, E_HOOK_BLOCKED, E_HOOK_FAILED, E_ABORTED), or what `execute` throws.
   */
  protected async gated<T>(
    def: McpDefinition,
    kind: 'mcp' | 'mcp-resource' | 'mcp-prompt',
    name: string,
    what: {
      hints?: Question['hints'];
      preview?: string;
      input?: unknown;
      definition?: Record<string, unknown>;
      onWaiting?: (n: number) => void;
    },
    signal: AbortSignal,
    execute: () => Promise<T>,
  ): Promise<{ value: T; feedback?: string[] }> {
    const rule = serverRule(def, kind, name);
    const gate = this.opts.gate;
    if (!gate) {
      if (rule === undefined)
        throw new TyError(
          'E_APPROVAL_REQUIRED',
          `no rule lets ${def.name}/${name} through and no one can be asked; the server definition's allow ` +
            `list ("${kind === 'mcp' ? name : kind === 'mcp-resource' ? 'resources/read' : 'prompts/get'}") ` +
            `or a permission rule would`,
        );
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
      revision: definitionRevision(def, this.opts.source.fingerprint(def), hash),
      target,
      requested: true,
    };
    const memory = this.opts.definitions;
    let changed: string[] = [];
    if (memory !== undefined) {
      const prev = await memory.get(dkind, target).catch(() => undefined);
      if (prev !== undefined && prev.hash !== hash)
        changed = describeChange(dkind, prev.snapshot, definitionSnapshot(dkind, body), {
          before: prev.hash,
          after: hash,
        });
      // remembered once per new hash (the snapshot is built only then, not on every call)
      if (prev?.hash !== hash) {
        const run = execute;
        execute = async () => {
          await memory
            .put({ target, kind: dkind, hash, snapshot: definitionSnapshot(dkind, body), at: Date.now() })
            .catch(() => undefined);
          return run();
        };
      }
    }
    if (rule !== undefined) req.preapproved = { rule, scope: SERVER_RULE_SCOPE };
    if (what.hints !== undefined) req.hints = what.hints;
    if (what.input !== undefined) req.hookPayload = what.input;
    // what the person approves: the gate sanitizes it, withholds known secrets and cuts it for display
    const preview = [
      ...changed,
      ...(what.preview !== undefined && what.preview.length > 0 ? [what.preview.slice(0, PREVIEW_CHARS)] : []),
    ].join('\n');
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
}
