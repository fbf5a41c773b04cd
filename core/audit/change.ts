// A change a person makes outside a call (a tool added or removed, a secret set or granted, settings changed) audited
// as an intent record before it and a completion record after it; core, trusted side.
import { TyError, toTyError } from '../errors.js';
import type { ErrorCode } from '../../protocol/names.js';
import { AUDIT_FIELD_MAX, type AuditRecord } from './record.js';
import type { AuditSink } from './trail.js';

/** What a change is: who makes it, to what, and by which command or method (never a value). */
export interface Change {
  principal: string;
  /** `registry` for tool bindings and revisions, `secret` for values and grants, `settings` for settings. */
  kind: string;
  /** The tool the change is about, `*` for none or many. */
  tool: string;
  /** Its revision id, `*` for none or many. */
  revision: string;
  /** The action and its object: `add`, `remove`, `gc`, a secret name, `NAME -> https://origin`. Names only. */
  target: string;
  /** Where the decision came from: the command a person typed (`tool add`) or the host method. */
  rule: string;
  /** The list that decided: `person` for a person's own command. */
  list?: string;
  /** Its scope: `command` for a person's command line. */
  scope?: string;
}

export interface ChangeAuditOptions {
  /** ms since the epoch; injected for tests. */
  clock?: () => number;
  /** Pairs the intent and completion records (default crypto.randomUUID). */
  newId?: () => string;
  /** This host process, on the intent record, so readers tell a running change from an interrupted one. */
  hostId?: string;
}

const cut = (v: string): string => (v.length > AUDIT_FIELD_MAX ? `${v.slice(0, AUDIT_FIELD_MAX - 7)}…[cut]` : v);

/**
 * Audits changes the way the gate audits a call (core/policy/gate.ts): a `started` record with a `call` id is written
 * and made durable before the change, and a completion record with the same id (`ok`, or `error` with the code)
 * after it, so a change interrupted by a crash still leaves its `started` record (shown `interrupted` once its host
 * is gone, core/audit/trail.ts foldCalls). Decision `allow`, list `person`, scope `command` unless the change says
 * otherwise. Records are built from the names in `Change`, never from a value.
 */
export class ChangeAudit {
  readonly #clock: () => number;
  constructor(
    readonly sink: AuditSink,
    readonly opts: ChangeAuditOptions = {},
  ) {
    this.#clock = opts.clock ?? (() => Date.now());
  }

  /**
   * One record of a part of a change already made (e.g. each revision a collection removed), outcome `ok`, no call id.
   * @throws TyError E_STORE when it cannot be written
   */
  async done(what: Change): Promise<void> {
    const r: AuditRecord = {
      v: 1,
      time: new Date(this.#clock()).toISOString(),
      principal: cut(what.principal),
      tool: cut(what.tool),
      revision: cut(what.revision),
      kind: what.kind.slice(0, 32),
      target: cut(what.target),
      access: 'write',
      decision: 'allow',
      rule: cut(what.rule),
      list: (what.list ?? 'person').slice(0, 32),
      scope: (what.scope ?? 'command').slice(0, 64),
      durationMs: 0,
      outcome: 'ok',
    };
    try {
      await this.sink.append(r);
    } catch (e) {
      throw new TyError(
        'E_STORE',
        `the audit record for ${what.kind} ${what.target.slice(0, 80)} could not be written (${toTyError(e, 'E_STORE').code})`,
      );
    }
  }

  /**
   * Run `fn` as the change `what`, between its two audit records.
   * @returns what `fn` returns
   * @throws TyError E_STORE when the intent record cannot be written or made durable (`fn` is not run), or when the
   *   completion record cannot be written (the change was made: the message says so); `fn`'s own error otherwise.
   */
  async run<T>(what: Change, fn: () => Promise<T>): Promise<T> {
    const t0 = this.#clock();
    const call = this.opts.newId?.() ?? globalThis.crypto.randomUUID();
    const record = (outcome: AuditRecord['outcome'], code?: ErrorCode): AuditRecord => {
      const r: AuditRecord = {
        v: 1,
        time: new Date(this.#clock()).toISOString(),
        principal: cut(what.principal),
        tool: cut(what.tool),
        revision: cut(what.revision),
        kind: what.kind.slice(0, 32),
        target: cut(what.target),
        access: 'write',
        decision: 'allow',
        rule: cut(what.rule),
        list: (what.list ?? 'person').slice(0, 32),
        scope: (what.scope ?? 'command').slice(0, 64),
        durationMs: Math.max(0, this.#clock() - t0),
        outcome,
        call,
      };
      if (code !== undefined) r.code = code;
      if (outcome === 'started' && this.opts.hostId !== undefined) r.host = this.opts.hostId;
      return r;
    };
    const label = `${what.kind} ${what.target.slice(0, 80)}`;
    try {
      const intent = record('started');
      if (this.sink.stage) {
        const s = await this.sink.stage(intent);
        // a person's change waits for its record now: its fsync starts at once, on this thread (nothing else runs)
        s.begin?.(true);
        await s.durable;
      } else await this.sink.append(intent);
    } catch (e) {
      throw new TyError(
        'E_STORE',
        `the audit record for ${label} could not be written (${toTyError(e, 'E_STORE').code}); nothing was changed`,
      );
    }
    let value: T;
    try {
      value = await fn();
    } catch (e) {
      const te = toTyError(e, 'E_STORE');
      await this.sink.append(record('error', te.code)).catch(() => {
        /* the change failed anyway; its intent record stays (shown interrupted once this host is gone) */
      });
      throw e;
    }
    try {
      await this.sink.append(record('ok'));
    } catch (e) {
      throw new TyError(
        'E_STORE',
        `${label} was made, but its completion audit record could not be written (${toTyError(e, 'E_STORE').code}); its intent record is in the audit log`,
      );
    }
    return value;
  }
}
