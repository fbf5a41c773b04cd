// tycli audit: read the audit trail (never arguments, results or secret values); Node host, trusted side.
import type { CliCommand, CliContext } from '../../types.js';
import { note, out, usage } from '../../output.js';

async function openAudit(ctx: CliContext) {
  const { createNodeHost } = await import('../../../host/host.js');
  const { StoreAuditLog } = await import('../../../../core/audit/trail.js');
  const host = await createNodeHost({
    home: ctx.globals.home,
    globals: ctx.globals,
    io: ctx.io,
    env: ctx.env,
    startSandboxes: false,
  });
  return { host, log: new StoreAuditLog(host.store) };
}

const audit: CliCommand = {
  path: ['audit'],
  summary: 'show the audit trail: every call and capability use the gate decided, allowed or denied',
  usage: `Usage: tycli audit [--since TIME] [--tool NAME] [--denied]

  --since TIME   only records at or after TIME: ISO 8601 (2026-01-31T12:00:00Z) or a span (30s, 15m, 2h, 7d)
  --tool NAME    only records of this tool
  --denied       only refusals

Each record: time, principal, tool@revision, capability and target, decision, the deciding rule and
scope, duration (ms) and outcome. A call is recorded as started before its code runs; one whose tycli
process (or, on a team gateway's PostgreSQL store, instance) died before it finished shows as "interrupted", one
still running as "started". Arguments, results and secret values are never recorded.
With --json: one line, {"ok":true,"records":[...],"corrupt":N} (records oldest first, each the stored
JSON object; control, bidi and invisible characters as \\u escapes). Both forms show hidden characters
as visible escapes, also when piped.`,
  allowPositionals: false,
  options: { since: { type: 'string' }, tool: { type: 'string' }, denied: { type: 'boolean' } },
  async run(ctx, values) {
    const { formatAuditRecord, parseSince } = await import('../../../../core/audit/trail.js');
    const { inertJson } = await import('../../../../core/ask/text.js');
    const since = typeof values.since === 'string' ? parseSince(values.since, Date.now()) : undefined;
    if (values.tool !== undefined && (typeof values.tool !== 'string' || values.tool === ''))
      usage('--tool needs a tool name');
    const { host, log } = await openAudit(ctx);
    try {
      // this machine's processes; on PostgreSQL also every instance holding its liveness lock (any machine)
      const hostAlive = await host.opened.hostAlive();
      const { entries, corrupt } = await log.read(since === undefined ? { hostAlive } : { since, hostAlive });
      const shown = entries.filter(
        (r) =>
          (values.tool === undefined || r.tool === values.tool) && (values.denied !== true || r.decision === 'deny'),
      );
      // Both forms are inert whatever stdout is (a pipe into `less -R` replays escapes): the text line
      // escapes every hidden code point, the JSON line writes them as \u escapes.
      if (ctx.globals.json) {
        // The same one-line envelope as every other --json output (unreadable lines counted, never silently dropped).
        ctx.io.stdout.write(`${inertJson({ ok: true, records: shown, corrupt })}\n`);
        return 0;
      }
      if (shown.length === 0) note(ctx, 'no audit records match');
      else for (const r of shown) out(ctx, formatAuditRecord(r));
      if (corrupt > 0) note(ctx, `${corrupt} unreadable audit line(s) skipped`);
      return 0;
    } finally {
      await host.close();
    }
  },
};

export const auditCommands: CliCommand[] = [audit];
