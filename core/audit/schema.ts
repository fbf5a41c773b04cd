// The audit record's zod schema (one JSON Lines entry of log `audit`); core, trusted side.
// core/audit/trail.ts checks each record by hand (core/audit/record.ts isAuditRecord, held to this schema by
// core/audit/record.test.ts) and loads this module for a record the hand check refuses and for reading the log.
import { z } from 'zod';
import { ErrorCodeSchema } from '../../protocol/errors.js';
import { AUDIT_FIELD_MAX, AUDIT_OUTCOMES } from './record.js';

/**
 * One audit line (JSON Lines, log `audit`). Holds who, what (tool, revision, capability and its target),
 * the decision and the rule/scope that made it, how long the gate took (ms, decision through execution)
 * and the outcome. Never arguments, results or secret values.
 */
export const AuditRecordSchema = z.strictObject({
  v: z.literal(1),
  /** ISO 8601 UTC */
  time: z.string(),
  principal: z.string().max(AUDIT_FIELD_MAX),
  tool: z.string().max(AUDIT_FIELD_MAX),
  revision: z.string().max(AUDIT_FIELD_MAX),
  /** `tool` for an invocation, else the capability */
  kind: z.string().max(32),
  /** fetch origin, MCP `SERVER/TOOL`, popup target, secret *name* (never its value) */
  target: z.string().max(AUDIT_FIELD_MAX).optional(),
  access: z.enum(['read', 'write']).optional(),
  decision: z.enum(['allow', 'deny']),
  /** The deciding rule (canonical text) or source, e.g. `fetch(read:https://a.example)`, `mode standard`. */
  rule: z.string().max(AUDIT_FIELD_MAX),
  /** The list that decided: deny, allow, ask, alwaysAsk, manifest, mode, remembered, hook, person, pause. */
  list: z.string().max(32),
  /** The scope that decided: flags, session, local, project, user, permanent, default, manifest, ... */
  scope: z.string().max(64),
  /** The channel a person answered on, when asked. */
  channel: z.string().max(AUDIT_FIELD_MAX).optional(),
  durationMs: z.number().nonnegative(),
  /**
   * `started` is the intent record of an allowed invocation, made durable before the sandbox runs it; the
   * completion record (`ok`/`error`) with the same `call` follows. `interrupted` is never stored: readers show
   * it for a `started` record without a completion whose host process is gone.
   */
  outcome: z.enum(AUDIT_OUTCOMES),
  code: ErrorCodeSchema.optional(),
  /** Pairs an invocation's `started` record with its completion (a random id). */
  call: z.string().max(64).optional(),
  /**
   * On `started` records: the host process that ran the call (opaque to core; the host decides whether it still runs).
   */
  host: z.string().max(128).optional(),
  /**
   * On an aggregate record (kind `admission`): how many refusals of this principal, for this reason, it stands for
   * (all within one second from `time`).
   */
  count: z.number().int().positive().optional(),
  /**
   * Kind `mcp-elicit` only: MCP's action, the field names asked (and those that look secret), why it ended so; never a
   * value.
   */
  elicit: z
    .strictObject({
      action: z.enum(['accept', 'decline', 'cancel', 'refused']),
      fields: z.array(z.string().max(64)).max(64),
      secret: z.array(z.string().max(64)).max(64).optional(),
      reason: z.string().max(64).optional(),
    })
    .optional(),
});
