// The settings entry for remote MCP servers: add one by URL (name, optional header kept as a secret), remove it, see
// its tools and connection state; the list persisted in the app database; browser app, trusted side.
import { h, replaceChildren } from '../dom.js';
import type { AppDb } from '../app-db.js';
import type { BrowserMcp, McpServerInfo } from '../../mcp/servers.js';
import { MCP_SERVER_NAME_RE } from '../../mcp/servers.js';

/** What the app keeps per server: never a header value (that lives in the host's MCP secret store). */
export interface StoredMcpServer {
  name: string;
  url: string;
  headers: { name: string; secret: string }[];
}

const KEY = 'mcpServers';

/** Add the persisted servers to the host at start (nothing is contacted until a server is used). */
export async function restoreMcpServers(db: AppDb, mcp: BrowserMcp): Promise<void> {
  for (const s of (await db.getValue<StoredMcpServer[]>(KEY)) ?? []) {
    try {
      await mcp.add({
        name: s.name,
        url: s.url,
        headers: Object.fromEntries(s.headers.map((x) => [x.name, { secret: x.secret }])),
      });
    } catch {
      /* a record this version cannot use is skipped */
    }
  }
}

async function persist(db: AppDb, mcp: BrowserMcp): Promise<void> {
  const list: StoredMcpServer[] = mcp.servers().map((s) => ({ name: s.name, url: s.url, headers: s.headers }));
  await db.putValue(KEY, list);
}

function field(label: string, control: HTMLElement, hint?: string): HTMLElement {
  return h(
    'label',
    { class: 'field' },
    h('span', { class: 'label' }, label),
    control,
    hint ? h('small', {}, hint) : null,
  );
}

const STATE_TEXT: Record<McpServerInfo['state'], string> = {
  idle: 'not connected',
  connecting: 'connecting…',
  connected: 'connected',
  failed: 'failed',
};

/**
 * The "MCP servers" section. Each server shows its URL, its connection state (a status region: connected with the
 * protocol version, or the error code and message, e.g. E_MCP_CORS naming the page origin), its tools as offered to
 * the model (`SERVER__TOOL`), and a Remove button. The form adds a server: a header value is typed into a masked
 * field, handed to the host's secret store and never shown again.
 */
export function mcpSettingsSection(db: AppDb, mcp: BrowserMcp, onChange: () => void = () => {}): HTMLElement {
  const list = h('ul', { class: 'mcp-list', 'aria-label': 'MCP servers' });
  const name = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder: 'files' });
  const url = h('input', {
    type: 'url',
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: 'https://mcp.example.com/mcp',
  });
  url.setAttribute('role', 'textbox');
  const headerName = h('input', {
    type: 'text',
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: 'Authorization',
  });
  const headerValue = h('input', {
    type: 'text',
    class: 'masked',
    autocomplete: 'off',
    spellcheck: 'false',
    'data-lpignore': 'true',
  });
  const status = h('p', { role: 'status', class: 'mcp-status' });
  const tools = new Map<string, string[]>();

  const render = (): void => {
    const servers = mcp.servers();
    replaceChildren(
      list,
      ...servers.map((s) =>
        h(
          'li',
          { class: 'mcp-server', 'data-state': s.state, 'aria-label': `MCP server ${s.name}` },
          h('div', { class: 'mcp-head' }, h('strong', {}, s.name), ' ', h('code', {}, s.url)),
          h(
            'p',
            { role: 'status', 'aria-label': `Connection state of ${s.name}`, class: 'mcp-state' },
            s.state === 'connected'
              ? `connected${s.protocolVersion ? ` (MCP ${s.protocolVersion})` : ''}`
              : STATE_TEXT[s.state],
            s.error ? h('span', { class: 'mcp-error' }, ` ${s.error.code}: ${s.error.message}`) : null,
          ),
          s.headers.length
            ? h(
                'p',
                { class: 'mcp-headers' },
                `Headers: ${s.headers.map((x) => `${x.name} (secret ${x.secret})`).join(', ')}`,
              )
            : null,
          tools.has(s.name)
            ? h(
                'ul',
                { class: 'mcp-tools', 'aria-label': `Tools of ${s.name}` },
                ...(tools.get(s.name)!.length
                  ? tools.get(s.name)!.map((t) => h('li', {}, h('code', {}, t)))
                  : [h('li', {}, 'no tools')]),
              )
            : null,
          h(
            'div',
            { class: 'mcp-buttons' },
            h(
              'button',
              {
                type: 'button',
                'aria-label': `Connect to MCP server ${s.name}`,
                onclick: () => void refreshTools(s.name),
              },
              s.state === 'connected' ? 'Refresh' : 'Connect',
            ),
            h(
              'button',
              {
                type: 'button',
                'aria-label': `Remove MCP server ${s.name}`,
                onclick: async () => {
                  await mcp.remove(s.name);
                  tools.delete(s.name);
                  await persist(db, mcp);
                  status.textContent = `Removed ${s.name} and its stored header value.`;
                  onChange();
                },
              },
              'Remove',
            ),
          ),
        ),
      ),
    );
    if (servers.length === 0) list.append(h('li', {}, 'none'));
  };

  const refreshTools = async (server: string): Promise<void> => {
    try {
      tools.set(
        server,
        (await mcp.listTools(server)).map((t) => t.name),
      );
    } catch {
      tools.delete(server);
    }
    render();
    onChange();
  };

  const add = h('button', { type: 'button' }, 'Add server');
  add.addEventListener('click', async () => {
    const n = name.value.trim();
    const u = url.value.trim();
    const hn = headerName.value.trim();
    const hv = headerValue.value;
    if (!MCP_SERVER_NAME_RE.test(n)) {
      status.textContent = 'A server name is 1-32 of a-z, 0-9 and single dashes.';
      return;
    }
    if ((hn === '') !== (hv === '')) {
      status.textContent = 'A header needs both a name and a value.';
      return;
    }
    try {
      await mcp.add({ name: n, url: u, ...(hn ? { headers: { [hn]: hv } } : {}) });
    } catch (e) {
      status.textContent = `Not added: ${e instanceof Error ? e.message : String(e)}`;
      return;
    }
    await persist(db, mcp);
    name.value = '';
    url.value = '';
    headerName.value = '';
    headerValue.value = '';
    status.textContent = `Added ${n}. Its tools are offered as ${n}__TOOL; each call is asked about first.`;
    render();
    onChange(); // the app widens its connect origins for the new server (and reloads into this panel if it must)
    await refreshTools(n);
  });

  const off = mcp.onChange(() => {
    if (!list.isConnected && list.childElementCount > 0) {
      off();
      return;
    }
    render();
  });
  render();
  for (const s of mcp.servers()) void refreshTools(s.name);
  return h(
    'section',
    { class: 'mcp', 'aria-label': 'MCP servers' },
    h('h3', {}, 'MCP servers'),
    h(
      'p',
      {},
      'Remote MCP servers (Streamable HTTP). Their tools are offered to the model as SERVER__TOOL; ' +
        'every call goes through the same approval and audit as the sandboxed tools. The server must ' +
        "allow this page's origin (CORS).",
    ),
    list,
    field('Server name', name),
    field(
      'Server URL',
      url,
      `The server's Streamable HTTP endpoint (https, or http on this computer). It must allow ${location.origin} through CORS.`,
    ),
    field('Header name', headerName, 'Optional, e.g. Authorization.'),
    field(
      'Header value',
      headerValue,
      'Kept as a secret in this browser; sent only to this server, never shown again, never given to tools.',
    ),
    add,
    status,
  );
}
