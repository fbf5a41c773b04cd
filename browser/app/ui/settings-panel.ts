// The settings panel: API, endpoint, model, API key (IndexedDB only), streaming, embedding origins; browser app,
// trusted side.
import { h } from '../dom.js';
import type { AppDb, AppSettings } from '../app-db.js';
import { connectSource } from '../connect.js';

/** One labelled field: a <label> wrapping its text and control gives the control its accessible name. */
function field(label: string, control: HTMLElement, hint?: string): HTMLElement {
  return h(
    'label',
    { class: 'field' },
    h('span', { class: 'label' }, label),
    control,
    hint ? h('small', {}, hint) : null,
  );
}

/** Origins, one per line: only `http(s)://host[:port]` values are kept (no paths, no wildcards). */
export function parseOrigins(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const v = line.trim();
    if (!v) continue;
    try {
      const u = new URL(v);
      if (
        (u.protocol === 'https:' || u.protocol === 'http:') &&
        u.origin === v.replace(/\/$/, '') &&
        !out.includes(u.origin)
      )
        out.push(u.origin);
    } catch {
      /* not an origin: dropped */
    }
  }
  return out;
}

/**
 * Builds the panel. Every change is applied to `settings` at once (the next request uses it) and saved to the
 * app database. The API key is written only to the database's `keys` store; the field masks it and it is never
 * put in the URL, the conversation, an export or any tool's reach.
 */
/** Tool secrets: names listed (values never shown again), add or replace one, remove one. */
function secretsSection(db: AppDb): HTMLElement {
  const secrets = db.secretValues();
  const list = h('ul', { class: 'secret-list', 'aria-label': 'Tool secrets' });
  const name = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder: 'WEATHER_TOKEN' });
  const value = h('input', { type: 'text', class: 'masked', autocomplete: 'off', spellcheck: 'false' });
  const status = h('p', { role: 'status', class: 'secret-status' });
  const refresh = async () => {
    const names = await secrets.names();
    list.replaceChildren(
      ...names.map((n) =>
        h(
          'li',
          {},
          h('code', {}, n),
          ' ',
          h(
            'button',
            {
              type: 'button',
              'aria-label': `Remove secret ${n}`,
              onclick: async () => {
                await secrets.delete(n);
                await refresh();
              },
            },
            'Remove',
          ),
        ),
      ),
    );
    if (names.length === 0) list.append(h('li', {}, 'none'));
  };
  const save = h('button', { type: 'button' }, 'Save secret');
  save.addEventListener('click', async () => {
    const n = name.value.trim();
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(n) || !value.value) {
      status.textContent = 'A secret needs a name (1-64 of A-Z, a-z, 0-9, _ . -) and a value.';
      return;
    }
    await secrets.set(n, value.value);
    name.value = '';
    value.value = '';
    status.textContent = `Saved ${n}. A tool reads it only after you allow that tool's revision.`;
    await refresh();
  });
  void refresh();
  return h(
    'section',
    { class: 'secrets', 'aria-label': 'Tool secrets' },
    h('h3', {}, 'Tool secrets'),
    h(
      'p',
      {},
      'Values tools may ask for (ctx.getSecret, or a header placeholder). Each use by a tool revision is asked about.',
    ),
    list,
    field('Secret name', name),
    field('Secret value', value),
    save,
    status,
  );
}

export function settingsPanel(db: AppDb, settings: AppSettings, onChange: () => void): HTMLElement {
  const api = h(
    'select',
    { name: 'api' },
    h('option', { value: 'openai' }, 'openai'),
    h('option', { value: 'anthropic' }, 'anthropic'),
  );
  api.value = settings.api;
  const endpoint = h('input', {
    type: 'url',
    name: 'endpoint',
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: 'http://127.0.0.1:11434/v1',
    value: settings.endpoint,
  });
  // A text input (role textbox) masked with CSS, not type=password: browsers would offer to store it in their password
  // manager.
  const key = h('input', {
    type: 'text',
    name: 'api-key',
    class: 'masked',
    autocomplete: 'off',
    spellcheck: 'false',
    'data-lpignore': 'true',
  });
  const model = h('input', {
    type: 'text',
    name: 'model',
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: 'llama3.2',
    value: settings.model,
  });
  const stream = h('input', { type: 'checkbox', name: 'stream' });
  stream.checked = settings.stream;
  const markdown = h('input', { type: 'checkbox', name: 'markdown' });
  markdown.checked = settings.markdown !== false;
  const origins = h('textarea', { name: 'embedding-origins', rows: 2, placeholder: 'https://example.org' });
  origins.value = settings.embeddingOrigins.join('\n');
  const show = h('input', { type: 'checkbox' });
  show.addEventListener('change', () => key.classList.toggle('masked', !show.checked));
  const keyNote = h('small', { class: 'key-note' });
  const showKeyNote = (origins: string[]) => {
    keyNote.textContent = origins.length
      ? `Kept in this browser (IndexedDB) and sent only to ${origins.join(', ')}; another endpoint gets it only after you confirm.`
      : 'Kept in this browser (IndexedDB); sent to an endpoint only after you confirm it for that endpoint.';
  };
  showKeyNote([]);
  void db.getKeyRecord().then((r) => {
    if (!key.value && r) key.value = r.key;
    showKeyNote(r?.origins ?? []);
  });
  // endpoint is type=url for the keyboard, but it must keep role textbox: give it an explicit role.
  endpoint.setAttribute('role', 'textbox');
  const save = () => {
    settings.api = api.value === 'anthropic' ? 'anthropic' : 'openai';
    settings.endpoint = endpoint.value.trim();
    settings.model = model.value.trim();
    settings.stream = stream.checked;
    settings.markdown = markdown.checked;
    settings.embeddingOrigins = parseOrigins(origins.value);
    void db.putSettings(settings);
    onChange();
  };
  for (const el of [api, endpoint, model, stream, markdown, origins]) {
    el.addEventListener('input', save);
    el.addEventListener('change', save);
  }
  // The key belongs to the endpoint origin it is typed for; a later endpoint gets it only after "Send key to HOST".
  key.addEventListener('input', () => {
    const origin = connectSource(endpoint.value.trim());
    void db.putKey(key.value.trim(), origin);
    showKeyNote(key.value.trim() && origin ? [origin] : []);
  });
  return h(
    'section',
    { class: 'panel settings', 'aria-label': 'Settings' },
    h('h2', {}, 'Settings'),
    field('API', api),
    field(
      'Endpoint URL',
      endpoint,
      'OpenAI-compatible: the base URL ending in /v1 (OpenAI, Ollama, llama.cpp, vLLM, LM Studio). Anthropic: https://api.anthropic.com',
    ),
    field('Model', model),
    h('label', { class: 'field' }, h('span', { class: 'label' }, 'API key'), key, keyNote),
    h('label', { class: 'check' }, show, ' Show key'),
    h('label', { class: 'check' }, stream, ' Stream responses'),
    h('label', { class: 'check' }, markdown, ' Render markdown'),
    field(
      'Allowed embedding origins',
      origins,
      'Pages (one origin per line) that may embed this app and register tools with it. Empty: none.',
    ),
    secretsSection(db),
  );
}
