// The conversation list: grouped (Pinned, Today, Yesterday, Previous 7 days, Older), one Tab stop with arrow keys (a
// roving tabindex), rename by double-click or F2, Delete; browser app, trusted side.
import { h, replaceChildren } from '../dom.js';
import { GROUPS, groupOf, whenText, type Group } from './groups.js';
import { inlineRename } from './rename.js';

/** A conversation as the list shows it. */
export interface ListEntry {
  id: string;
  title: string;
  updated: number;
  pinned?: boolean;
  /** The matching text of a search ('' or absent: none shown). */
  snippet?: string;
}

export interface ListActions {
  open(id: string): void;
  rename(id: string, title: string): void;
  remove(id: string): void;
}

/**
 * The list (`ul` named "Conversations"): a heading and a list per group, one button per conversation (its title and
 * when it was last updated), the current one `aria-current`. Only one button is in the Tab order (the current one, or
 * the one last moved to); ArrowDown / ArrowUp / Home / End move between them, Enter opens, F2 or a double-click renames
 * in place, Delete deletes (with Undo).
 */
export class ConversationList {
  readonly root = h('ul', { class: 'conv-list', 'aria-label': 'Conversations' });
  readonly #empty = h('p', { class: 'conv-empty', hidden: true });
  /** Buttons kept per conversation between renders, so a double-click lands on the element its first click hit. */
  readonly #els = new Map<string, HTMLButtonElement>();
  #current = '';
  /** A render asked for while a title is being edited in the list (done when the edit ends). */
  #pending: (() => void) | undefined;

  constructor(private readonly actions: ListActions) {
    this.root.addEventListener('keydown', (ev) => this.#key(ev));
  }

  /** The element to put in the sidebar: the list and the line shown when nothing matches. */
  get element(): HTMLElement[] {
    return [this.root, this.#empty];
  }

  #buttons(): HTMLButtonElement[] {
    return [...this.root.querySelectorAll<HTMLButtonElement>('button.conv')];
  }

  /** Make `b` the list's one Tab stop. */
  #rove(b: HTMLButtonElement | undefined): void {
    for (const x of this.#buttons()) x.tabIndex = x === b ? 0 : -1;
  }

  #key(ev: KeyboardEvent): void {
    const target = ev.target as HTMLElement;
    if (!(target instanceof HTMLButtonElement) || !target.classList.contains('conv')) return;
    const all = this.#buttons();
    const i = all.indexOf(target);
    let next: HTMLButtonElement | undefined;
    if (ev.key === 'ArrowDown') next = all[Math.min(all.length - 1, i + 1)];
    else if (ev.key === 'ArrowUp') next = all[Math.max(0, i - 1)];
    else if (ev.key === 'Home') next = all[0];
    else if (ev.key === 'End') next = all[all.length - 1];
    else if (ev.key === 'F2') {
      ev.preventDefault();
      this.startRename(target.dataset.id!);
      return;
    } else if (ev.key === 'Delete') {
      ev.preventDefault();
      this.actions.remove(target.dataset.id!);
      return;
    } else return;
    ev.preventDefault();
    this.#rove(next);
    next?.focus();
  }

  /**
   * Show `entries` (newest first) grouped at `now`. `query`: a search is on (an empty result says so). Keeps the Tab
   * stop on the current conversation.
   */
  render(entries: ListEntry[], current: string, now = Date.now(), query = ''): void {
    if (this.root.querySelector('.rename-box')) {
      this.#pending = () => this.render(entries, current, now, query);
      return;
    }
    this.#pending = undefined;
    this.#current = current;
    const focusedId = (document.activeElement as HTMLElement | null)?.closest?.('button.conv')
      ? (document.activeElement as HTMLElement).dataset.id
      : undefined;
    for (const id of [...this.#els.keys()]) if (!entries.some((e) => e.id === id)) this.#els.delete(id);
    const by = new Map<Group, ListEntry[]>();
    for (const e of entries) {
      const g = groupOf(e.updated, now, e.pinned);
      by.set(g, [...(by.get(g) ?? []), e]);
    }
    replaceChildren(
      this.root,
      ...GROUPS.filter((g) => by.has(g)).map((g) => {
        const headingId = `conv-group-${g.replace(/\W+/g, '-').toLowerCase()}`;
        return h(
          'li',
          { class: 'conv-group' },
          h('h3', { id: headingId }, g),
          h('ul', { 'aria-labelledby': headingId }, ...by.get(g)!.map((e) => this.#item(e, now))),
        );
      }),
    );
    this.#empty.hidden = !(query && entries.length === 0);
    this.#empty.textContent = query ? `No conversation matches "${query}".` : '';
    const buttons = this.#buttons();
    const keep = buttons.find((b) => b.dataset.id === focusedId);
    this.#rove(keep ?? buttons.find((b) => b.dataset.id === current) ?? buttons[0]);
    keep?.focus();
  }

  #item(e: ListEntry, now: number): HTMLElement {
    let b = this.#els.get(e.id);
    if (!b) {
      const id = e.id;
      b = h('button', { type: 'button', class: 'conv', 'data-id': id, tabindex: -1 });
      b.addEventListener('click', () => this.actions.open(id));
      b.addEventListener('dblclick', (ev) => {
        ev.preventDefault();
        this.startRename(id);
      });
      const el = b;
      b.addEventListener('focus', () => this.#rove(el));
      this.#els.set(id, b);
    }
    if (e.id === this.#current) b.setAttribute('aria-current', 'true');
    else b.removeAttribute('aria-current');
    replaceChildren(
      b,
      h('span', { class: 'conv-title' }, e.title),
      h('span', { class: 'conv-when' }, whenText(e.updated, now)),
      e.snippet ? h('span', { class: 'conv-snippet' }, e.snippet) : null,
    );
    return h('li', {}, b);
  }

  /** Rename conversation `id` in place (a "Conversation title" box: Enter saves, Escape cancels). */
  startRename(id: string): void {
    const b = this.#buttons().find((x) => x.dataset.id === id);
    if (!b) return;
    const title = b.querySelector('.conv-title')?.textContent ?? '';
    inlineRename(
      b,
      title,
      (t) => this.actions.rename(id, t),
      () => this.#pending?.(),
    );
  }

  /** Put focus on the list's Tab stop (the current conversation). */
  focus(): void {
    (this.#buttons().find((b) => b.tabIndex === 0) ?? this.#buttons()[0])?.focus();
  }
}
