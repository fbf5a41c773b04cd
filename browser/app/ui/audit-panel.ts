// The audit and decisions view: every call and capability decision, remembered decisions with "Revoke"; browser app,
// trusted side.
import type { AuditRecord } from '../../../core/audit/trail.js';
import type { PermissionGate } from '../../../core/policy/gate.js';
import { suggestRule, type StoredDecision } from '../../../core/policy/permissions.js';
import { sanitizeInline } from '../../../core/ask/text.js';
import type { BrowserHost } from '../../host.js';
import { h, replaceChildren, shortId } from '../dom.js';

const MAX_ROWS = 500;

function by(r: AuditRecord): string {
  if (r.list === 'person') return `person (${r.rule})${r.channel ? ` via ${r.channel}` : ''}`;
  // the gate's trace (core/policy/permissions.ts) names the mode as `mode NAME`, the rest by their own words
  if (r.list === 'mode')
    return `the ${r.rule.replace(/^mode /, '')} mode${r.scope === 'default' ? '' : ` (set in ${r.scope} settings)`}`;
  if (r.list === 'remembered') return `an ${r.rule} (${r.scope})`;
  if (r.list === 'host' || r.list === 'manifest') return `the ${r.list}: ${r.rule}`;
  return `${r.list} rule "${r.rule}" (${r.scope} settings)`;
}

/** Error codes of a call that mean something said no (a rule, a person, the fetch target rules). */
const REFUSALS = new Set([
  'E_CAPABILITY_DENIED',
  'E_SECRET_DENIED',
  'E_FETCH_TARGET',
  'E_FETCH_SCHEME',
  'E_FETCH_CREDENTIALS',
  'E_HOOK_BLOCKED',
  'E_PAUSED',
]);

/** One line of the audit view: the decision that mattered for a call or a capability use. */
export interface AuditLine {
  time: string;
  decision: 'allowed' | 'denied' | 'failed' | 'started';
  /** What was decided: `call`, or the capability and its target (`fetch read https://a.example`). */
  what: string;
  tool: string;
  revision: string;
  by: string;
  /** Outcome and code as recorded (`ok`, `error E_TOOL_FAILED`). */
  outcome: string;
}

const whatOf = (r: AuditRecord) =>
  r.kind === 'tool' ? 'call' : `${r.kind}${r.access ? ` ${r.access}` : ''}${r.target ? ` ${r.target}` : ''}`;

/**
 * The audit records (oldest first) as lines, newest first, each naming the decision that mattered: a call's intent
 * record (`started`) is folded into its completion; a call the gate allowed whose capability use was then denied (a
 * capability record with decision deny for the same tool revision, between the call's start and its end) reads as
 * denied, with that capability, its rule and who decided; a call ended by a fetch target refusal reads as denied too.
 */
export function auditLines(records: AuditRecord[]): AuditLine[] {
  const out: AuditLine[] = [];
  const completed = new Set(records.filter((r) => r.call && r.outcome !== 'started').map((r) => r.call));
  const startIndex = new Map<string, number>();
  records.forEach((r, i) => {
    if (r.call && r.outcome === 'started') startIndex.set(r.call, i);
  });
  records.forEach((r, i) => {
    if (r.outcome === 'started' && r.call && completed.has(r.call)) return;
    const base: AuditLine = {
      time: r.time,
      decision: r.outcome === 'started' ? 'started' : r.decision === 'deny' ? 'denied' : 'allowed',
      what: whatOf(r),
      tool: r.tool,
      revision: r.revision,
      by: by(r),
      outcome: `${r.outcome}${r.code ? ` ${r.code}` : ''}`,
    };
    if (r.kind === 'tool' && r.decision === 'allow' && r.outcome === 'error') {
      const from = r.call !== undefined ? (startIndex.get(r.call) ?? Math.max(0, i - 50)) : Math.max(0, i - 50);
      let cause: AuditRecord | undefined;
      for (let j = i - 1; j >= from; j--) {
        const c = records[j]!;
        if (c.kind !== 'tool' && c.decision === 'deny' && c.tool === r.tool && c.revision === r.revision) {
          cause = c;
          break;
        }
      }
      if (cause) {
        out.push({ ...base, decision: 'denied', what: `call: ${whatOf(cause)} denied`, by: by(cause) });
        return;
      }
      if (r.code && REFUSALS.has(r.code)) {
        out.push({ ...base, decision: 'denied', what: `call: refused by the fetch rules (${r.code})` });
        return;
      }
      out.push({ ...base, decision: 'failed' });
      return;
    }
    out.push(base);
  });
  return out.reverse();
}

/**
 * Builds the view over the host's read API (host.audit, host.decisions, host.revokeDecision, host.paused,
 * host.resume). The audit trail holds no arguments and no secret values (core/audit/trail.ts); every field is made
 * inert
 * before display and set as text. Remembered decisions (permanent ones per revision, and this session's) each have
 * "Revoke" (a session grant is forgotten with the tool's other session grants: the gate keeps them per tool): the
 * next use is asked again. Tools paused after repeated refusals have "Resume".
 */
export function auditPanel(host: BrowserHost): HTMLElement {
  const decisions = h('div', { class: 'decisions' });
  const paused = h('div', { class: 'paused' });
  const log = h('div', { class: 'audit-log' });
  const f = (v: unknown) => sanitizeInline(String(v ?? ''));
  const row = (d: StoredDecision) => {
    const rule = suggestRule(d);
    // The gate forgets session grants per tool only: revoking one (or a permanent one, whose "yes" also holds for
    // the session) forgets that tool's session grants; permanent ones go by revision and rule.
    const revoke = async () => {
      if (d.scope === 'permanent') await host.revokeDecision({ revision: d.revision, rule });
      (host.gate as Partial<PermissionGate>).revokeSession?.(d.toolName);
      await refresh();
    };
    return h(
      'li',
      {},
      `${d.allow ? 'Allowed' : 'Denied'} ${f(rule)} for ${f(d.toolName)} @${f(shortId(d.revision))} (${d.scope})`,
      ' ',
      h(
        'button',
        { type: 'button', 'aria-label': `Revoke ${f(rule)} for ${f(d.toolName)}`, onclick: () => void revoke() },
        'Revoke',
      ),
    );
  };
  const refresh = async () => {
    // "Always allow" is remembered for the session too: one row per revision and rule, permanent first.
    const seen = new Set<string>();
    const list = (await host.decisions())
      .sort((a, b) => (a.scope === b.scope ? 0 : a.scope === 'permanent' ? -1 : 1))
      .filter((d) => {
        const k = `${d.revision} ${suggestRule(d)}`;
        if (seen.has(k)) return false;
        seen.add(k);
        return true;
      });
    replaceChildren(decisions, list.length ? h('ul', {}, ...list.map(row)) : h('p', {}, 'No remembered decisions.'));
    const p = await host.paused();
    replaceChildren(
      paused,
      p.length
        ? h(
            'ul',
            {},
            ...p.map((t) =>
              h(
                'li',
                {},
                `${f(t.tool)} paused after ${t.count} refusals`,
                ' ',
                h(
                  'button',
                  {
                    type: 'button',
                    'aria-label': `Resume ${f(t.tool)}`,
                    onclick: async () => {
                      await host.resume(t.tool);
                      await refresh();
                    },
                  },
                  'Resume',
                ),
              ),
            ),
          )
        : h('p', {}, 'No tool is paused.'),
    );
    const entries = await host.audit({ limit: MAX_ROWS + 1 });
    const lines = auditLines(entries.slice(-MAX_ROWS));
    const label: Record<AuditLine['decision'], string> = {
      allowed: 'Allowed',
      denied: 'Denied',
      failed: 'Allowed, then failed',
      started: 'Started, no end recorded',
    };
    replaceChildren(
      log,
      lines.length === 0
        ? h('p', {}, 'Nothing recorded yet.')
        : h(
            'ol',
            { 'aria-label': 'Audit log' },
            ...lines.map((l) =>
              h(
                'li',
                { class: 'audit-entry', 'data-decision': l.decision },
                h('span', { class: 'when' }, f(l.time.slice(11, 19))),
                h('span', { class: 'verdict' }, `${label[l.decision]}: ${f(l.what)}`),
                h(
                  'span',
                  { class: 'who' },
                  `${f(l.tool)} @${f(shortId(l.revision))} · by ${f(l.by)} · ${f(l.outcome)}`,
                ),
              ),
            ),
          ),
      entries.length > MAX_ROWS ? h('p', {}, `Showing the newest ${MAX_ROWS} records.`) : null,
    );
  };
  void refresh();
  return h(
    'section',
    { class: 'panel audit-panel', 'aria-label': 'Audit' },
    h('h2', {}, 'Audit and decisions'),
    h('button', { type: 'button', onclick: () => void refresh() }, 'Refresh'),
    h('h3', {}, 'Remembered decisions'),
    decisions,
    h('h3', {}, 'Paused tools'),
    paused,
    h('h3', {}, 'Calls and capability decisions'),
    log,
  );
}
