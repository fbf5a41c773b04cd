// Follow new text in the conversation unless the person scrolled up; then offer "Jump to latest"; browser app, trusted
// side.
import { h } from '../dom.js';

/** How close to the bottom (px) still counts as "at the newest text". */
const NEAR = 48;

/**
 * Keeps `scroller` (the conversation's only scrolling element) at its bottom while new content arrives, as long as
 * the person has not scrolled away from the bottom. When they have, `button` ("Jump to latest") appears; pressing it,
 * or scrolling back down, follows again.
 */
export class ScrollFollower {
  readonly button = h('button', { type: 'button', class: 'jump-latest', hidden: true }, 'Jump to latest');
  #follow = true;
  #programmatic = false;
  #queued = false;

  constructor(readonly scroller: HTMLElement) {
    scroller.addEventListener('scroll', () => {
      if (this.#programmatic) {
        this.#programmatic = false;
        return;
      }
      this.#follow = this.#atBottom();
      this.button.hidden = this.#follow;
    });
    this.button.addEventListener('click', () => this.jump());
  }

  #atBottom(): boolean {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight <= NEAR;
  }

  /** Content changed: stay at the bottom when following, else show the button. */
  changed(): void {
    if (this.#queued) return;
    this.#queued = true;
    requestAnimationFrame(() => {
      this.#queued = false;
      if (this.#follow) this.#toBottom();
      else this.button.hidden = this.#atBottom();
    });
  }

  jump(): void {
    this.#follow = true;
    this.button.hidden = true;
    this.#toBottom();
  }

  #toBottom(): void {
    const s = this.scroller;
    if (s.scrollHeight - s.scrollTop - s.clientHeight < 1) return;
    this.#programmatic = true;
    s.scrollTop = s.scrollHeight;
  }
}
