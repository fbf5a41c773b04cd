// The app's keyboard shortcuts: what each key does, the handler on the page, and the "Keyboard shortcuts" dialog;
// browser app, trusted side.
import { h } from '../dom.js';

export interface ShortcutActions {
  /** Ctrl/Cmd+K: focus "Search conversations". */
  search(): void;
  /** Ctrl/Cmd+Shift+O: a new conversation, focus in the message box. */
  newConversation(): void;
  /** `/`: focus the message box. */
  focusMessage(): void;
  /** Ctrl/Cmd+Shift+C: copy the last answer. */
  copyLastAnswer(): void;
  /** `?` or Ctrl/Cmd+/: the "Keyboard shortcuts" dialog. */
  showShortcuts(): void;
}

/** The shortcuts as the dialog lists them (and docs/app.md): keys, what they do. */
export const SHORTCUTS: readonly { keys: string; does: string }[] = [
  { keys: 'Ctrl+K (⌘K)', does: 'Search conversations' },
  { keys: 'Ctrl+Shift+O (⌘⇧O)', does: 'New conversation' },
  { keys: '/', does: 'Focus the message box' },
  { keys: 'Ctrl+Shift+C (⌘⇧C)', does: 'Copy the last answer' },
  { keys: 'Escape', does: 'Close the open panel, drawer, menu or dialog; focus goes back where it was' },
  { keys: 'Enter / Shift+Enter', does: 'Send the message / a new line' },
  { keys: '↑ ↓ Home End', does: 'Move through the conversation list (one Tab stop)' },
  { keys: 'F2 / double-click', does: 'Rename the conversation (in the list or its title)' },
  { keys: 'Delete', does: 'Delete the conversation under focus in the list (Undo follows)' },
  { keys: '? or Ctrl+/ (⌘/)', does: 'Show these shortcuts' },
];

/** Is `el` a place where typing goes (so `/` and `?` are text there, not shortcuts)? */
function typingIn(el: EventTarget | null): boolean {
  const e = el as HTMLElement | null;
  if (!e || !(e instanceof HTMLElement)) return false;
  if (e.isContentEditable) return true;
  if (e instanceof HTMLTextAreaElement || e instanceof HTMLSelectElement) return true;
  return e instanceof HTMLInputElement && !['checkbox', 'radio', 'button', 'submit', 'file', 'range'].includes(e.type);
}

/**
 * Listen for the shortcuts on `doc`. Ctrl (Cmd on a Mac) combinations work everywhere, the browser's own meaning of
 * the same keys is prevented; `/` and `?` only where they would not be typed as text. Returns the remover.
 */
export function installShortcuts(doc: Document, a: ShortcutActions): () => void {
  const onKey = (ev: KeyboardEvent) => {
    if (ev.defaultPrevented || ev.isComposing) return;
    const mod = ev.ctrlKey || ev.metaKey;
    const key = ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
    let run: (() => void) | undefined;
    if (mod && !ev.shiftKey && !ev.altKey && key === 'k') run = a.search;
    else if (mod && ev.shiftKey && !ev.altKey && key === 'o') run = a.newConversation;
    else if (mod && ev.shiftKey && !ev.altKey && key === 'c') run = a.copyLastAnswer;
    else if (mod && !ev.altKey && key === '/') run = a.showShortcuts;
    else if (!mod && !ev.altKey && key === '/' && !typingIn(ev.target)) run = a.focusMessage;
    else if (!mod && !ev.altKey && key === '?' && !typingIn(ev.target)) run = a.showShortcuts;
    if (!run) return;
    ev.preventDefault();
    run();
  };
  doc.addEventListener('keydown', onKey);
  return () => doc.removeEventListener('keydown', onKey);
}

/**
 * The "Keyboard shortcuts" dialog (a modal `dialog`: focus stays inside, Escape or "Close" closes it and focus goes
 * back to where it was).
 */
export class ShortcutsDialog {
  readonly dialog: HTMLDialogElement;
  #back: HTMLElement | null = null;

  constructor() {
    const close = h('button', { type: 'button', class: 'close-panel' }, 'Close');
    this.dialog = h(
      'dialog',
      { class: 'shortcuts', 'aria-labelledby': 'shortcuts-title' },
      close,
      h('h2', { id: 'shortcuts-title' }, 'Keyboard shortcuts'),
      h(
        'table',
        {},
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Keys'), h('th', { scope: 'col' }, 'What it does'))),
        h('tbody', {}, ...SHORTCUTS.map((s) => h('tr', {}, h('td', {}, h('kbd', {}, s.keys)), h('td', {}, s.does)))),
      ),
    );
    close.addEventListener('click', () => this.dialog.close());
    this.dialog.addEventListener('close', () => {
      const back = this.#back;
      this.#back = null;
      if (back?.isConnected) back.focus();
    });
  }

  open(): void {
    if (this.dialog.open) return;
    this.#back = document.activeElement as HTMLElement | null;
    if (!this.dialog.isConnected) document.body.append(this.dialog);
    this.dialog.showModal();
    this.dialog.querySelector<HTMLElement>('.close-panel')?.focus();
  }
}
