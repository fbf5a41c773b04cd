// Settings → Connections: the saved connections, "Add connection", presets with their CORS note, each connection's
// name, API, endpoint, key, extra headers, model, images, "Test connection" and its model list; browser app, trusted
// side.
import type { AppDb, ConnectionRecord } from '../app-db.js';
import { connectSource } from '../connect.js';
import { h, replaceChildren } from '../dom.js';
import { API_KINDS, type ApiKind } from '../models/types.js';
import { headerNameProblem, headerValueProblem, type Connections } from './connections.js';
import { corsNote, PRESETS, presetById } from './presets.js';

export interface ConnectionEditorDeps {
  db: AppDb;
  connections: Connections;
  /** The connection shown first (the current conversation's). */
  initial?: string;
  /**
   * Fetch the model list of `c` (GET /v1/models), asking about its key in `place` when needed; resolves with the ids
   * or rejects with the reason. The page may reload to reach a new origin (then it opens Settings again and tests).
   */
  test(c: ConnectionRecord, place: HTMLElement): Promise<string[]>;
}

const API_LABEL: Record<ApiKind, string> = {
  openai: 'openai (Chat Completions)',
  anthropic: 'anthropic (Messages)',
  'openai-responses': 'openai-responses (Responses API)',
};

/** One labelled field: a <label> wrapping its text and control gives the control its accessible name. */
function field(label: string, control: HTMLElement, hint?: HTMLElement | string): HTMLElement {
  return h(
    'label',
    { class: 'field' },
    h('span', { class: 'label' }, label),
    control,
    typeof hint === 'string' ? h('small', {}, hint) : (hint ?? null),
  );
}

/** Models shown under "Test connection" (the Model menu of a conversation lists them all). */
const SHOWN_MODELS = 40;

/**
 * The Connections section of Settings. Every change is saved at once; with no connection yet, the first change makes
 * one. The key is written only to the connection's credentials (AppDb.putKey), bound to the endpoint origin it was
 * typed for, and its field is masked; header values are kept with it and never shown again.
 */
export function connectionsSection(deps: ConnectionEditorDeps): HTMLElement {
  const { db, connections } = deps;
  let current: ConnectionRecord | undefined =
    connections.get(deps.initial) ?? connections.defaultConnection() ?? undefined;
  const picker = h('select', { name: 'connection' });
  const add = h('button', { type: 'button' }, 'Add connection');
  const editor = h('div', { class: 'connection-editor' });
  const section = h(
    'section',
    { class: 'connections', 'aria-label': 'Connections' },
    h('h3', {}, 'Connections'),
    h(
      'p',
      { class: 'hint' },
      'Each connection has its own key, sent only to its own endpoint. Pick the connection and model of a ' +
        'conversation in its Model menu.',
    ),
    h('div', { class: 'connection-bar' }, field('Connection', picker), add),
    editor,
  );

  const fillPicker = () => {
    const list = connections.all();
    replaceChildren(
      picker,
      ...(list.length ? list : [undefined]).map((c) =>
        h('option', { value: c?.id ?? '' }, c ? c.name : '(none yet: fill in the fields below)'),
      ),
    );
    picker.value = current?.id ?? '';
    picker.disabled = list.length === 0;
  };

  /** The connection being edited, made on the first change when there is none (once, however fast the changes). */
  let making: Promise<ConnectionRecord> | undefined;
  const ensure = async (): Promise<ConnectionRecord> => {
    if (current && connections.get(current.id)) return current;
    making ??= connections.add({ name: 'My connection' }).then((c) => {
      current = c;
      making = undefined;
      fillPicker();
      return c;
    });
    return making;
  };

  const render = () => {
    const c = current;
    const preset = h(
      'select',
      { name: 'preset' },
      h('option', { value: '' }, 'Custom'),
      ...PRESETS.map((p) => h('option', { value: p.id }, p.label)),
    );
    preset.value = c?.preset ?? '';
    const presetNote = h('small', { class: 'preset-note' });
    const showNote = () => {
      const p = presetById(preset.value);
      replaceChildren(
        presetNote,
        p
          ? h('span', {}, `${p.run} CORS: ${corsNote(p, location.origin)}`)
          : 'Any OpenAI- or Anthropic-compatible URL.',
      );
    };
    showNote();
    const name = h('input', { type: 'text', name: 'connection-name', autocomplete: 'off', value: c?.name ?? '' });
    const api = h('select', { name: 'api' }, ...API_KINDS.map((k) => h('option', { value: k }, API_LABEL[k])));
    api.value = c?.api ?? 'openai';
    const endpoint = h('input', {
      type: 'url',
      name: 'endpoint',
      autocomplete: 'off',
      spellcheck: 'false',
      placeholder: 'http://127.0.0.1:11434/v1',
      value: c?.endpoint ?? '',
    });
    // type=url brings the URL keyboard, but it must keep role textbox: give it an explicit role.
    endpoint.setAttribute('role', 'textbox');
    // A text input (role textbox) masked with CSS, not type=password: browsers would offer to store it in their
    // password manager.
    const key = h('input', {
      type: 'text',
      name: 'api-key',
      class: 'masked',
      autocomplete: 'off',
      spellcheck: 'false',
      'data-lpignore': 'true',
    });
    const show = h('input', { type: 'checkbox' });
    show.addEventListener('change', () => key.classList.toggle('masked', !show.checked));
    const keyNote = h('small', { class: 'key-note' });
    const showKeyNote = (origins: string[]) => {
      keyNote.textContent = origins.length
        ? `Kept in this browser (IndexedDB) and sent only to ${origins.join(', ')}; another endpoint gets it only after you confirm.`
        : 'Kept in this browser (IndexedDB); sent to an endpoint only after you confirm it for that endpoint.';
    };
    showKeyNote([]);
    const model = h('input', {
      type: 'text',
      name: 'model',
      autocomplete: 'off',
      spellcheck: 'false',
      placeholder: 'llama3.2',
      value: c?.model ?? '',
    });
    const images = h('input', { type: 'checkbox', name: 'images' });
    images.checked = c?.images ?? true;
    const headerList = h('ul', { class: 'header-list', 'aria-label': 'Extra headers' });
    const headerName = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder: 'X-Title' });
    const headerValue = h('input', { type: 'text', class: 'masked', autocomplete: 'off', spellcheck: 'false' });
    const addHeader = h('button', { type: 'button' }, 'Add header');
    const status = h('p', { role: 'status', class: 'connection-status' });
    const models = h('div', { class: 'model-list' });
    const testBtn = h('button', { type: 'button', class: 'primary' }, 'Test connection');
    const remove = h('button', { type: 'button', class: 'deny', disabled: !c }, 'Remove connection');

    const showModels = (ids: string[] | undefined) => {
      if (!ids?.length) return replaceChildren(models);
      const label = `Models of ${current?.name ?? 'this connection'}`;
      replaceChildren(
        models,
        h(
          'ul',
          { 'aria-label': label, class: 'models' },
          ...ids.slice(0, SHOWN_MODELS).map((m) => h('li', {}, h('code', {}, m))),
          ids.length > SHOWN_MODELS ? h('li', {}, `and ${ids.length - SHOWN_MODELS} more`) : null,
        ),
      );
    };
    showModels(c?.models);

    const renderHeaders = async () => {
      const cred = current ? await db.getCredentials(current.id) : undefined;
      const hs = cred?.headers ?? [];
      replaceChildren(
        headerList,
        ...(hs.length
          ? hs.map((x) =>
              h(
                'li',
                {},
                h('code', {}, x.name),
                ' (value kept, not shown) ',
                h(
                  'button',
                  {
                    type: 'button',
                    'aria-label': `Remove header ${x.name}`,
                    onclick: async () => {
                      const cc = await ensure();
                      const left = hs.filter((y) => y.name !== x.name);
                      await db.putHeaders(cc.id, left, connectSource(cc.endpoint));
                      await connections.update(cc.id, { headerNames: left.map((y) => y.name) });
                      await renderHeaders();
                    },
                  },
                  'Remove',
                ),
              ),
            )
          : [h('li', {}, 'none')]),
      );
    };
    void renderHeaders();
    if (c)
      void db.getCredentials(c.id).then((r) => {
        if (!key.value && r?.key) key.value = r.key;
        showKeyNote(r?.key ? r.origins : []);
      });

    const save = async () => {
      const cc = await ensure();
      await connections.update(cc.id, {
        name: name.value.trim() || 'My connection',
        api: (API_KINDS as string[]).includes(api.value) ? (api.value as ApiKind) : 'openai',
        endpoint: endpoint.value.trim(),
        model: model.value.trim(),
        images: images.checked,
        ...(preset.value ? { preset: preset.value } : {}),
      });
      if (!preset.value) delete cc.preset;
      fillPicker();
    };
    for (const el of [name, api, endpoint, model, images]) {
      el.addEventListener('input', () => void save());
      el.addEventListener('change', () => void save());
    }
    preset.addEventListener('change', () => {
      const p = presetById(preset.value);
      showNote();
      if (p) {
        const wasDefault =
          !name.value.trim() || PRESETS.some((x) => x.label === name.value) || name.value === 'My connection';
        if (wasDefault) name.value = p.label;
        api.value = p.api;
        endpoint.value = p.endpoint;
        images.checked = p.images;
      }
      void save();
    });
    // The key belongs to the endpoint origin it is typed for; another endpoint gets it only after "Send key to HOST".
    key.addEventListener('input', async () => {
      const cc = await ensure();
      const origin = connectSource(endpoint.value.trim());
      await db.putKey(cc.id, key.value.trim(), origin);
      showKeyNote(key.value.trim() && origin ? [origin] : []);
    });
    addHeader.addEventListener('click', async () => {
      const n = headerName.value.trim();
      const problem = headerNameProblem(n) ?? headerValueProblem(headerValue.value);
      if (problem) {
        status.textContent = `Header not added: ${problem}.`;
        return;
      }
      const cc = await ensure();
      const cred = await db.getCredentials(cc.id);
      const left = (cred?.headers ?? []).filter((x) => x.name.toLowerCase() !== n.toLowerCase());
      const next = [...left, { name: n, value: headerValue.value }];
      await db.putHeaders(cc.id, next, connectSource(cc.endpoint));
      await connections.update(cc.id, { headerNames: next.map((x) => x.name) });
      headerName.value = '';
      headerValue.value = '';
      status.textContent = `Added header ${n}; it is sent with this connection's requests only.`;
      await renderHeaders();
    });
    testBtn.addEventListener('click', async () => {
      const cc = await ensure();
      status.textContent = `Asking ${cc.endpoint || 'the endpoint'} for its models…`;
      testBtn.disabled = true;
      try {
        const ids = await deps.test(cc, status);
        await connections.update(cc.id, { models: ids });
        status.textContent = `Connected: ${ids.length} model${ids.length === 1 ? '' : 's'} listed by ${cc.endpoint}.`;
        showModels(ids);
      } catch (e) {
        const p = presetById(cc.preset);
        status.textContent =
          `Test failed: ${e instanceof Error ? e.message : String(e)}.` +
          (p ? ` ${corsNote(p, location.origin)}` : '') +
          ' You can still type a model name.';
      } finally {
        testBtn.disabled = false;
      }
    });
    let confirming = false;
    remove.addEventListener('click', async () => {
      if (!current) return;
      if (!confirming) {
        confirming = true;
        remove.textContent = `Remove ${current.name} and its key`;
        remove.focus();
        return;
      }
      await connections.remove(current.id);
      current = connections.defaultConnection();
      fillPicker();
      render();
      picker.focus();
    });
    replaceChildren(
      editor,
      field('Preset', preset, presetNote),
      field('Connection name', name),
      field('API', api),
      field(
        'Endpoint URL',
        endpoint,
        'OpenAI-compatible: the base URL ending in /v1 (OpenAI, OpenRouter, Ollama, llama.cpp, vLLM, LM Studio). Anthropic: https://api.anthropic.com',
      ),
      h('label', { class: 'field' }, h('span', { class: 'label' }, 'API key'), key, keyNote),
      h('label', { class: 'check' }, show, ' Show key'),
      field(
        'Model',
        model,
        'Used by conversations that have not picked one in their Model menu; any name the provider knows.',
      ),
      h('label', { class: 'check' }, images, " Send images to this connection's models"),
      h(
        'div',
        { class: 'extra-headers' },
        h('h4', {}, 'Extra headers'),
        headerList,
        field('Extra header', headerName),
        field('Value of the extra header', headerValue),
        addHeader,
      ),
      h('div', { class: 'connection-actions' }, testBtn, remove),
      status,
      models,
    );
  };

  picker.addEventListener('change', () => {
    current = connections.get(picker.value);
    render();
  });
  add.addEventListener('click', async () => {
    current = await connections.add({ name: 'New connection' });
    fillPicker();
    render();
    editor.querySelector<HTMLSelectElement>('select[name="preset"]')?.focus();
  });
  fillPicker();
  render();
  return section;
}
