// A conversation's header: its title (double-click or "Rename" renames it), the "Model" menu, the tokens it used, "Pin"
// and "Delete"; browser app, trusted side.
import type { ConversationRecord } from '../app-db.js';
import { h } from '../dom.js';
import { inlineRename } from './rename.js';

export interface HeaderActions {
  rename(title: string): void;
  togglePin(): void;
  remove(): void;
}

/** Tokens of every reply of a conversation (all branches) the provider reported; undefined when none reported any. */
export function conversationUsage(
  r: Pick<ConversationRecord, 'replies'>,
): { input: number; output: number } | undefined {
  let input = 0;
  let output = 0;
  let any = false;
  for (const m of Object.values(r.replies ?? {})) {
    if (m.input !== undefined) {
      input += m.input;
      any = true;
    }
    if (m.output !== undefined) {
      output += m.output;
      any = true;
    }
  }
  return any ? { input, output } : undefined;
}

const fmt = (n: number) => n.toLocaleString('en-US');

/** "1,234 in · 56 out" (a side the provider did not report is left out). */
export function tokensText(u: { input?: number; output?: number }): string {
  return [u.input !== undefined ? `${fmt(u.input)} in` : '', u.output !== undefined ? `${fmt(u.output)} out` : '']
    .filter(Boolean)
    .join(' · ');
}

/** The header above the conversation (inside the main column). `modelMenu` is the ModelMenu's element. */
export class ConversationHeader {
  readonly title = h('h2', { class: 'conv-heading', title: 'Double-click to rename' });
  readonly usage = h('p', { class: 'conv-usage', hidden: true });
  readonly pin = h('button', { type: 'button', 'aria-pressed': 'false' }, 'Pin');
  readonly root: HTMLElement;
  #title = '';

  constructor(
    private readonly actions: HeaderActions,
    modelMenu: HTMLElement,
  ) {
    const rename = h('button', { type: 'button' }, 'Rename');
    const del = h('button', { type: 'button', class: 'deny' }, 'Delete');
    rename.addEventListener('click', () => this.startRename());
    this.title.addEventListener('dblclick', () => this.startRename());
    this.pin.addEventListener('click', () => actions.togglePin());
    del.addEventListener('click', () => actions.remove());
    this.root = h(
      'div',
      { class: 'conv-header' },
      h('div', { class: 'conv-head-row' }, this.title, h('div', { class: 'conv-actions' }, rename, this.pin, del)),
      h('div', { class: 'conv-head-row' }, modelMenu, this.usage),
    );
  }

  /** Show conversation `r`: its title, pinned state and token total. */
  show(r: ConversationRecord): void {
    this.#title = r.title;
    if (!this.root.querySelector('.rename-box')) this.title.textContent = r.title;
    this.pin.setAttribute('aria-pressed', String(r.pinned === true));
    const u = conversationUsage(r);
    this.usage.hidden = !u;
    this.usage.textContent = u ? `Tokens: ${tokensText(u)}` : '';
  }

  /** Edit the title in place (a "Conversation title" box). */
  startRename(): void {
    this.title.tabIndex = -1;
    inlineRename(this.title, this.#title, (t) => this.actions.rename(t));
  }
}
