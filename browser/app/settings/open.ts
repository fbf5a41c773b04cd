// The Settings panel put together (connections, conversation defaults, tool secrets, MCP servers, moving to another
// browser), and "Test connection" with the key question and the page's connect origins; browser app, trusted side.
import type { BrowserHost } from '../../host.js';
import type { AppDb, AppSettings, ConnectionRecord } from '../app-db.js';
import type { ConnectOrigins } from '../connect.js';
import { connectSource } from '../connect.js';
import { downloadJson, h } from '../dom.js';
import { HOST_TOOL_NAMES } from '../host-tools.js';
import { listModels } from '../models/list.js';
import { connectionsSection } from '../providers/connection-editor.js';
import type { Choice, Connections } from '../providers/connections.js';
import type { keyForEndpoint } from '../providers/key-question.js';
import type { ConversationView } from '../ui/conversation.js';
import type { Shell } from '../ui/shell.js';
import { mcpSettingsSection } from './mcp.js';
import { appSettingsSection, settingsPanel } from './panel.js';
import { secretsSection } from './secrets.js';
import { checkExport, exportSettings, importSettings } from './transfer.js';

/** sessionStorage: the panel to open again after a reload that widened the page's connect origins. */
export const REOPEN = 'tysandbox-panel';
/** sessionStorage: the connection whose "Test connection" waits for that reload. */
export const PENDING_TEST = 'tysandbox-test';

/** Take a JSON value left in sessionStorage for the next load (removed as it is read); undefined if absent or bad. */
export function readSession<T>(key: string): T | undefined {
  const v = sessionStorage.getItem(key);
  if (v === null) return undefined;
  sessionStorage.removeItem(key);
  try {
    return JSON.parse(v) as T;
  } catch {
    return undefined;
  }
}

/** What the Settings panel needs from the app. */
export interface SettingsHost {
  db: AppDb;
  settings: AppSettings;
  host: BrowserHost;
  connections: Connections;
  connect: ConnectOrigins;
  shell: Shell;
  view: ConversationView;
  disabledTools: Set<string>;
  driver: { busy: unknown; choice(): Choice | undefined };
  testConnection(c: ConnectionRecord, place: HTMLElement): Promise<string[]>;
}

/**
 * Fetch the model list of `c`: its key (asked about in `place` when its origin is not confirmed), the page's connect
 * origins widened when they do not list the endpoint yet (the page then reloads into Settings and tests again).
 * @throws ModelError, or Error when the person cancelled the key question or the page cannot be widened
 */
export async function testConnection(
  a: Pick<SettingsHost, 'db' | 'connect' | 'connections' | 'shell'>,
  c: ConnectionRecord,
  place: HTMLElement,
  askKey: typeof keyForEndpoint,
): Promise<string[]> {
  const origin = connectSource(c.endpoint);
  if (!origin) throw new Error('the Endpoint URL must be an http(s) URL');
  const creds = await askKey(a.db, c, place);
  if (creds === undefined) throw new Error('cancelled: nothing was sent');
  const need = [...a.connections.origins(), origin];
  if (a.connect.missing(need).length > 0) {
    if (!a.connect.reloadFor(need)) throw new Error(`this page still cannot connect to ${origin}: restart tycli app`);
    await a.connect.widen(need);
    sessionStorage.setItem(REOPEN, JSON.stringify('Settings'));
    sessionStorage.setItem(PENDING_TEST, JSON.stringify(c.id));
    location.reload();
    return new Promise(() => {});
  }
  return listModels({
    api: c.api,
    endpoint: c.endpoint,
    apiKey: creds.key,
    headers: creds.headers,
    signal: AbortSignal.timeout(30_000),
  });
}

/** The "Move to another browser" section: export and import of connections and tools, never keys. */
function transferSection(a: SettingsHost): HTMLElement {
  const deps = () => ({
    settings: a.settings,
    connections: a.connections,
    host: a.host,
    disabled: a.disabledTools,
    builtIn: HOST_TOOL_NAMES,
  });
  const status = h('p', { role: 'status', class: 'transfer-status' });
  const out = h('button', { type: 'button' }, 'Export connections and tools');
  out.addEventListener('click', async () => {
    downloadJson('tysandbox-settings.json', await exportSettings(deps()));
    status.textContent = 'Exported, without keys, header values or secret values: enter those again after importing.';
  });
  const file = h('input', {
    type: 'file',
    accept: '.json,application/json',
    class: 'visually-hidden',
    id: 'import-settings',
  });
  file.addEventListener('change', async () => {
    const f = file.files?.[0];
    file.value = '';
    if (!f) return;
    try {
      const doc = await checkExport(await f.text());
      const todo = await importSettings(doc, deps());
      await a.db.putSettings(a.settings);
      await a.db.putValue('toolsOff', [...a.disabledTools]);
      status.textContent = `Imported ${doc.connections.length} connections, ${doc.tools.length} tools and ${doc.mcpServers.length} MCP servers.${todo.length ? ` Still to do: ${todo.join(' ')}` : ''}`;
      a.shell.openPanel('Settings');
      a.shell.panelArea.querySelector('.transfer-status')!.textContent = status.textContent;
    } catch (e) {
      status.textContent = `Import failed, nothing was changed: ${e instanceof Error ? e.message : String(e)}`;
    }
  });
  return h(
    'section',
    { class: 'transfer', 'aria-label': 'Move to another browser' },
    h('h3', {}, 'Move to another browser'),
    h(
      'p',
      { class: 'hint' },
      'A file with your connections (without their keys and header values), your tools with their settings, your MCP ' +
        'servers (without header values) and these settings.',
    ),
    h(
      'div',
      { class: 'transfer-buttons' },
      out,
      h('label', { class: 'button-like', for: 'import-settings' }, 'Import connections and tools', file),
    ),
    status,
  );
}

/** Build the Settings panel; a "Test connection" that waited for a reload runs now. */
export function openSettingsPanel(a: SettingsHost): HTMLElement {
  const pending = (() => {
    const v = sessionStorage.getItem(PENDING_TEST);
    sessionStorage.removeItem(PENDING_TEST);
    return v ? (JSON.parse(v) as string) : undefined;
  })();
  const initial = pending ?? a.driver.choice()?.connection.id;
  const conns = connectionsSection({
    db: a.db,
    connections: a.connections,
    ...(initial ? { initial } : {}),
    test: (c, place) => a.testConnection(c, place),
  });
  if (pending) queueMicrotask(() => conns.querySelector<HTMLButtonElement>('.connection-actions .primary')?.click());
  const widenForMcp = async () => {
    const need = [...a.connections.origins(), ...a.host.mcp.servers().flatMap((s) => connectSource(s.url) ?? [])];
    if (a.driver.busy || !a.connect.reloadFor(need) || !(await a.connect.widen(need).catch(() => false))) return;
    sessionStorage.setItem(REOPEN, JSON.stringify(a.shell.openLabel ?? 'Settings'));
    location.reload();
  };
  return settingsPanel(
    conns,
    appSettingsSection(a.db, a.settings, () => {
      a.view.plain = a.settings.markdown === false;
    }),
    secretsSection(a.db),
    mcpSettingsSection(a.db, a.host.mcp, () => void widenForMcp()),
    transferSection(a),
  );
}
