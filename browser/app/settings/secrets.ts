// Settings → Tool secrets: values tools may ask for, names listed, values never shown again; browser app, trusted
// side.
import { h } from '../dom.js';
import type { AppDb } from '../app-db.js';
import { field } from './panel.js';

/** Tool secrets: names listed (values never shown again), add or replace one, remove one. */
export function secretsSection(db: AppDb): HTMLElement {
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
