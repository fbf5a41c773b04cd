// The settings form of one tool revision in the tools panel (host.tools.settings / setSettings); browser app, trusted
// side.
import type { BrowserHost } from '../../host.js';
import { isTyError } from '../../../core/errors.js';
import { h, replaceChildren, shortId } from '../dom.js';

type Field = {
  key: string;
  kind: 'enum' | 'boolean' | 'number' | 'string' | 'json';
  el: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;
  integer: boolean;
};

const errorText = (e: unknown) =>
  isTyError(e) ? `${e.code}: ${e.message}` : e instanceof Error ? e.message : String(e);

function fieldFor(key: string, schema: Record<string, unknown>, label: string): Field {
  const type = schema.type;
  if (Array.isArray(schema.enum)) {
    const el = h(
      'select',
      { 'aria-label': label },
      h(
        'option',
        { value: '' },
        schema.default !== undefined ? `(default: ${JSON.stringify(schema.default)})` : '(not set)',
      ),
      ...schema.enum.map((v) =>
        h('option', { value: JSON.stringify(v) }, typeof v === 'string' ? v : JSON.stringify(v)),
      ),
    );
    return { key, kind: 'enum', el, integer: false };
  }
  if (type === 'boolean') {
    const el = h(
      'select',
      { 'aria-label': label },
      h('option', { value: '' }, schema.default !== undefined ? `(default: ${String(schema.default)})` : '(not set)'),
      h('option', { value: 'true' }, 'true'),
      h('option', { value: 'false' }, 'false'),
    );
    return { key, kind: 'boolean', el, integer: false };
  }
  const placeholder =
    schema.default !== undefined
      ? `default: ${typeof schema.default === 'string' ? schema.default : JSON.stringify(schema.default)}`
      : '';
  if (type === 'number' || type === 'integer')
    return {
      key,
      kind: 'number',
      el: h('input', { type: 'number', 'aria-label': label, placeholder, step: type === 'integer' ? '1' : 'any' }),
      integer: type === 'integer',
    };
  if (type === 'string')
    return {
      key,
      kind: 'string',
      el: h('input', {
        type: schema.format === 'uri' ? 'url' : 'text',
        'aria-label': label,
        placeholder,
        spellcheck: 'false',
      }),
      integer: false,
    };
  return {
    key,
    kind: 'json',
    el: h('textarea', { rows: 2, 'aria-label': label, placeholder: placeholder || 'JSON', spellcheck: 'false' }),
    integer: false,
  };
}

function show(f: Field, value: unknown): void {
  if (value === undefined) f.el.value = '';
  else if (f.kind === 'enum') f.el.value = JSON.stringify(value);
  else if (f.kind === 'boolean') f.el.value = String(value);
  else if (f.kind === 'json') f.el.value = JSON.stringify(value);
  else f.el.value = String(value);
}

/**
 * The value a field holds, or undefined when it is empty (the key is then unset). @throws Error for JSON that does not
 * parse.
 */
function read(f: Field): unknown {
  const v = f.el.value.trim();
  if (v === '') return undefined;
  if (f.kind === 'enum') return JSON.parse(v) as unknown;
  if (f.kind === 'boolean') return v === 'true';
  if (f.kind === 'number') return Number(v);
  if (f.kind === 'json') {
    try {
      return JSON.parse(v) as unknown;
    } catch {
      throw new Error(`${f.key} is not JSON`);
    }
  }
  return f.el.value;
}

/**
 * The settings form of `name@active`: one field per top-level property of the manifest's settings schema (labelled
 * by its name), "Save settings" (a new settings revision, checked against the schema by the host), and "Carry settings
 * over from" other revisions of the tool that have settings (a new revision starts with none).
 */
export async function settingsForm(
  tools: BrowserHost['tools'],
  name: string,
  active: string,
  others: string[],
  say: (t: string) => void,
): Promise<HTMLElement> {
  const view = await tools.settings(`${name}@${active}`);
  const props = (view.schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const fields = Object.entries(props).map(([k, s]) =>
    fieldFor(k, s && typeof s === 'object' ? s : {}, `${k} (${name})`),
  );
  for (const f of fields) show(f, view.values[f.key]);
  const revLine = h('p', { class: 'settings-revision' });
  const setRevLine = (rev: string | undefined) => {
    replaceChildren(
      revLine,
      rev
        ? h('span', {}, 'Settings revision ', h('code', { title: rev }, `@${shortId(rev)}`))
        : h('span', {}, 'No settings stored for this revision: defaults apply.'),
    );
  };
  setRevLine(view.settingsRevision);
  let from: string | undefined;
  const sources: string[] = [];
  for (const rev of others) {
    try {
      if ((await tools.settings(`${name}@${rev}`)).settingsRevision) sources.push(rev);
    } catch {
      /* that revision declares no settings */
    }
  }
  const carry = sources.length
    ? h(
        'select',
        { 'aria-label': `Carry settings over from (${name})` },
        h('option', { value: '' }, '(this revision)'),
        ...sources.map((r) => h('option', { value: r }, `@${shortId(r)}`)),
      )
    : null;
  carry?.addEventListener('change', async () => {
    from = carry.value || undefined;
    const src = await tools.settings(`${name}@${from ?? active}`);
    for (const f of fields) show(f, src.values[f.key]);
  });
  const save = h('button', { type: 'submit' }, 'Save settings');
  const form = h(
    'form',
    { class: 'tool-settings', 'aria-label': `Settings of ${name}` },
    h('h4', {}, 'Settings'),
    revLine,
    ...fields.map((f) =>
      h(
        'label',
        { class: 'field' },
        h('span', { class: 'label' }, f.key),
        f.el,
        typeof props[f.key]?.description === 'string'
          ? h('small', {}, String(props[f.key]!.description).slice(0, 200))
          : null,
      ),
    ),
    carry ? h('label', { class: 'field' }, h('span', { class: 'label' }, 'Carry settings over from'), carry) : null,
    h('p', { class: 'hint' }, 'Settings are not secrets: keep keys and tokens in Secrets. Every change is audited.'),
    save,
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const set: Record<string, unknown> = {};
      const unset: string[] = [];
      for (const f of fields) {
        const v = read(f);
        if (v === undefined) unset.push(f.key);
        else set[f.key] = v;
      }
      const r = await tools.setSettings(`${name}@${active}`, set, { unset, ...(from ? { from } : {}) });
      setRevLine(r.settingsRevision);
      from = undefined;
      if (carry) carry.value = '';
      say(`Saved the settings of ${name} @${shortId(active)}: settings revision @${shortId(r.settingsRevision)}.`);
    } catch (e) {
      say(`Settings not saved: ${errorText(e)}`);
    }
  });
  return form;
}
