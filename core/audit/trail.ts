// Append-only audit trail of every gate decision (never arguments, results or secret values); core, trusted side.
import { TyError } from '../errors.js';
import type { Store } from '../store/contract.js';
import { sanitizeInline } from '../ask/text.js';
import { traceText, type Trace } from '../policy/permissions.js';
import { shortId } from '../revisions/refs.js';
import { AUDIT_LOG, isAuditRecord, type AuditRecord } from './record.js';

export { AUDIT_FIELD_MAX, AUDIT_LOG, AUDIT_OUTCOMES, WITHHELD, type AuditRecord } from './record.js';
/** core/audit/schema.ts (zod): loaded for a record the hand check refuses and to read the log, not on every call. */
const schemaModule = () => import('./schema.js');

/** Where the gate writes audit records. */
export interface AuditSink {
  /** Append one record; throws when it cannot be written (the gate then fails the call). */
  append(rec: AuditRecord): Promise<void>;
  /**
   * Optional: append in two steps, resolving once the record is written where the host process dying cannot lose
   * it, with `durable`, which settles once it is on disk. Throws when it cannot be written. A sink may also return
   * `begin(alone)`, which starts that fsync now (node/store/append.ts StagedLine.begin); without it the record waits
   * for the next group commit or STAGED_SYNC_MS, so a caller that awaits `durable` at once calls `begin` first.
   */
  stage?(rec: AuditRecord): Promise<{ durable: Promise<void>; begin?: (alone?: boolean) => void }>;
}

/**
 * The audit log in the store (`Store.appendJsonl('audit', ...)`): append-only, one JSON object per line.
 * Records are written as they are given: every writer builds them from names (principal, tool, revision, rule,
 * target, channel), never from a secret value, so nothing is searched or replaced here; a record outside the schema
 * is refused (E_STORE). Secret values are withheld from text the host did not write where that text enters the host
 * (core/capabilities/withhold.ts), never from records.
 */
export class StoreAuditLog implements AuditSink {
  constructor(readonly store: Store) {}

  async append(rec: AuditRecord): Promise<void> {
    await this.store.appendJsonl(AUDIT_LOG, isAuditRecord(rec) ? rec : await checked(rec));
  }

  /** See AuditSink.stage; on a store without stages, durable at once. */
  async stage(rec: AuditRecord): Promise<{ durable: Promise<void>; begin?: (alone?: boolean) => void }> {
    return this.store.appendJsonlStaged(AUDIT_LOG, isAuditRecord(rec) ? rec : await checked(rec));
  }

  /**
   * Records at or after `since` (ms since the epoch), oldest first, folded by foldCalls (`hostAlive` as there).
   * Lines that are torn or do not match the schema are skipped and counted in `corrupt`.
   */
  async read(
    opts: { since?: number; hostAlive?: (host: string) => boolean } = {},
  ): Promise<{ entries: AuditRecord[]; corrupt: number }> {
    const { entries, corrupt } = await this.store.readJsonl<unknown>(AUDIT_LOG);
    const { AuditRecordSchema } = await schemaModule();
    const all: AuditRecord[] = [];
    let bad = corrupt;
    for (const e of entries) {
      const r = AuditRecordSchema.safeParse(e);
      if (!r.success) {
        bad++;
        continue;
      }
      all.push(r.data);
    }
    const folded = foldCalls(all, opts.hostAlive);
    const out = opts.since === undefined ? folded : folded.filter((r) => Date.parse(r.time) >= (opts.since as number));
    return { entries: out, corrupt: bad };
  }
}

/** A record isAuditRecord refuses, checked by AuditRecordSchema (its message). @throws TyError E_STORE */
async function checked(rec: AuditRecord): Promise<AuditRecord> {
  const { AuditRecordSchema } = await schemaModule();
  const parsed = AuditRecordSchema.safeParse(rec);
  if (!parsed.success)
    throw new TyError(
      'E_STORE',
      `audit record rejected: ${parsed.error.issues[0]?.path.join('.') ?? ''} ${parsed.error.issues[0]?.message ?? ''}`,
    );
  return parsed.data;
}

/**
 * One entry per invocation: a `started` record whose completion (same `call`) exists is dropped, the completion
 * kept; a `started` record without one stays `started` while `hostAlive(host)` says its host still runs, and
 * becomes `interrupted` otherwise (no predicate: every unfinished call counts as interrupted).
 */
export function foldCalls(records: readonly AuditRecord[], hostAlive?: (host: string) => boolean): AuditRecord[] {
  const done = new Set<string>();
  for (const r of records) if (r.call !== undefined && r.outcome !== 'started') done.add(r.call);
  const out: AuditRecord[] = [];
  const alive = new Map<string, boolean>();
  for (const r of records) {
    if (r.outcome !== 'started') {
      out.push(r);
      continue;
    }
    if (r.call !== undefined && done.has(r.call)) continue;
    const host = r.host ?? '';
    let live = alive.get(host);
    if (live === undefined) {
      live = host !== '' && hostAlive !== undefined && hostAlive(host);
      alive.set(host, live);
    }
    out.push(live ? r : { ...r, outcome: 'interrupted' });
  }
  return out;
}

/**
 * Parse a `--since` value: ISO 8601 date/time, or a relative span `30s`, `15m`, `2h`, `7d` before `now`.
 * Returns ms since the epoch. @throws TyError E_USAGE
 */
export function parseSince(value: string, now: number): number {
  const rel = /^(\d{1,9})([smhd])$/.exec(value.trim());
  if (rel) {
    const mult = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[rel[2] as 's' | 'm' | 'h' | 'd'];
    return now - Number(rel[1]) * mult;
  }
  if (/^\d{4}-\d{2}-\d{2}/.test(value)) {
    const t = Date.parse(value);
    if (Number.isFinite(t)) return t;
  }
  throw new TyError(
    'E_USAGE',
    `since "${value.slice(0, 60)}" is not a time; use ISO 8601 (2026-01-31T12:00:00Z) or a span like 30m, 2h, 7d`,
  );
}

/**
 * One human-readable line for a record (an aggregate record, with `count`, says how many it stands for). Every field is
 * made inert (core/ask/text.ts sanitizeInline: controls,
 * ESC/OSC, bidi, zero-width and other invisible code points shown as visible escapes), whatever the output
 * is, because tool, server and target names come from tools and MCP servers.
 */
export function formatAuditRecord(r: AuditRecord): string {
  const f = (v: string | number | undefined): string => sanitizeInline(String(v ?? ''));
  const by = `${f(traceText({ list: r.list as Trace['list'], rule: r.rule }))} [${f(r.scope)}]${r.channel ? ` via ${f(r.channel)}` : ''}`;
  if (r.count !== undefined)
    return (
      `${f(r.time)} ${f(r.decision.toUpperCase())} ${f(r.principal)} ${f(r.tool)} ${f(r.kind)}: ${r.count} refused ` +
      `within a second by ${by} -> ${f(r.outcome)}${r.code ? ` ${f(r.code)}` : ''}`
    );
  const what =
    r.kind === 'tool' ? 'call' : `${f(r.kind)}${r.access ? `:${f(r.access)}` : ''}${r.target ? ` ${f(r.target)}` : ''}`;
  // a change to nothing in particular (a secret set, a collection) names no tool revision
  const subject = r.revision === '*' ? f(r.tool) : `${f(r.tool)}@${f(shortId(r.revision))}`;
  const outcome =
    r.outcome === 'started'
      ? 'started (still running)'
      : r.outcome === 'interrupted'
        ? 'interrupted (its host stopped before the call finished)'
        : f(r.outcome);
  return (
    `${f(r.time)} ${f(r.decision.toUpperCase())} ${f(r.principal)} ${subject} ` +
    `${what} by ${by} -> ${outcome}${r.code ? ` ${f(r.code)}` : ''}${r.outcome === 'interrupted' || r.outcome === 'started' ? '' : ` (${Math.round(r.durationMs)} ms)`}`
  );
}
