// Renaming in place: a "Conversation title" box over the title (Enter or leaving saves, Escape cancels); browser app,
// trusted side.
import { h } from '../dom.js';
import { MAX_TITLE } from './groups.js';

/**
 * Hide `target` and show a "Conversation title" box with `title` selected in its place. Enter or leaving the box calls
 * `commit` with the new title (when it is not empty and changed); Escape cancels without closing anything else. Focus
 * returns to `target` afterwards, then `onDone` runs.
 */
export function inlineRename(
  target: HTMLElement,
  title: string,
  commit: (title: string) => void,
  onDone: () => void = () => {},
): void {
  if (target.previousElementSibling?.classList.contains('rename-box')) return;
  const input = h('input', {
    type: 'text',
    class: 'rename-box',
    'aria-label': 'Conversation title',
    maxlength: MAX_TITLE,
    value: title,
    spellcheck: 'false',
    autocomplete: 'off',
  });
  let done = false;
  const finish = (save: boolean) => {
    if (done) return;
    done = true;
    const t = input.value.replace(/\s+/g, ' ').trim();
    input.remove();
    target.hidden = false;
    target.focus();
    if (save && t && t !== title) commit(t.slice(0, MAX_TITLE));
    onDone();
  };
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') {
      ev.preventDefault();
      finish(true);
    } else if (ev.key === 'Escape') {
      ev.preventDefault();
      ev.stopPropagation();
      finish(false);
    }
    ev.stopPropagation();
  });
  input.addEventListener('blur', () => finish(true));
  target.before(input);
  target.hidden = true;
  input.focus();
  input.select();
}
