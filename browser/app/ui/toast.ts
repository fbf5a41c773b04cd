// A short message above the composer that says what just happened ("Deleted …", "Copied …"), with one action
// ("Undo"); browser app, trusted side.
import { h, replaceChildren } from '../dom.js';

/**
 * One message at a time in a polite live region (screen readers announce it), gone after `ms` or when replaced; an
 * action button ("Undo") runs at most once. `hide()` clears it.
 */
export class Toast {
  readonly root = h('div', { class: 'toast', role: 'status', 'aria-live': 'polite' });
  #timer: ReturnType<typeof setTimeout> | undefined;
  #onEnd: (() => void) | undefined;

  /** Show `text` for `ms`; `action` adds its button; `onEnd` runs when the message goes without the action. */
  show(text: string, ms = 4000, action?: { label: string; run(): void }, onEnd?: () => void): void {
    this.hide();
    this.#onEnd = onEnd;
    let b: HTMLButtonElement | null = null;
    if (action) {
      b = h('button', { type: 'button' }, action.label);
      b.addEventListener('click', () => {
        this.#onEnd = undefined;
        this.hide();
        action.run();
      });
    }
    replaceChildren(this.root, h('span', {}, text), b);
    this.root.classList.add('shown');
    this.#timer = setTimeout(() => this.hide(), ms);
  }

  /** Clear the message now (its onEnd runs if it had one). */
  hide(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const end = this.#onEnd;
    this.#onEnd = undefined;
    this.root.classList.remove('shown');
    replaceChildren(this.root);
    end?.();
  }
}
