// One audit record: its constants, its type written out, and its hand parse (no zod) that every append goes through;
// core, trusted side.
// core/audit/schema.ts builds AuditRecordSchema from these constants; core/audit/record.test.ts holds the type and the
// parse to that schema (z.infer equals AuditRecord; the same verdict on every JSON value, never wider on the rest).
import { ERROR_CODES, type ErrorCode } from '../../protocol/names.js';
import { accepts, arr, num, oneOf, opt, req, str, strictObject, type Parse } from '../schema/hand.js';

/** The store log the records are appended to (`Store.appendJsonl`). */
export const AUDIT_LOG = 'audit';
/** What a secret value found in a record's field is replaced with. */
export const WITHHELD = '<withheld>';
/** Longest name, target or rule kept in a record (characters); the gate cuts longer ones with a marker. */
export const AUDIT_FIELD_MAX = 2048;

/** Every outcome a record may carry (AuditRecordSchema's `outcome`). */
export const AUDIT_OUTCOMES = [
  'ok',
  'error',
  'granted',
  'denied',
  'blocked',
  'hook-failed',
  'paused',
  'started',
  'interrupted',
] as const;

/**
 * One audit line (JSON Lines, log `audit`): who, what (tool, revision, capability and its target), the decision and
 * the rule and scope that made it, how long the gate took and the outcome. Never arguments, results or secret values.
 * Field by field in core/audit/schema.ts.
 */
export type AuditRecord = {
  v: 1;
  /** ISO 8601 UTC. */
  time: string;
  principal: string;
  tool: string;
  revision: string;
  /** `tool` for an invocation, else the capability. */
  kind: string;
  /** Fetch origin, MCP `SERVER/TOOL`, popup target, secret *name* (never its value). */
  target?: string | undefined;
  access?: 'read' | 'write' | undefined;
  decision: 'allow' | 'deny';
  /** The deciding rule (canonical text) or source. */
  rule: string;
  /** The list that decided. */
  list: string;
  /** The scope that decided. */
  scope: string;
  /** The channel a person answered on, when asked. */
  channel?: string | undefined;
  /** Milliseconds, decision through execution. */
  durationMs: number;
  outcome: (typeof AUDIT_OUTCOMES)[number];
  code?: ErrorCode | undefined;
  /** Pairs an invocation's `started` record with its completion. */
  call?: string | undefined;
  /** On `started` records: the host process that ran the call. */
  host?: string | undefined;
  /**
   * On an aggregate record (kind `admission`): how many refusals of this principal, for this reason, it stands for
   * (all within one second from `time`).
   */
  count?: number | undefined;
  /** Kind `mcp-elicit` only: MCP's action, the field names asked (and those that look secret), why it ended so. */
  elicit?:
    | {
        action: 'accept' | 'decline' | 'cancel' | 'refused';
        fields: string[];
        secret?: string[] | undefined;
        reason?: string | undefined;
      }
    | undefined;
};

const field = str({ max: AUDIT_FIELD_MAX });
const names = arr(str({ max: 64 }), { max: 64 });

/** AuditRecordSchema's parse without zod: its output, or NO (a refused record, or one of another prototype). */
export const auditRecord: Parse<AuditRecord> = strictObject<AuditRecord>({
  v: req(oneOf([1])),
  time: req(str()),
  principal: req(field),
  tool: req(field),
  revision: req(field),
  kind: req(str({ max: 32 })),
  target: opt(field),
  access: opt(oneOf(['read', 'write'])),
  decision: req(oneOf(['allow', 'deny'])),
  rule: req(field),
  list: req(str({ max: 32 })),
  scope: req(str({ max: 64 })),
  channel: opt(field),
  durationMs: req(num({ nonnegative: true })),
  outcome: req(oneOf(AUDIT_OUTCOMES)),
  code: opt(oneOf(ERROR_CODES)),
  call: opt(str({ max: 64 })),
  host: opt(str({ max: 128 })),
  count: opt(num({ int: true, positive: true })),
  elicit: opt(
    strictObject({
      action: req(oneOf(['accept', 'decline', 'cancel', 'refused'])),
      fields: req(names),
      secret: opt(names),
      reason: opt(str({ max: 64 })),
    }),
  ),
});

/**
 * True when AuditRecordSchema accepts `r` (checked without zod); false sends the record to the schema, which refuses
 * it with its message (or, for an object of another prototype, may accept it).
 */
export const isAuditRecord = accepts(auditRecord);
