// The gate every invocation and capability use passes: permissions, asking, hooks, audit, pause; core, trusted side.
import { TyError, toTyError } from '../errors.js';
import type { ErrorCode } from '../../protocol/errors.js';
import type { Gate, GateRequest, IntentRecord, Question } from '../exec/runtime.js';
import { describeChannels, type Asker, type AskOutcome } from '../ask/router.js';
import {
  decide,
  decisionCovers,
  parseMatcher,
  suggestRule,
  traceText,
  type Policy,
  type PolicyDecision,
  type StoredDecision,
  type Trace,
} from './permissions.js';
import type { CallTracer } from '../exec/trace.js';
import { AUDIT_FIELD_MAX, type AuditRecord, type AuditSink } from '../audit/trail.js';
import { withholdInJson, withholdTokens } from '../capabilities/withhold.js';
import type { PauseTracker } from './pause.js';
import { cleanText, describe, where } from './gate-text.js';
import {
  parseHookDecision,
  type HookEvent,
  type HookPayload,
  type HookResult,
  type HookRunner,
  type HookSpec,
} from './hooks.js';
import type { DecisionStore } from './decisions.js';

export type { HookEvent, HookPayload, HookResult, HookRunner, HookSpec } from './hooks.js';
export { parseHookDecision } from './hooks.js';
export { StoreDecisions, type DecisionStore } from './decisions.js';

export interface GateConfig {
  policy: Policy;
  hooks?: Partial<Record<HookEvent, HookSpec[]>>;
}

export interface GateDeps {
  /** Current rules and hooks; called once per request (settings may change between calls). */
  config: () => GateConfig | Promise<GateConfig>;
  /** Asks a person (core/ask/router.ts AskRouter). Without one, every "ask" is refused at once (no-channel). */
  asker?: Asker;
  /** Runs hook commands. Without one, configured pre-hooks fail closed (E_HOOK_FAILED). */
  hooks?: HookRunner;
  audit: AuditSink;
  pause: PauseTracker;
  /** Permanent decisions; session ones stay in this gate's memory. */
  decisions: DecisionStore;
  /** ms since the epoch; injected for tests. */
  clock?: () => number;
  /**
   * Secret values currently known to the host, withheld as whole tokens (core/capabilities/withhold.ts) from the text
   * that comes from outside the host: the arguments shown in a question and given to hooks, a result given to
   * post-hooks, a hook's own output, and the message of an error the call's execution throws with text it did not write
   * (E_TOOL_FAILED, E_MCP). Never from audit records or the host's own identifiers and messages: those are built from
   * names, never from values, so they are never searched.
   */
  withheld?: () => Iterable<string>;
  newId?: () => string;
  /**
   * This host process, written on `started` audit records so readers can tell a running call from an interrupted one.
   */
  hostId?: string;
  /** Traces the decision (`tysandbox.gate`) and the question (`tysandbox.ask`) of each request; default none. */
  tracer?: CallTracer;
}

/** `reason`: why a person's approval was not had (no-channel, timeout, refused, aborted), for the host's hint. */
type Verdict =
  | { allow: true; trace: Trace; channel?: string }
  | { allow: false; trace: Trace; message: string; channel?: string; reason?: string; allowRule?: string };

const MAX_HOOK_INPUT = 1024 * 1024;
/** Most lines of a request's preview shown in a question. */
export const PREVIEW_LINES = 6;
/** Characters of a preview kept after withholding secret values (each line is then cut at 600 on display). */
const MAX_PREVIEW_CHARS = 64 * 1024;
const MAX_HOOK_RESULT = 256 * 1024;
/** A record that is durable once written (an `append`). */
const DURABLE: IntentRecord = Object.freeze({ durable: Promise.resolve(), begin: () => {} });
/** Codes whose message carries text the host did not write: a tool's own (E_TOOL_FAILED), an MCP server's (E_MCP). */
const FOREIGN_TEXT_CODES: ReadonlySet<string> = new Set(['E_TOOL_FAILED', 'E_MCP']);

/**
 * The Gate (core/exec/runtime.ts) implementation. For each request:
 * pause check (E_PAUSED) -> permission decision (core/policy/permissions.ts decide, deny first; a request's
 * `preapproved` rule counts as an allow below every settings rule and never beats deny or alwaysAsk) -> when it says
 * ask: permissionRequest hooks (may allow or deny; never allow an alwaysAsk) -> ask a person (no answer is
 * a refusal naming the --allow rule) -> [run only] preToolUse hooks (exit 0 allows, 2 blocks E_HOOK_BLOCKED,
 * anything else E_HOOK_FAILED, fail closed) -> `started` audit record, written, handed to `execute` as its
 * IntentRecord (its fsync begun once the call is sent, overlapping the tool's run) -> execute -> the intent record
 * durable -> postToolUse hooks (output appended as feedback, cannot block or replace) -> completion record, written
 * (its fsync joins the next group commit); the answer waits for the durable intent record. Every refusal counts toward
 * the tool's pause.
 */
export class PermissionGate implements Gate {
  readonly #d: GateDeps;
  readonly #session: StoredDecision[] = [];
  readonly #clock: () => number;

  constructor(deps: GateDeps) {
    this.#d = deps;
    this.#clock = deps.clock ?? (() => Date.now());
  }

  /** Session decisions given so far (in memory only). */
  sessionDecisions(): StoredDecision[] {
    return this.#session.map((d) => ({ ...d }));
  }

  /** Forget session decisions of a tool (or all). Returns how many were removed. */
  revokeSession(tool?: string): number {
    let n = 0;
    for (let i = this.#session.length - 1; i >= 0; i--) {
      if (tool === undefined || this.#session[i]!.toolName === tool) {
        this.#session.splice(i, 1);
        n++;
      }
    }
    return n;
  }

  #secrets(): string[] {
    try {
      return [...(this.#d.withheld?.() ?? [])].filter((s) => typeof s === 'string' && s.length > 0);
    } catch {
      return [];
    }
  }

  /** Foreign text (a hook's output, a tool's own message) with known secret values withheld as whole tokens. */
  #scrub(s: string): string {
    return withholdTokens(s, this.#secrets());
  }

  async authorize(req: GateRequest, signal?: AbortSignal): Promise<void> {
    const t0 = this.#clock();
    const cfg = await this.#d.config();
    await this.#checkPause(req, t0);
    const v = await this.#verdictOrAbort(req, cfg, signal, t0);
    if (!v.allow) await this.#refuse(req, v, t0, 'denied', 'E_CAPABILITY_DENIED', v.message);
    await this.#audit(req, v, t0, 'granted');
  }

  async run<T>(
    req: GateRequest,
    execute: (intent?: IntentRecord) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<{ value: T; feedback?: string[] }> {
    const t0 = this.#clock();
    const cfg = await this.#d.config();
    await this.#checkPause(req, t0);
    const v = await this.#verdictOrAbort(req, cfg, signal, t0);
    if (!v.allow) await this.#refuse(req, v, t0, 'denied', 'E_CAPABILITY_DENIED', v.message);

    for (const hook of this.#hooksFor(cfg, 'preToolUse', req)) {
      const label = `preToolUse hook #${hook.index + 1} (${hook.scope} settings)`;
      const r = await this.#runHook(hook, this.#payload('preToolUse', req));
      if (r.exitCode === 0) continue;
      if (r.exitCode === 2) {
        const reason = this.#scrub(cleanText(r.stderr, 1000)) || 'no reason given';
        await this.#refuse(
          req,
          { allow: false, trace: { list: 'hook', rule: label, scope: hook.scope }, message: '' },
          t0,
          'blocked',
          'E_HOOK_BLOCKED',
          `${describe(req)} was blocked by ${label}: ${reason}`,
        );
      }
      const why = r.timedOut
        ? `timed out after ${hook.timeoutMs} ms`
        : r.exitCode === null
          ? `could not run${r.error ? `: ${this.#scrub(cleanText(r.error, 300))}` : ''}`
          : `exited with ${r.exitCode}`;
      const err = new TyError('E_HOOK_FAILED', `${label} ${why}; the call was not run (pre-hooks fail closed)`);
      await this.#audit(
        req,
        { allow: false, trace: { list: 'hook', rule: label, scope: hook.scope }, message: err.message },
        t0,
        'hook-failed',
        'E_HOOK_FAILED',
      );
      throw err;
    }

    // The intent record is written before anything runs (a host killed mid-call still leaves it); its fsync begins
    // when `execute` says the call's arguments are on their way (IntentRecord.begin: the fsync overlaps the tool's
    // run), else once `execute` settles. What the call does outside its sandbox waits for it to be durable (the
    // Invoker holds capability requests, native code and bridged calls until then), and so does the answer. Intent
    // record not written: the call does not run (E_STORE); not durable: the call fails with E_STORE.
    // The completion record with the same `call` is written (held by the OS) before the answer; its fsync joins the
    // next group commit (node/store/append.ts: the next call's intent record, or its own within STAGED_SYNC_MS).
    const call = this.#d.newId?.() ?? globalThis.crypto.randomUUID();
    const intent = await this.#audit(req, v, t0, 'started', undefined, call, true);
    const post = this.#hooksFor(cfg, 'postToolUse', req).length > 0;
    let value: T;
    try {
      value = await execute(intent);
    } catch (e) {
      const te = toTyError(e);
      if (post) {
        intent.begin();
        await intent.durable;
        // they observe failures too; feedback has nowhere to go
        await this.#postHooks(cfg, req, { outcome: 'error', code: te.code });
      }
      await this.#completion(req, v, t0, 'error', te.code, call, intent);
      throw this.#withholdError(e, te);
    }
    let feedback: string[] = [];
    if (post) {
      intent.begin();
      await intent.durable;
      feedback = await this.#postHooks(cfg, req, { outcome: 'ok', result: value });
    }
    await this.#completion(req, v, t0, 'ok', undefined, call, intent);
    return feedback.length ? { value, feedback } : { value };
  }

  /**
   * Write the completion record (staged where the sink stages records: its fsync joins the next group commit), then
   * wait until the intent record is durable; E_STORE when either fails.
   */
  async #completion(
    req: GateRequest,
    v: Verdict,
    t0: number,
    outcome: AuditRecord['outcome'],
    code: ErrorCode | undefined,
    call: string,
    intent: IntentRecord,
  ): Promise<void> {
    try {
      await this.#audit(req, v, t0, outcome, code, call, true);
    } finally {
      // an intent record that cannot be made durable fails the call (E_STORE), whatever the completion did
      intent.begin();
      await intent.durable;
    }
  }

  /** The verdict; an abort while asking (or a failing store) is audited, not counted as a refusal, and rethrown. */
  async #verdictOrAbort(
    req: GateRequest,
    cfg: GateConfig,
    signal: AbortSignal | undefined,
    t0: number,
  ): Promise<Verdict> {
    try {
      const tracer = this.#d.tracer;
      if (!tracer) return await this.#verdict(req, cfg, signal);
      return await tracer.span(
        'tysandbox.gate',
        { 'tysandbox.kind': req.kind, 'tysandbox.tool': req.toolName },
        async (span) => {
          const v = await this.#verdict(req, cfg, signal);
          span.set({ 'tysandbox.decision': v.allow ? 'allow' : 'deny', 'tysandbox.rule': v.trace.rule.slice(0, 256) });
          return v;
        },
      );
    } catch (e) {
      const te = toTyError(e, 'E_STORE');
      const rule = te.code === 'E_ABORTED' ? 'aborted while asking' : 'the decision failed';
      await this.#audit(
        req,
        { allow: false, trace: { list: 'person', rule, scope: 'none' }, message: te.message },
        t0,
        'denied',
        te.code,
      );
      throw te;
    }
  }

  /**
   * The error as thrown, unless it carries text the host did not write (a tool's own message, E_TOOL_FAILED; an MCP
   * server's, E_MCP) holding a known secret value as a token: then the same error with it withheld. The host's own
   * errors are built from names and are returned as they are.
   */
  #withholdError(e: unknown, te: TyError): unknown {
    if (!FOREIGN_TEXT_CODES.has(te.code)) return e;
    const secrets = this.#secrets();
    if (secrets.length === 0) return e;
    const message = withholdTokens(te.message, secrets);
    const data = te.data === undefined ? undefined : (withholdInJson(te.data, secrets) as Record<string, unknown>);
    if (message === te.message && JSON.stringify(data) === JSON.stringify(te.data)) return e;
    return new TyError(te.code, message, data);
  }

  async #checkPause(req: GateRequest, t0: number): Promise<void> {
    try {
      await this.#d.pause.check(req.pauseKey ?? req.toolName);
    } catch (e) {
      const te = toTyError(e, 'E_STORE');
      const paused = te.code === 'E_PAUSED';
      await this.#audit(
        req,
        {
          allow: false,
          trace: {
            list: 'pause',
            rule: paused ? 'paused after repeated refusals' : 'pause state unreadable',
            scope: 'pause',
          },
          message: te.message,
        },
        t0,
        paused ? 'paused' : 'denied',
        te.code,
      );
      throw te;
    }
  }

  /** Record a refusal (audit + pause count) and throw. */
  async #refuse(
    req: GateRequest,
    v: Verdict,
    t0: number,
    outcome: AuditRecord['outcome'],
    code: ErrorCode,
    message: string,
  ): Promise<never> {
    // the host's own words (a hook's reason in it was withheld where it was read)
    let msg = message;
    const pauseKey = req.pauseKey ?? req.toolName;
    // A refusal because nobody could be asked (no live channel) says nothing about the tool: not counted.
    const nowPaused = !v.allow && v.reason === 'no-channel' ? false : await this.#d.pause.recordRefusal(pauseKey);
    if (nowPaused)
      msg += `; too many refusals: ${pauseKey === req.toolName ? 'calls to' : 'requests under'} "${pauseKey}" are now paused until a person resumes them`;
    await this.#audit(req, v, t0, outcome, code);
    const data: Record<string, unknown> = { rule: v.trace.rule, list: v.trace.list, scope: v.trace.scope };
    if (nowPaused) data.paused = pauseKey;
    if (v.trace.list === 'remembered') data.revoke = req.toolName;
    if (!v.allow && v.reason !== undefined) data.reason = v.reason;
    if (!v.allow && v.allowRule !== undefined) data.allowRule = v.allowRule;
    if (code === 'E_CAPABILITY_DENIED') data.suggestedRule = suggestRule(req);
    throw new TyError(code, msg, data);
  }

  /**
   * Write one audit record; durable when this resolves, except with `staged` on a sink that stages records: then
   * it resolves once the record is written, and `durable` settles (rejecting with E_STORE) once it is on disk, its
   * fsync started by `begin()` or by the sink's next group commit.
   */
  async #audit(
    req: GateRequest,
    v: Verdict,
    t0: number,
    outcome: AuditRecord['outcome'],
    code?: ErrorCode,
    call?: string,
    staged = false,
  ): Promise<IntentRecord> {
    const rec: AuditRecord = {
      v: 1,
      time: new Date(this.#clock()).toISOString(),
      principal: req.principal,
      tool: req.toolName,
      revision: req.revision,
      kind: req.kind,
      decision: v.allow ? 'allow' : 'deny',
      rule: v.trace.rule,
      list: v.trace.list,
      scope: v.trace.scope,
      durationMs: Math.max(0, this.#clock() - t0),
      outcome,
    };
    if (req.target !== undefined) rec.target = req.target;
    if (req.access !== undefined) rec.access = req.access;
    if (v.channel !== undefined) rec.channel = v.channel;
    if (code !== undefined) rec.code = code;
    if (call !== undefined) rec.call = call;
    if (outcome === 'started' && this.#d.hostId !== undefined) rec.host = this.#d.hostId;
    // Built from names only (never from a secret value), so never searched for one: a one-byte secret value leaves
    // every field as it is. Long fields are cut with a marker.
    for (const k of ['principal', 'tool', 'revision', 'target', 'rule', 'channel'] as const) {
      const val = rec[k];
      if (typeof val === 'string' && val.length > AUDIT_FIELD_MAX)
        rec[k] = `${val.slice(0, AUDIT_FIELD_MAX - 7)}…[cut]`;
    }
    const failed = (e: unknown) =>
      new TyError(
        'E_STORE',
        `the audit record for ${describe(req)} could not be written (${toTyError(e, 'E_STORE').code}); failing the call`,
      );
    try {
      if (staged && this.#d.audit.stage) {
        const s = await this.#d.audit.stage(rec);
        const durable = s.durable.catch((e: unknown) => {
          throw failed(e);
        });
        durable.catch(() => {}); // awaited by the caller later; never an unhandled rejection meanwhile
        // a sink that can start the fsync on request (node/store/append.ts StagedLine.begin)
        const start = (s as { begin?: unknown }).begin;
        let begun = false;
        const begin =
          typeof start === 'function'
            ? (alone?: boolean) => {
                if (begun) return;
                begun = true;
                (start as (alone?: boolean) => void).call(s, alone === true);
              }
            : () => {};
        return { durable, begin };
      }
      await this.#d.audit.append(rec);
    } catch (e) {
      throw failed(e);
    }
    return DURABLE;
  }

  async #remembered(req: GateRequest): Promise<StoredDecision[]> {
    const perm = await this.#d.decisions.list(req.revision);
    return [...this.#session, ...perm];
  }

  async #verdict(req: GateRequest, cfg: GateConfig, signal: AbortSignal | undefined): Promise<Verdict> {
    const d = decide(cfg.policy, req, await this.#remembered(req));
    if (d.effect === 'deny') return { allow: false, trace: d.trace, message: this.#denyMessage(req, d) };
    // a rule from outside settings (an MCP server definition's --allow / --ask none): an allow below every
    // settings rule; deny and alwaysAsk (decided above) still win; it replaces only the asking step
    const pre = req.preapproved;
    const preTrace: Trace | undefined =
      pre !== undefined && typeof pre.rule === 'string' && typeof pre.scope === 'string'
        ? { list: 'allow', rule: pre.rule, scope: pre.scope }
        : undefined;
    if (d.effect === 'allow') return { allow: true, trace: d.trace.list === 'mode' && preTrace ? preTrace : d.trace };
    if (preTrace !== undefined && !d.alwaysAsk) return { allow: true, trace: preTrace };

    // permissionRequest hooks may turn this ask into allow (never for alwaysAsk) or deny.
    for (const hook of this.#hooksFor(cfg, 'permissionRequest', req)) {
      const label = `permissionRequest hook #${hook.index + 1} (${hook.scope} settings)`;
      const payload = this.#payload('permissionRequest', req);
      payload.trace = { list: d.trace.list, rule: d.trace.rule, scope: d.trace.scope };
      payload.suggestedRule = d.suggestedRule;
      const r = await this.#runHook(hook, payload);
      const trace: Trace = { list: 'hook', rule: label, scope: hook.scope };
      if (r.exitCode === 2) {
        const reason = this.#scrub(cleanText(r.stderr, 1000));
        return {
          allow: false,
          trace,
          message: `${describe(req)} was denied by ${label}${reason ? `: ${reason}` : ''}`,
        };
      }
      if (r.exitCode !== 0) continue; // a failing permission hook has no say; a person is still asked
      const said = parseHookDecision(r.stdout);
      if (said === 'deny') return { allow: false, trace, message: `${describe(req)} was denied by ${label}` };
      if (said === 'allow' && !d.alwaysAsk) return { allow: true, trace };
    }
    return this.#ask(req, d, signal);
  }

  #denyMessage(req: GateRequest, d: PolicyDecision): string {
    switch (d.trace.list) {
      case 'host':
        return `${describe(req)} is refused: this host does not offer it`;
      case 'manifest':
        return `${describe(req)} is denied: the revision's manifest does not request it (the manifest is the upper bound; publish a revision whose capabilities list it)`;
      case 'remembered':
        return `${describe(req)} is denied by an ${d.trace.scope} answer "no"; a person can revoke that decision`;
      default:
        return `${describe(req)} is denied by ${traceText(d.trace)} in ${where(d.trace)}`;
    }
  }

  async #ask(req: GateRequest, d: PolicyDecision, signal: AbortSignal | undefined): Promise<Verdict> {
    const how = d.alwaysAsk
      ? `it matches the alwaysAsk rule ${d.trace.rule} in ${where(d.trace)}, so only a person's answer can allow it`
      : `the rule that allows it without asking: ${d.suggestedRule}`;
    if (!this.#d.asker) {
      return {
        allow: false,
        trace: { list: 'person', rule: 'no channel to ask on', scope: 'none' },
        message: `${describe(req)} needs a person's approval, but nobody could be asked (no channel to ask on); ${how}`,
        reason: 'no-channel',
        ...(d.alwaysAsk ? {} : { allowRule: d.suggestedRule }),
      };
    }
    const q: Question = {
      id: this.#d.newId?.() ?? globalThis.crypto.randomUUID(),
      title:
        req.kind === 'tool'
          ? `Allow tool ${req.toolName}?`
          : req.kind === 'registry'
            ? `Allow ${req.principal} to ${req.target ?? 'change'} the tool binding of ${req.toolName}?`
            : `Allow ${req.toolName} to use ${req.kind}${req.target !== undefined ? ` ${req.target}` : ''}?`,
      details: [
        `tool: ${req.toolName}`,
        `revision: ${req.revision}`,
        `principal: ${req.principal}`,
        `capability: ${req.kind}${req.access ? ` (${req.access})` : ''}`,
        ...(req.target !== undefined ? [`target: ${req.target}`] : []),
        `asked because: ${traceText(d.trace)} (${d.trace.scope})`,
        ...this.#previewLines(req),
      ],
      scopes: d.alwaysAsk ? ['once'] : ['once', 'session', 'permanent'],
      facts: {
        tool: req.toolName,
        revision: req.revision,
        capability: req.kind,
        ...(req.access !== undefined ? { access: req.access } : {}),
        ...(req.target !== undefined ? { target: req.target } : {}),
        ...(typeof req.preview === 'string' && req.preview.length > 0 ? { preview: this.#previewLines(req) } : {}),
        ...(req.kind === 'registry' ? { principal: req.principal } : {}),
        rememberable: !d.alwaysAsk,
      },
    };
    if (!d.alwaysAsk) q.suggestedRule = d.suggestedRule;
    if (req.hints) q.hints = req.hints;
    let out: AskOutcome;
    try {
      const asker = this.#d.asker;
      out = this.#d.tracer
        ? await this.#d.tracer.span('tysandbox.ask', { 'tysandbox.kind': req.kind }, async (span) => {
            const o = await asker.ask(q, signal);
            span.set({
              'tysandbox.answer': o.allow ? 'allow' : 'deny',
              ...(o.channel ? { 'tysandbox.channel': o.channel } : {}),
            });
            return o;
          })
        : await asker.ask(q, signal);
    } catch (e) {
      out = { allow: false, reason: 'refused' };
      void e;
    }
    if (signal?.aborted) throw new TyError('E_ABORTED', `${describe(req)} was aborted while waiting for an answer`);
    if (out.allow === true) {
      const scope = d.alwaysAsk ? 'once' : out.scope;
      if (scope !== 'once') this.#remember(req, out.channel);
      if (scope === 'permanent') await this.#d.decisions.add(this.#stored(req, true, 'permanent', out.channel));
      return { allow: true, trace: { list: 'person', rule: `answer "yes" (${scope})`, scope }, channel: out.channel };
    }
    const reason = 'reason' in out ? out.reason : 'refused';
    const channel = 'channel' in out && typeof out.channel === 'string' ? out.channel : undefined;
    const v: Verdict =
      reason === 'refused' && channel !== undefined
        ? {
            allow: false,
            trace: { list: 'person', rule: 'answer "no"', scope: 'once' },
            message: `${describe(req)} was refused by a person; ${how}`,
          }
        : {
            allow: false,
            trace: { list: 'person', rule: `no answer (${reason})`, scope: 'none' },
            message:
              reason === 'no-channel'
                ? `${describe(req)} needs a person's approval, but nobody could be asked (${whyNobody(out)}); ${how}`
                : `${describe(req)} needs a person's approval and got none (${reason}); ${how}`,
          };
    if (channel !== undefined) v.channel = channel;
    if (!v.allow && reason !== 'refused') v.reason = reason;
    if (!v.allow && !d.alwaysAsk) v.allowRule = d.suggestedRule;
    return v;
  }

  /**
   * The request's preview for the question: known secret values withheld, at most PREVIEW_LINES lines (each cut at 600
   * on display).
   */
  #previewLines(req: GateRequest): string[] {
    if (typeof req.preview !== 'string' || req.preview.length === 0) return [];
    // Withheld before cutting, so a cut never leaves part of a secret value behind; a preview is often JSON, and
    // withholdTokens looks for each value JSON-escaped and percent-encoded too.
    const clean = withholdTokens(req.preview, this.#secrets());
    const lines = (clean.length > MAX_PREVIEW_CHARS ? `${clean.slice(0, MAX_PREVIEW_CHARS)}…` : clean).split(/\r?\n/);
    if (lines.length <= PREVIEW_LINES) return lines;
    return [...lines.slice(0, PREVIEW_LINES - 1), `… [cut: ${lines.length - (PREVIEW_LINES - 1)} more lines]`];
  }

  #stored(
    req: GateRequest,
    allow: boolean,
    scope: 'session' | 'permanent',
    channel: string | undefined,
  ): StoredDecision {
    const s: StoredDecision = {
      kind: req.kind,
      revision: req.revision,
      toolName: req.toolName,
      allow,
      scope,
      at: this.#clock(),
    };
    if (req.target !== undefined) s.target = req.target;
    if (req.access !== undefined) s.access = req.access;
    if (channel !== undefined) s.channel = channel;
    return s;
  }

  /** Keep a "yes" for the rest of this session (permanent ones are also stored). */
  #remember(req: GateRequest, channel: string | undefined): void {
    const s = this.#stored(req, true, 'session', channel);
    for (let i = this.#session.length - 1; i >= 0; i--)
      if (decisionCovers(this.#session[i]!, req)) this.#session.splice(i, 1);
    this.#session.push(s);
  }

  #hooksFor(cfg: GateConfig, event: HookEvent, req: GateRequest): HookSpec[] {
    const list = cfg.hooks?.[event] ?? [];
    return list.filter((h) => {
      try {
        return parseMatcher(h.matcher)(req);
      } catch {
        return event !== 'postToolUse'; // an unreadable matcher runs the hook (pre: its failure then blocks)
      }
    });
  }

  #payload(event: HookEvent, req: GateRequest): HookPayload {
    const p: HookPayload = {
      event,
      principal: req.principal,
      tool: { name: req.toolName, revision: req.revision },
      kind: req.kind,
    };
    if (req.target !== undefined) p.target = req.target;
    if (req.access !== undefined) p.access = req.access;
    if (req.hookPayload !== undefined) {
      const input = this.#cleanJson(req.hookPayload, MAX_HOOK_INPUT);
      if (input !== undefined) p.input = input;
    }
    return p;
  }

  /**
   * JSON round-trip with secret values withheld as tokens from every string (decoded first, so JSON escaping cannot
   * hide a value); undefined when not JSON or larger than `max` bytes.
   */
  #cleanJson(v: unknown, max: number): unknown {
    try {
      const text = JSON.stringify(v);
      if (typeof text !== 'string' || text.length > max) return undefined;
      return withholdInJson(JSON.parse(text) as unknown, this.#secrets());
    } catch {
      return undefined;
    }
  }

  async #runHook(hook: HookSpec, payload: HookPayload): Promise<HookResult> {
    if (!this.#d.hooks)
      return { exitCode: null, stdout: '', stderr: '', timedOut: false, error: 'no hook runner on this host' };
    // the payload's foreign parts (input, result) were withheld by #cleanJson; the rest are the host's names
    const input = JSON.stringify(payload);
    try {
      return await this.#d.hooks.run(hook, input);
    } catch (e) {
      return { exitCode: null, stdout: '', stderr: '', timedOut: false, error: toTyError(e, 'E_HOOK_FAILED').message };
    }
  }

  async #postHooks(
    cfg: GateConfig,
    req: GateRequest,
    res: { outcome: 'ok' | 'error'; code?: string; result?: unknown },
  ): Promise<string[]> {
    const feedback: string[] = [];
    for (const hook of this.#hooksFor(cfg, 'postToolUse', req)) {
      const label = `postToolUse hook #${hook.index + 1} (${hook.scope} settings)`;
      const p = this.#payload('postToolUse', req);
      p.outcome = res.outcome;
      if (res.code !== undefined) p.code = res.code;
      if (res.outcome === 'ok') {
        const r = this.#cleanJson(res.result, MAX_HOOK_RESULT);
        if (r !== undefined) p.result = r;
      }
      const r = await this.#runHook(hook, p);
      if (r.exitCode === 0) {
        const out = this.#scrub(cleanText(r.stdout, 4096));
        if (out) feedback.push(out);
      } else {
        feedback.push(
          `${label} ${r.timedOut ? `timed out after ${hook.timeoutMs} ms` : r.exitCode === null ? 'could not run' : `exited with ${r.exitCode}`}`,
        );
      }
    }
    return feedback;
  }
}

/** Why no channel could ask: each channel and its reason, or a plain sentence when none was named. */
function whyNobody(out: object): string {
  return 'channels' in out && out.channels
    ? describeChannels(out.channels as Parameters<typeof describeChannels>[0])
    : 'no channel could present the question';
}
