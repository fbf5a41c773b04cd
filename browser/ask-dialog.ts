// AskChannel for the page: a modal <dialog> showing the sanitized question and the server's hints, one at a time; browser host, trusted side.
import type { Answer, AskChannel, Question } from '../core/runtime.js';
import { renderQuestion } from '../core/text.js';

export interface DialogAskOptions {
  /** Where the dialog is attached (default `document.body`). */
  container?: HTMLElement;
  /** Channel name reported in answers (default `browser-dialog`). */
  name?: string;
}

const SCOPE_LABEL: Record<Answer['scope'], string> = { once: 'Allow once', session: 'Allow for this session', permanent: 'Always allow' };

/**
 * Presents questions in a modal `<dialog>`. Text comes only from core/text.ts `renderQuestion` (control, bidi,
 * zero-width and other invisible characters escaped, lines cut at 600 characters with a marker) and is set
 * with `textContent`, never parsed as HTML. Server hints are shown as a labelled line and never skip the
 * question. One question at a time: a second `ask` waits until the first is answered, aborted or closed.
 * Closing the dialog (Escape) or pressing Deny answers `{ allow: false }`; an abort removes the dialog and
 * resolves `undefined` (no answer from this channel).
 */
export class DialogAskChannel implements AskChannel {
  readonly name: string;
  #queue: Promise<unknown> = Promise.resolve();
  #current: HTMLDialogElement | undefined;

  constructor(readonly options: DialogAskOptions = {}) {
    this.name = options.name ?? 'browser-dialog';
  }

  /** A person can see the page: a DOM exists and the page is visible. */
  live(): boolean {
    return typeof document !== 'undefined' && document.visibilityState === 'visible';
  }

  /** The dialog on screen now, if any (tests and embedders). */
  get current(): HTMLDialogElement | undefined {
    return this.#current;
  }

  ask(q: Question, signal: AbortSignal): Promise<Answer | undefined> {
    const run = this.#queue.then(() => this.#present(q, signal));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  #present(q: Question, signal: AbortSignal): Promise<Answer | undefined> {
    if (signal.aborted) return Promise.resolve(undefined);
    return new Promise<Answer | undefined>((resolve) => {
      const dialog = document.createElement('dialog');
      dialog.setAttribute('data-tysandbox-question', '');
      const lines = renderQuestion(q);
      const title = document.createElement('h2');
      title.textContent = lines[0] ?? '';
      dialog.appendChild(title);
      const body = document.createElement('pre');
      body.style.whiteSpace = 'pre-wrap';
      body.textContent = lines.slice(1).map((l) => l.replace(/^ {2}/, '')).join('\n');
      dialog.appendChild(body);
      const buttons = document.createElement('form');
      buttons.method = 'dialog';
      let done = false;
      const finish = (a: Answer | undefined) => {
        if (done) return;
        done = true;
        signal.removeEventListener('abort', onAbort);
        if (dialog.open) dialog.close();
        dialog.remove();
        if (this.#current === dialog) this.#current = undefined;
        resolve(a);
      };
      const onAbort = () => finish(undefined);
      const add = (label: string, answer: Answer, value: string) => {
        const b = document.createElement('button');
        b.type = 'button';
        b.value = value;
        b.textContent = label;
        b.addEventListener('click', () => finish(answer));
        buttons.appendChild(b);
      };
      add('Deny', { allow: false, scope: 'once', channel: this.name }, 'deny');
      const scopes = q.scopes && q.scopes.length > 0 ? q.scopes : (['once'] as const);
      for (const s of scopes) if (s in SCOPE_LABEL) add(SCOPE_LABEL[s], { allow: true, scope: s, channel: this.name }, `allow-${s}`);
      dialog.appendChild(buttons);
      dialog.addEventListener('cancel', (ev) => {
        ev.preventDefault();
        finish({ allow: false, scope: 'once', channel: this.name });
      });
      signal.addEventListener('abort', onAbort, { once: true });
      (this.options.container ?? document.body).appendChild(dialog);
      this.#current = dialog;
      dialog.showModal();
      // Deny has focus, so a stray Enter never allows.
      (buttons.firstElementChild as HTMLButtonElement | null)?.focus();
    });
  }
}
