// The "Model" menu of a conversation's header: every connection's models (listed by the provider, its default, the
// conversation's own), a typed name allowed; browser app, trusted side.
import type { ConnectionRecord } from '../app-db.js';
import { h, replaceChildren } from '../dom.js';
import type { Choice } from './connections.js';

/** The option value for `model` of connection `id` (a model name may hold any character). */
const valueOf = (id: string, model: string | null) => JSON.stringify([id, model]);

/** The models a connection's group lists: those its provider listed, its default model, `extra`; sorted, unique. */
export function menuModels(c: ConnectionRecord, extra: string[] = []): string[] {
  return [...new Set([...(c.models ?? []), c.model, ...extra].filter((m) => m.trim()))].sort((a, b) =>
    a.localeCompare(b),
  );
}

/**
 * A `select` named "Model": one group per connection (named after it) with its models, then "Type a model name…" per
 * connection, which shows a "Model name" box (free text, Enter or leaving it applies). `pick(id, model)` runs when the
 * person chooses. With no connection it says so and offers "Set up a connection".
 */
export class ModelMenu {
  readonly select = h('select', { name: 'model-menu', class: 'model-menu' });
  readonly typed = h('input', {
    type: 'text',
    class: 'model-typed',
    'aria-label': 'Model name',
    placeholder: 'model name',
    spellcheck: 'false',
    autocomplete: 'off',
    hidden: true,
  });
  readonly setup = h('button', { type: 'button', hidden: true }, 'Set up a connection');
  readonly root: HTMLElement;
  #typingFor: string | undefined;
  #choice: Choice | undefined;

  constructor(
    private readonly pick: (id: string, model: string) => void,
    openSettings: () => void,
  ) {
    this.root = h(
      'div',
      { class: 'model-picker' },
      h('label', { class: 'model-label' }, h('span', {}, 'Model'), this.select),
      this.typed,
      this.setup,
    );
    this.setup.addEventListener('click', openSettings);
    this.select.addEventListener('change', () => {
      const [id, model] = JSON.parse(this.select.value) as [string, string | null];
      if (model === null) {
        this.#typingFor = id;
        this.typed.hidden = false;
        this.typed.value = '';
        this.typed.focus();
        return;
      }
      this.typed.hidden = true;
      this.pick(id, model);
    });
    const commit = () => {
      const m = this.typed.value.trim();
      if (!this.#typingFor || !m) return;
      const id = this.#typingFor;
      this.#typingFor = undefined;
      this.typed.hidden = true;
      this.pick(id, m.slice(0, 200));
      this.select.focus();
    };
    this.typed.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') {
        ev.preventDefault();
        commit();
      } else if (ev.key === 'Escape') {
        ev.stopPropagation();
        this.#typingFor = undefined;
        this.typed.hidden = true;
        this.show(this.#choice, this.#all);
        this.select.focus();
      }
    });
    this.typed.addEventListener('change', commit);
  }

  #all: readonly ConnectionRecord[] = [];

  /** Show `connections` with `choice` selected (the conversation's connection and model). */
  show(choice: Choice | undefined, connections: readonly ConnectionRecord[]): void {
    this.#choice = choice;
    this.#all = connections;
    const groups = connections.map((c) => {
      const extra = choice?.connection.id === c.id && !choice.link ? [choice.model] : [];
      return h(
        'optgroup',
        { label: c.name },
        ...menuModels(c, extra).map((m) => h('option', { value: valueOf(c.id, m) }, m)),
      );
    });
    const link =
      choice?.link && choice.model
        ? [
            h(
              'optgroup',
              { label: `${choice.connection.name} (from the link, this visit)` },
              h('option', { value: valueOf(choice.connection.id, choice.model) }, choice.model),
            ),
          ]
        : [];
    const other = connections.length
      ? [
          h(
            'optgroup',
            { label: 'Other' },
            ...connections.map((c) => h('option', { value: valueOf(c.id, null) }, `Type a model name for ${c.name}…`)),
          ),
        ]
      : [];
    replaceChildren(
      this.select,
      ...(connections.length || link.length
        ? [...link, ...groups, ...other]
        : [h('option', { value: '' }, 'No connection yet')]),
    );
    this.select.disabled = connections.length === 0 && link.length === 0;
    this.setup.hidden = connections.length > 0;
    if (choice?.model) this.select.value = valueOf(choice.connection.id, choice.model);
    else if (connections.length) this.select.selectedIndex = -1;
  }
}
