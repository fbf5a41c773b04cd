// Follow new text in the conversation unless the person scrolled up; then offer "Jump to latest"; browser app, trusted
// side.
import { h } from '../dom.js';

/** How close to the bottom (px) still counts as "at the newest text". */
const NEAR = 48;

/**
 * Keeps `scroller` (the conversation's only scrolling element) at its bottom while new content arrives, as long as
 * the person has not scrolled up away from the bottom. When they have, `button` ("Jump to latest") appears; pressing
 * it, or scrolling back down to the bottom, follows again. A scroll that moves down without reaching the bottom (the
 * browser keeping content in place as it grows, a partial scroll down) changes nothing.
 */
export class ScrollFollower {
  readonly button = h('button', { type: 'button', class: 'jump-latest', hidden: true }, 'Jump to latest');
  #follow = true;
  #programmatic = false;
  #queued = false;
  /** scrollTop at the last scroll event (px): the direction of the next one. */
  #lastTop = 0;

  constructor(readonly scroller: HTMLElement) {
    scroller.addEventListener('scroll', () => {
      const top = scroller.scrollTop;
      const up = top < this.#lastTop - 1;
      this.#lastTop = top;
      if (this.#programmatic) {
        this.#programmatic = false;
        return;
      }
      // Only moving up leaves the newest text: the browser's own adjustments while content grows (scroll anchoring,
      // CSS Scroll Anchoring 1) move the view down a little and must not stop following, e.g. after "Allow once".
      if (this.#atBottom()) this.#follow = true;
      else if (up) this.#follow = false;
      this.button.hidden = this.#follow;
      if (this.#follow) this.changed();
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
