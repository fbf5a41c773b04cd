// The Settings entry "Offer tools to browser agents (WebMCP)" (off by default): when on, the app's active tools are
// registered with the page's Model Context (host.webmcp) for browser agents to call; browser app, trusted side.
import { h } from '../dom.js';
import type { AppDb } from '../app-db.js';
import type { BrowserWebMcp } from '../../webmcp/expose.js';

const KEY = 'webmcpOffered';
export const WEBMCP_LABEL = 'Offer tools to browser agents (WebMCP)';

/** At start: offer the tools again when the person switched it on before. */
export async function restoreWebMcp(db: AppDb, webmcp: BrowserWebMcp): Promise<void> {
  if ((await db.getValue<boolean>(KEY)) === true) await webmcp.expose().catch(() => undefined);
}

function statusText(on: boolean, s: ReturnType<BrowserWebMcp['status']>): string {
  if (!on) return 'Off: browser agents see none of this app’s tools.';
  if (!s.available) return 'This browser offers no WebMCP: nothing is registered.';
  const n = s.tools.length;
  return `On: ${n} tool${n === 1 ? '' : 's'} offered. Each call by an agent is checked by your rules, asked about like any other, and recorded in the audit.`;
}

/** The checkbox and a line saying what it does now (role status, so a change is announced). */
export function webmcpSettingSection(db: AppDb, webmcp: BrowserWebMcp): HTMLElement {
  const box = h('input', { type: 'checkbox', name: 'webmcp' });
  const status = h('p', { role: 'status', class: 'hint' });
  const show = () => (status.textContent = statusText(box.checked, webmcp.status()));
  void db.getValue<boolean>(KEY).then((v) => {
    box.checked = v === true;
    show();
  });
  box.addEventListener('change', () => {
    const on = box.checked;
    void db.putValue(KEY, on);
    if (on) void webmcp.expose().then(show, show);
    else {
      webmcp.stop();
      show();
    }
  });
  // the app's checkbox row (settings-panel.ts, tools-panel.ts): the box beside its words
  const row = h('label', { class: 'check' }, box, ` ${WEBMCP_LABEL}`);
  return h(
    'section',
    { class: 'webmcp-settings', 'aria-label': 'Browser agents' },
    h('h3', {}, 'Browser agents'),
    row,
    status,
  );
}
