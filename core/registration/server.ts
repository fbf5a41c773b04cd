// The registration protocol's handler (tysandbox/1): one session per connection, every method gated and audited under
// the client's principal; core, trusted side.
import type { z } from 'zod';
import {
  CANCEL_METHOD,
  CancelParamsSchema,
  LOG_METHOD,
  PROGRESS_METHOD,
  REGISTRATION_METHODS,
  REGISTRATION_PARAMS,
  REGISTRATION_PROTOCOL,
  SUPPORTED_PROTOCOLS,
  type InitializeParams,
  type ProtocolLimits,
  type RegistrationMethod,
  type RpcId,
  type ToolListResult,
} from '../../protocol/registration.js';
import { TyError, toTyError } from '../errors.js';
import { revisionId, type ToolRegistry } from '../revisions/registry.js';
import { parseManifest } from '../manifest/parse.js';
import type { Gate, GateRequest } from '../exec/runtime.js';
import type { InvokeResult } from '../exec/invoke.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import type { RefusalCounter } from '../audit/refusals.js';
import { RegistrationRate, type RateCounter } from './limits.js';
import {
  classifyInbound,
  rpcFailure,
  rpcFromTyError,
  RPC_CODES,
  MAX_PROTOCOL_MESSAGE_BYTES,
  type RpcMessage,
} from './rpc.js';

/** A registry action as the gate sees it (`GateRequest.target` of kind `registry`). */
export type RegistryAction = 'connect' | 'add' | 'activate' | 'remove' | 'read';

/** Runs one tool call for a session (the host's Invoker, with the session's principal). */
export type ProtocolRunner = (
  ref: string,
  args: unknown,
  opts: { principal: string; signal: AbortSignal; timeoutMs?: number; disposable?: boolean },
) => Promise<InvokeResult>;

export interface RegistrationServerOptions {
  registry: ToolRegistry;
  /** The host's gate: registry actions are authorized (and audited) through it. */
  gate: Gate;
  /** Runs `tool/run` calls (they pass the same gate as `kind: "tool"`). */
  run: ProtocolRunner;
  /** Overrides of DEFAULT_PROTOCOL_LIMITS. */
  limits?: Partial<ProtocolLimits>;
  /** ms since the epoch; injected for tests. */
  clock?: () => number;
  /** A host's own check of a valid manifest before anything is stored (throw TyError E_INVALID_MANIFEST to refuse). */
  checkManifest?: (manifest: ToolManifest, principal: string) => void;
  /**
   * The per-principal registration rate; default one in this process's memory (RegistrationRate). A team gateway
   * gives a StoreRate, so the budget is shared by every instance.
   */
  rate?: RateCounter;
  /**
   * Names of tools the host itself offers (built-ins): a client may not register a revision under them, nor under a
   * name equal to one of them ignoring case (tool names are ASCII: `toLowerCase` folds them).
   */
  reservedNames?: () => Iterable<string>;
  /**
   * Counts the admission refusals (E_BUSY: the registration rate, runs in flight on a connection) for the audit, in
   * aggregate per principal and second (core/audit/refusals.ts RefusalTally).
   */
  refusals?: RefusalCounter;
}

/**
 * Defaults: 8 MiB messages, 60 registrations per principal per minute, 16 runs in flight per connection, 10 min runs.
 */
export const DEFAULT_PROTOCOL_LIMITS: ProtocolLimits = {
  maxMessageBytes: MAX_PROTOCOL_MESSAGE_BYTES,
  registrationsPerWindow: 60,
  registrationWindowMs: 60_000,
  maxConcurrentRuns: 16,
  maxTimeoutMs: 600_000,
};

/** Where a session's messages go: the reply sink of the inbound message, or the connection's own. */
export type MessageSink = (m: RpcMessage) => void;

export interface SessionOptions {
  /** The principal for a client, fixed by the transport: `protocol:<name>` (CLI) or `origin:<origin>` (browser). */
  principal: (client: InitializeParams['client']) => string;
  /** Messages not tied to one inbound message (server-to-client requests). */
  send: MessageSink;
}

interface Run {
  id: RpcId;
  revision?: string;
  ac: AbortController;
  sink: MessageSink;
  seq: number;
}

/**
 * The protocol server of one host: holds the shared per-principal registration rate and routes tool
 * console output to the run it belongs to. Each connection gets a {@link ProtocolSession}.
 */
export class RegistrationServer {
  readonly limits: ProtocolLimits;
  readonly rate: RateCounter;
  readonly #sessions = new Set<ProtocolSession>();
  #seq = 0;

  constructor(readonly opts: RegistrationServerOptions) {
    this.limits = { ...DEFAULT_PROTOCOL_LIMITS, ...opts.limits };
    this.rate =
      opts.rate ??
      new RegistrationRate(this.limits.registrationsPerWindow, this.limits.registrationWindowMs, opts.clock);
  }

  /** A new session for one connection. */
  connect(opts: SessionOptions): ProtocolSession {
    const s = new ProtocolSession(this, opts, () => this.#sessions.delete(s));
    this.#sessions.add(s);
    return s;
  }

  /** @internal next run sequence number (orders runs across sessions). */
  nextSeq(): number {
    return ++this.#seq;
  }

  /**
   * What tool code wrote with console.* (revision, level, text), as a `$/log` notification to the run it
   * belongs to: the earliest-started run of that revision still in flight (a retained sandbox runs one call at
   * a time; with concurrent disposable runs of one revision the earliest is chosen). Dropped when none runs.
   */
  toolLog(revision: string, level: 'debug' | 'info' | 'warn' | 'error', text: string): void {
    let best: Run | undefined;
    for (const s of this.#sessions)
      for (const r of s.runs()) if (r.revision === revision && (!best || r.seq < best.seq)) best = r;
    best?.sink({ jsonrpc: '2.0', method: LOG_METHOD, params: { id: best.id, level, text: text.slice(0, 8192) } });
  }

  /** End every session (aborting their runs). */
  close(): void {
    for (const s of [...this.#sessions]) s.close();
  }
}

const METHODS = new Set<string>(REGISTRATION_METHODS);

/**
 * One connection's protocol state: `initialize` first (once), then any method; runs tracked for `$/cancel`.
 * Every request is answered exactly once on the sink it came with; nothing is ever half-written: a manifest
 * is validated, hashed and checked against `expectRevision`, the rate and the gate before the store is touched.
 */
export class ProtocolSession {
  #principal: string | undefined;
  #client: InitializeParams['client'] | undefined;
  readonly #runs = new Map<string, Run>();
  #closed = false;
  readonly #pending = new Map<string, { resolve: (v: unknown) => void; reject: (e: TyError) => void }>();
  #outSeq = 0;
  #order: Promise<void> = Promise.resolve();

  constructor(
    readonly server: RegistrationServer,
    readonly opts: SessionOptions,
    readonly onClose: () => void,
  ) {}

  /** The principal after `initialize`, else undefined. */
  get principal(): string | undefined {
    return this.#principal;
  }
  get client(): InitializeParams['client'] | undefined {
    return this.#client;
  }
  /** @internal */
  runs(): Iterable<Run> {
    return this.#runs.values();
  }

  /**
   * Handle one inbound message (text or structured). Replies (and a run's notifications) go to `sink`
   * (default: the session's `send`). Resolves once the message is fully handled (a request answered).
   */
  async receive(input: unknown, sink: MessageSink = this.opts.send): Promise<void> {
    const m = classifyInbound(input, this.server.limits.maxMessageBytes);
    switch (m.kind) {
      case 'invalid':
        // Answered in sequence with the input (below), never ahead of the answers to earlier requests: a reply
        // without a usable id can be told apart only by its place in the stream.
        return this.inOrder(m.reply, sink);
      case 'cancel': {
        const p = CancelParamsSchema.safeParse(m.params);
        if (p.success) this.#runs.get(JSON.stringify(p.data.id))?.ac.abort();
        return;
      }
      case 'response': {
        const key = JSON.stringify(m.id);
        const w = this.#pending.get(key);
        if (!w) return; // not ours: dropped
        this.#pending.delete(key);
        if (m.error !== undefined) {
          const e = m.error as { message?: unknown; data?: { code?: unknown } } | null;
          const msg = typeof e?.message === 'string' ? e.message.slice(0, 1000) : 'the peer answered with an error';
          w.reject(new TyError('E_TOOL_FAILED', `the embedding page answered: ${msg}`));
        } else w.resolve(m.result);
        return;
      }
      case 'request': {
        // Requests are handled in arrival order; a tool/run holds the line only until its ref is resolved,
        // then runs alongside later requests (so $/cancel and other runs are not stuck behind it).
        let started!: () => void;
        const turn = new Promise<void>((r) => (started = r));
        const before = this.#order;
        this.#order = turn;
        await before;
        try {
          sink(await this.#request(m.id, m.method, m.params, sink, started));
        } finally {
          started();
        }
        return;
      }
    }
  }

  /**
   * Send `reply` (an error for a line with no usable id: not JSON, not a request, over the size cap) in input
   * order: after every earlier request has been answered (a `tool/run` counts as answered in this sense once it
   * started: its answer carries its id and may come later), before any later one. JSON-RPC 2.0 lets answers come
   * in any order because a client matches them by id; an `id: null` error cannot be matched that way, so its
   * position is what a client relies on.
   */
  async inOrder(reply: RpcMessage, sink: MessageSink = this.opts.send): Promise<void> {
    let done!: () => void;
    const turn = new Promise<void>((r) => (done = r));
    const before = this.#order;
    this.#order = turn;
    await before;
    try {
      sink(reply);
    } finally {
      done();
    }
  }

  /**
   * Send a request to the peer (the browser host's `tool/call` to its embedding page) and wait for its answer.
   * @throws TyError E_ABORTED (signal), E_TOOL_FAILED (the peer answered an error), E_PROTOCOL (session closed)
   */
  request(method: string, params: unknown, signal?: AbortSignal): Promise<unknown> {
    if (this.#closed) return Promise.reject(new TyError('E_PROTOCOL', 'the connection is closed'));
    const id = `ty-${++this.#outSeq}`;
    const key = JSON.stringify(id);
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        this.#pending.delete(key);
        reject(new TyError('E_ABORTED', 'the call was cancelled'));
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = (): void => signal?.removeEventListener('abort', onAbort);
      this.#pending.set(key, {
        resolve: (v) => {
          done();
          resolve(v);
        },
        reject: (e) => {
          done();
          reject(e);
        },
      });
      this.opts.send({ jsonrpc: '2.0', id, method, params });
    });
  }

  /** Abort every run and pending request; later messages are still answered (with errors for runs). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const r of this.#runs.values()) r.ac.abort();
    for (const w of this.#pending.values()) w.reject(new TyError('E_PROTOCOL', 'the connection closed'));
    this.#pending.clear();
    this.onClose();
  }

  async #request(
    id: RpcId,
    method: string,
    params: unknown,
    sink: MessageSink,
    started: () => void,
  ): Promise<RpcMessage> {
    if (method === CANCEL_METHOD)
      return rpcFailure(
        id,
        RPC_CODES.INVALID_REQUEST,
        `${CANCEL_METHOD} is a notification: send it without an id ({"jsonrpc":"2.0","method":"${CANCEL_METHOD}","params":{"id":RUN_ID}})`,
        'E_PROTOCOL',
      );
    if (!METHODS.has(method))
      return rpcFailure(
        id,
        RPC_CODES.METHOD_NOT_FOUND,
        `method "${method.slice(0, 80)}" is not part of ${REGISTRATION_PROTOCOL}; see the methods listed by initialize`,
        'E_PROTOCOL',
      );
    const schema = REGISTRATION_PARAMS[method as RegistrationMethod];
    const parsed = schema.safeParse(params);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const at = issue?.path.length ? issue.path.join('.') : '(params)';
      return rpcFailure(
        id,
        RPC_CODES.INVALID_PARAMS,
        `invalid params of ${method} at ${at}: ${issue?.message ?? 'invalid'}`,
        'E_USAGE',
        { path: at },
      );
    }
    if (method === 'initialize') return this.#initialize(id, parsed.data as InitializeParams);
    if (this.#principal === undefined)
      return rpcFailure(id, RPC_CODES.NOT_INITIALIZED, 'send initialize first', 'E_PROTOCOL');
    try {
      return {
        jsonrpc: '2.0',
        id,
        result: await this.#dispatch(
          id,
          method as Exclude<RegistrationMethod, 'initialize'>,
          parsed.data,
          sink,
          started,
        ),
      };
    } catch (e) {
      return rpcFromTyError(id, toTyError(e, 'E_TOOL_FAILED'));
    }
  }

  async #initialize(id: RpcId, p: InitializeParams): Promise<RpcMessage> {
    if (this.#principal !== undefined)
      return rpcFailure(id, RPC_CODES.INVALID_REQUEST, 'this connection is already initialized', 'E_PROTOCOL');
    if (!SUPPORTED_PROTOCOLS.includes(p.protocolVersion)) {
      return rpcFailure(
        id,
        RPC_CODES.SERVER_ERROR,
        `protocol version "${p.protocolVersion.slice(0, 64)}" is not supported; supported: ${SUPPORTED_PROTOCOLS.join(', ')}`,
        'E_PROTOCOL',
        { supported: [...SUPPORTED_PROTOCOLS] },
      );
    }
    const principal = this.opts.principal(p.client);
    try {
      await this.#gate('connect', '*', '*', undefined, principal);
    } catch (e) {
      return rpcFromTyError(id, toTyError(e, 'E_CAPABILITY_DENIED'));
    }
    this.#client = p.client;
    this.#principal = principal;
    return {
      jsonrpc: '2.0',
      id,
      result: {
        protocolVersion: REGISTRATION_PROTOCOL,
        principal: this.#principal,
        methods: [...REGISTRATION_METHODS, '$/cancel'],
        limits: { ...this.server.limits },
      },
    };
  }

  async #dispatch(
    id: RpcId,
    method: Exclude<RegistrationMethod, 'initialize'>,
    // biome-ignore lint/suspicious/noExplicitAny: each method's case parses its own params before any use
    p: any,
    sink: MessageSink,
    started: () => void,
  ): Promise<unknown> {
    const o = this.server.opts;
    switch (method) {
      case 'tool/add': {
        await this.#rate('add');
        // trusted-native code runs with the host's authority: only the application registers it, never a client
        // (checked on the raw manifest first, so an incomplete one, say without `entry`, gets this refusal too)
        const raw = p.manifest as { execution?: { kind?: unknown } } | null;
        const native =
          typeof raw === 'object' &&
          raw !== null &&
          typeof raw.execution === 'object' &&
          raw.execution !== null &&
          raw.execution.kind === 'trusted-native';
        const manifest = native ? undefined : parseManifest(p.manifest);
        if (native || manifest === undefined || manifest.execution.kind === 'trusted-native')
          throw new TyError(
            'E_INVALID_MANIFEST',
            "a protocol client cannot register a trusted-native tool (it would run with the host's authority); use sandboxed-code or external-service",
            { path: 'execution.kind' },
          );
        // a client's revision must not take the name of a host built-in (it would shadow it unasked), nor one that
        // differs from it only in case (`Python` beside `python` reads as the built-in in a list)
        const folded = manifest.name.toLowerCase();
        const builtin = [...(o.reservedNames?.() ?? [])].find((n) => n.toLowerCase() === folded);
        if (builtin !== undefined)
          throw new TyError(
            'E_INVALID_MANIFEST',
            builtin === manifest.name
              ? `"${manifest.name}" is the name of a tool this host offers itself; choose another name`
              : `"${manifest.name}" differs only in case from "${builtin}", a tool this host offers itself; choose another name`,
            { path: 'name', conflictsWith: builtin },
          );
        o.checkManifest?.(manifest, this.#principal!);
        const revision = await revisionId(manifest);
        if (p.expectRevision !== undefined && p.expectRevision !== revision)
          throw new TyError(
            'E_INTEGRITY',
            `the manifest hashes to ${revision}, not the expected ${p.expectRevision}; nothing was stored`,
          );
        await this.#gate('add', manifest.name, revision);
        const r = await o.registry.install(manifest);
        const active = (await o.registry.binding(manifest.name))?.active === r.revision;
        return { revision: r.revision, name: manifest.name, active, created: r.created };
      }
      case 'tool/list': {
        await this.#gate('read', '*', '*');
        const out: ToolListResult = [];
        for (const t of await o.registry.list()) {
          const b = (t as { builtin?: boolean }).builtin ? undefined : await o.registry.binding(t.name);
          out.push({
            name: t.name,
            active: t.active ?? null,
            revisions: t.revisions.map((rev) => ({ revision: rev, addedAt: b?.addedAt?.[rev] ?? null })),
          });
        }
        return out;
      }
      case 'tool/show': {
        const t = await o.registry.resolve(p.ref);
        await this.#gate('read', t.name, t.revision);
        const b = await o.registry.binding(t.name);
        return {
          name: t.name,
          revision: t.revision,
          active: t.active,
          addedAt: b?.addedAt?.[t.revision] ?? null,
          manifest: t.manifest,
        };
      }
      case 'tool/activate': {
        await this.#rate('activate');
        const t = await o.registry.resolve(`${p.name}@${p.revision}`);
        const previous = (await o.registry.binding(p.name))?.active ?? null;
        if (previous === t.revision) return { name: t.name, revision: t.revision, previous };
        // Binding a free name is what tool/add of a new name does; moving an active binding asks (kind registry, target
        // activate).
        await this.#gate(
          previous === null ? 'add' : 'activate',
          t.name,
          t.revision,
          previous === null ? undefined : `replaces the active revision ${previous}`,
        );
        await o.registry.activate(t.name, t.revision, { approveReplacement: true });
        return { name: t.name, revision: t.revision, previous };
      }
      case 'tool/remove': {
        await this.#rate('remove');
        const previous = (await o.registry.binding(p.name))?.active;
        if (!previous) throw new TyError('E_UNKNOWN_TOOL', `no tool named "${p.name}" is active`);
        await this.#gate(
          'remove',
          p.name,
          previous,
          `removes the binding of ${p.name} (revision ${previous}); stored revisions stay`,
        );
        return { name: p.name, previous: await o.registry.removeBinding(p.name) };
      }
      case 'tool/run':
        return this.#run(id, p, sink, started);
    }
  }

  async #run(
    id: RpcId,
    p: { ref: string; arguments?: unknown; timeoutMs?: number; disposable?: boolean },
    sink: MessageSink,
    started: () => void,
  ): Promise<unknown> {
    const key = JSON.stringify(id);
    if (this.#runs.has(key)) throw new TyError('E_USAGE', 'a run with this id is still in flight; use a new id');
    if (this.#runs.size >= this.server.limits.maxConcurrentRuns) {
      this.server.opts.refusals?.refused({
        principal: this.#principal!,
        reason: `${this.server.limits.maxConcurrentRuns} runs in flight on one connection`,
        tool: 'tool/run',
      });
      throw new TyError(
        'E_BUSY',
        `at most ${this.server.limits.maxConcurrentRuns} runs may be in flight on one connection; wait for one to finish`,
      );
    }
    const run: Run = { id, ac: new AbortController(), sink, seq: this.server.nextSeq() };
    this.#runs.set(key, run);
    if (this.#closed) run.ac.abort();
    try {
      const tool = await this.server.opts.registry.resolve(p.ref);
      run.revision = tool.revision;
      sink({ jsonrpc: '2.0', method: PROGRESS_METHOD, params: { id, stage: 'resolved', revision: tool.revision } });
      started();
      const timeoutMs = p.timeoutMs === undefined ? undefined : Math.min(p.timeoutMs, this.server.limits.maxTimeoutMs);
      const r = await this.server.opts.run(`${tool.name}@${tool.revision}`, p.arguments ?? {}, {
        principal: this.#principal!,
        signal: run.ac.signal,
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        ...(p.disposable !== undefined ? { disposable: p.disposable } : {}),
      });
      sink({ jsonrpc: '2.0', method: PROGRESS_METHOD, params: { id, stage: 'done', revision: tool.revision } });
      if (!r.ok) throw new TyError(r.error.code, r.error.message);
      return r.feedback?.length
        ? { revision: r.revision, result: r.result, feedback: r.feedback }
        : { revision: r.revision, result: r.result };
    } finally {
      this.#runs.delete(key);
    }
  }

  async #rate(action: RegistryAction): Promise<void> {
    if (!(await this.server.rate.take(this.#principal!))) {
      const r = this.server.rate;
      this.server.opts.refusals?.refused({
        principal: this.#principal!,
        reason: `registration rate: ${r.max} per ${Math.round(r.windowMs / 1000)} s`,
        tool: `tool/${action}`,
      });
      throw new TyError(
        'E_BUSY',
        `too many registration requests from ${this.#principal}: at most ${r.max} per ${Math.round(r.windowMs / 1000)} s; tool/${action} was not run, try again later`,
      );
    }
  }

  /**
   * Authorize one registry action through the gate (kind `registry`, target = the action; audited there).
   * Refusals count toward a pause of this principal's registrations, never of the tool's calls.
   * @throws TyError E_APPROVAL_REQUIRED (a person's approval was needed and none came), E_CAPABILITY_DENIED
   *   (a rule or hook refused), E_PAUSED
   */
  async #gate(
    action: RegistryAction,
    toolName: string,
    revision: string,
    preview?: string,
    who?: string,
  ): Promise<void> {
    const principal = who ?? this.#principal!;
    const req: GateRequest = {
      principal,
      kind: 'registry',
      toolName,
      revision,
      target: action,
      pauseKey: `registry:${principal}`,
    };
    if (preview !== undefined) req.preview = preview;
    try {
      await this.server.opts.gate.authorize(req);
    } catch (e) {
      const te = toTyError(e, 'E_CAPABILITY_DENIED');
      if (te.code !== 'E_CAPABILITY_DENIED') throw te;
      const rule = `registry(${action}:${principal})`;
      const what = toolName === '*' ? `${action} by ${principal}` : `${action} of "${toolName}" by ${principal}`;
      if (te.data?.list === 'person') {
        const reason = typeof te.data.reason === 'string' ? te.data.reason : undefined;
        const why =
          reason === 'no-channel'
            ? 'nobody could be asked'
            : reason === 'timeout'
              ? 'the question timed out unanswered'
              : te.data.rule === 'answer "no"'
                ? 'a person said no'
                : 'no answer came';
        throw new TyError(
          'E_APPROVAL_REQUIRED',
          `${what} needs a person's approval and none was given: ${why}; a person may allow it with the rule ${rule}`,
          { rule, ...(reason !== undefined ? { reason } : {}) },
        );
      }
      throw new TyError(
        'E_CAPABILITY_DENIED',
        `${what} is refused by ${String(te.data?.list ?? 'a')} ${String(te.data?.rule ?? 'rule')} (${String(te.data?.scope ?? 'settings')})`,
        { rule: String(te.data?.rule ?? '') },
      );
    }
  }
}

/** The params type of a method (for hosts and tests). */
export type ParamsOf<M extends RegistrationMethod> = z.infer<(typeof REGISTRATION_PARAMS)[M]>;
