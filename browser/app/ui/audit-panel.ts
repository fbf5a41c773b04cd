// The audit and decisions view: every call and capability decision, remembered decisions with "Revoke"; browser app, trusted side.
import { StoreAuditLog, type AuditRecord } from '../../../core/audit.js';
import { StoreDecisions, type PermissionGate } from '../../../core/gate.js';
import { suggestRule, type StoredDecision } from '../../../core/permissions.js';
import { sanitizeInline } from '../../../core/text.js';
import type { BrowserHost } from '../../host.js';
import { h, replaceChildren, shortId } from '../dom.js';

const MAX_ROWS = 500;

function by(r: AuditRecord): string {
  return r.list === 'person' ? `person (${r.rule})${r.channel ? ` via ${r.channel}` : ''}` : `${r.list} rule ${r.rule} [${r.scope}]`;
}

/**
 * Builds the view. The audit log holds no arguments and no secret values (core/audit.ts); every field is made
 * inert before display and set as text. Permanent decisions come from the host store (StoreDecisions), session
 * ones from the gate (the gate forgets session grants per tool, so Revoke of a session grant, or of a permanent
 * one, also forgets that tool's other grants of this session); the next use is asked again.
 */
export function auditPanel(host: BrowserHost): HTMLElement {
  const decisions = h('div', { class: 'decisions' });
  const log = h('div', { class: 'audit-log' });
  const gate = host.gate as Partial<PermissionGate>;
  const stored = new StoreDecisions(host.store);
  const f = (v: unknown) => sanitizeInline(String(v ?? ''));
  const row = (d: StoredDecision, revoke: () => Promise<void>) => {
    const rule = suggestRule(d);
    return h('li', {}, `${d.allow ? 'Allowed' : 'Denied'} ${f(rule)} for ${f(d.toolName)} @${f(shortId(d.revision))} (${d.scope})`, ' ', h('button', { type: 'button', 'aria-label': `Revoke ${f(rule)} for ${f(d.toolName)}`, onclick: async () => { await revoke(); await refresh(); } }, 'Revoke'));
  };
  const refresh = async () => {
    const perm = await stored.list();
    const session = gate.sessionDecisions?.() ?? [];
    const key = (d: StoredDecision) => `${d.revision} ${suggestRule(d)}`;
    const permanent = new Set(perm.map(key));
    // "Always allow" is remembered for the session too: one row, and Revoke removes both.
    const items = [
      ...perm.map((d) =>
        row(d, async () => {
          await stored.revoke({ revision: d.revision, rule: suggestRule(d) });
          gate.revokeSession?.(d.toolName);
        }),
      ),
      ...session.filter((d) => !permanent.has(key(d))).map((d) => row(d, async () => void gate.revokeSession?.(d.toolName))),
    ];
    replaceChildren(decisions, items.length ? h('ul', {}, ...items) : h('p', {}, 'No remembered decisions.'));
    const { entries, corrupt } = await new StoreAuditLog(host.store).read();
    const shown = entries.slice(-MAX_ROWS).reverse();
    replaceChildren(
      log,
      shown.length === 0
        ? h('p', {}, 'Nothing recorded yet.')
        : h(
            'table',
            { class: 'audit', 'aria-label': 'Audit log' },
            h('thead', {}, h('tr', {}, ...['Time', 'Decision', 'Tool', 'What', 'By', 'Outcome'].map((t) => h('th', {}, t)))),
            h(
              'tbody',
              {},
              ...shown.map((r) =>
                h('tr', {}, h('td', {}, f(r.time.slice(11, 19))), h('td', {}, f(r.decision)), h('td', {}, `${f(r.tool)} @${f(shortId(r.revision))}`), h('td', {}, r.kind === 'tool' ? 'call' : `${f(r.kind)}${r.access ? ` ${f(r.access)}` : ''}${r.target ? ` ${f(r.target)}` : ''}`), h('td', {}, f(by(r))), h('td', {}, `${f(r.outcome)}${r.code ? ` ${f(r.code)}` : ''}`)),
              ),
            ),
          ),
      corrupt ? h('p', { role: 'alert' }, `${corrupt} unreadable records skipped.`) : null,
      entries.length > MAX_ROWS ? h('p', {}, `Showing the newest ${MAX_ROWS} of ${entries.length} records.`) : null,
    );
  };
  void refresh();
  return h('section', { class: 'panel audit-panel', 'aria-label': 'Audit' }, h('h2', {}, 'Audit and decisions'), h('button', { type: 'button', onclick: () => void refresh() }, 'Refresh'), h('h3', {}, 'Remembered decisions'), decisions, h('h3', {}, 'Calls and capability decisions'), log);
}
