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
  return r.list === 'person'
    ? `person (${r.rule})${r.channel ? ` via ${r.channel}` : ''}`
    : `${r.list} rule ${r.rule} [${r.scope}]`;
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
    const shown = entries.slice(-MAX_ROWS).reverse();
    replaceChildren(
      log,
      shown.length === 0
        ? h('p', {}, 'Nothing recorded yet.')
        : h(
            'table',
            { class: 'audit', 'aria-label': 'Audit log' },
            h(
              'thead',
              {},
              h('tr', {}, ...['Time', 'Decision', 'Tool', 'What', 'By', 'Outcome'].map((t) => h('th', {}, t))),
            ),
            h(
              'tbody',
              {},
              ...shown.map((r) =>
                h(
                  'tr',
                  {},
                  h('td', {}, f(r.time.slice(11, 19))),
                  h('td', {}, f(r.decision)),
                  h('td', {}, `${f(r.tool)} @${f(shortId(r.revision))}`),
                  h(
                    'td',
                    {},
                    r.kind === 'tool'
                      ? 'call'
                      : `${f(r.kind)}${r.access ? ` ${f(r.access)}` : ''}${r.target ? ` ${f(r.target)}` : ''}`,
                  ),
                  h('td', {}, f(by(r))),
                  h('td', {}, `${f(r.outcome)}${r.code ? ` ${f(r.code)}` : ''}`),
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
