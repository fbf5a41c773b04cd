// AskChannel for the page: a modal <dialog> in its own shadow root (page CSS cannot restyle or hide it), plain
// sanitized text, one question at a time; browser host, trusted side.
import type { Answer, AskChannel, Question } from '../../core/exec/runtime.js';
import { plainQuestion } from './text.js';
import { renderForm } from './form.js';

export interface DialogAskOptions {
  /** Where the dialog's host element is attached (default `document.body`). */
  container?: HTMLElement;
  /** Channel name reported in answers (default `browser-dialog`). */
  name?: string;
  /**
   * While the page is hidden, keep a question waiting and show it when the page becomes visible (default true);
   * false: a hidden page is not a live channel (questions go elsewhere or are refused at once).
   */
  waitWhileHidden?: boolean;
}

const SCOPE_LABEL: Record<Answer['scope'], string> = {
  once: 'Allow once',
  session: 'Allow for this session',
  permanent: 'Always allow',
};

/** The dialog's own styles, adopted by its shadow root (a constructed stylesheet: allowed under a strict style-src). */
const DIALOG_CSS = `
:host { all: initial; }
dialog { all: revert; box-sizing: border-box; max-width: min(40rem, 92vw); max-height: 86vh; overflow: auto; padding: 1.25rem;
  border: 1px solid #888; border-radius: 8px; background: #fff; color: #111; font: 15px/1.45 system-ui, sans-serif; opacity: 1; visibility: visible; }
dialog::backdrop { background: rgb(0 0 0 / 0.45); }
h2 { all: revert; font-size: 1.15rem; margin: 0 0 0.75rem; }
p, pre, details, summary { all: revert; margin: 0.25rem 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; font: 13px/1.4 ui-monospace, monospace; background: #f3f3f3; padding: 0.5rem; border-radius: 4px; }
.buttons { display: flex; flex-wrap: wrap; gap: 0.5rem; margin-top: 1rem; }
button { all: revert; font: inherit; padding: 0.4rem 0.9rem; cursor: pointer; }
button:focus-visible { outline: 3px solid #1a5fb4; outline-offset: 2px; }
`;
/** Declarations on the host element with `!important` in its style attribute: no page rule can beat them. */
const HOST_STYLE: [string, string][] = [
  ['display', 'block'],
  ['visibility', 'visible'],
  ['opacity', '1'],
  ['position', 'static'],
  ['filter', 'none'],
  ['transform', 'none'],
  ['clip-path', 'none'],
  ['content-visibility', 'visible'],
  ['contain', 'none'],
  ['pointer-events', 'auto'],
  ['mix-blend-mode', 'normal'],
  ['zoom', '1'],
];

let sheet: CSSStyleSheet | undefined;
function dialogSheet(): CSSStyleSheet {
  if (!sheet) {
    sheet = new CSSStyleSheet();
    sheet.replaceSync(DIALOG_CSS);
  }
  return sheet;
}

/**
 * Presents questions in a modal `<dialog>` inside an open shadow root of a `<tysandbox-question>` host element:
 * the page's stylesheets do not reach into it, and the host element's own visibility is pinned by important inline
 * declarations (set through CSSOM, allowed under a strict CSP). Text comes from browser/ask/text.ts `plainQuestion`
 * (plain words; every field sanitized by core/ask/text.ts; no flags, no internal terms), set with `textContent`, never
 * parsed as HTML; the revision shows as a short id that expands to the full one. One question at a time: a second
 * `ask` waits until the first is answered, aborted or closed. Escape or Deny answers `{ allow: false }`; an abort
 * removes the dialog and resolves `undefined` (no answer from this channel). Deny has focus.
 */
export class DialogAskChannel implements AskChannel {
  readonly name: string;
  /** Form questions (an MCP server's elicitation) are shown as a form (browser/ask/form.ts). */
  readonly forms = true;
  #queue: Promise<unknown> = Promise.resolve();
  #current: HTMLDialogElement | undefined;
  readonly #shown = new Set<string>();

  constructor(readonly options: DialogAskOptions = {}) {
    this.name = options.name ?? 'browser-dialog';
  }

  /** A person can see the page now, or (waitWhileHidden) will when it becomes visible. */
  live(): boolean {
    if (typeof document === 'undefined') return false;
    return document.visibilityState === 'visible' || this.options.waitWhileHidden !== false;
  }

  /** Whether question `id` was shown (a question that waited for a hidden page may never have been). */
  presented(id: string): boolean {
    return this.#shown.has(id);
  }

  /** The dialog on screen now, if any (in its shadow root; tests and embedders). */
  get current(): HTMLDialogElement | undefined {
    return this.#current;
  }

  ask(q: Question, signal: AbortSignal): Promise<Answer | undefined> {
    const run = this.#queue.then(() => this.#present(q, signal));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #present(q: Question, signal: AbortSignal): Promise<Answer | undefined> {
    if (signal.aborted) return undefined;
    if (document.visibilityState !== 'visible') {
      // Wait for the person to come back (the router's askWaitMs bounds the wait); nothing is shown meanwhile.
      const visible = await new Promise<boolean>((resolve) => {
        const onVis = () => {
          if (document.visibilityState !== 'visible') return;
          document.removeEventListener('visibilitychange', onVis);
          signal.removeEventListener('abort', onAbort);
          resolve(true);
        };
        const onAbort = () => {
          document.removeEventListener('visibilitychange', onVis);
          resolve(false);
        };
        document.addEventListener('visibilitychange', onVis);
        signal.addEventListener('abort', onAbort, { once: true });
      });
      if (!visible || signal.aborted) return undefined;
    }
    if (this.#shown.size > 256) this.#shown.clear();
    this.#shown.add(q.id);
    return new Promise<Answer | undefined>((resolve) => {
      const host = document.createElement('tysandbox-question');
      for (const [k, v] of HOST_STYLE) host.style.setProperty(k, v, 'important');
      const root = host.attachShadow({ mode: 'open' });
      root.adoptedStyleSheets = [dialogSheet()];
      const dialog = document.createElement('dialog');
      dialog.setAttribute('data-tysandbox-question', '');
      let done = false;
      const finish = (a: Answer | undefined) => {
        if (done) return;
        done = true;
        signal.removeEventListener('abort', onAbort);
        if (dialog.open) dialog.close();
        host.remove();
        if (this.#current === dialog) this.#current = undefined;
        resolve(a);
      };
      const onAbort = () => finish(undefined);
      let first: HTMLElement | undefined;
      if (q.form !== undefined) first = renderForm(document, dialog, q, this.name, (a) => finish(a));
      else {
        const text = plainQuestion(q);
        const title = document.createElement('h2');
        title.textContent = text.title;
        title.id = 'tysandbox-question-title';
        dialog.setAttribute('aria-labelledby', title.id);
        dialog.appendChild(title);
        const body = document.createElement('pre');
        body.textContent = text.lines.join('\n');
        dialog.appendChild(body);
        if (text.revision) {
          const rev = document.createElement('details');
          const sum = document.createElement('summary');
          sum.textContent = `Version ${text.revision.short}`;
          const full = document.createElement('p');
          full.textContent = text.revision.full;
          rev.append(sum, full);
          dialog.appendChild(rev);
        }
        if (text.preview.length > 0) {
          const label = document.createElement('p');
          label.textContent = 'With:';
          const args = document.createElement('pre');
          args.textContent = text.preview.join('\n');
          dialog.append(label, args);
        }
        const buttons = document.createElement('div');
        buttons.className = 'buttons';
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
        for (const s of scopes)
          if (s in SCOPE_LABEL) add(SCOPE_LABEL[s], { allow: true, scope: s, channel: this.name }, `allow-${s}`);
        dialog.appendChild(buttons);
        first = (buttons.firstElementChild as HTMLElement | null) ?? undefined;
      }
      dialog.addEventListener('cancel', (ev) => {
        ev.preventDefault();
        // Escape on a form dismisses it (MCP's cancel); on a question it is a no
        finish({
          allow: false,
          scope: 'once',
          channel: this.name,
          ...(q.form !== undefined ? { dismissed: true } : {}),
        });
      });
      signal.addEventListener('abort', onAbort, { once: true });
      root.appendChild(dialog);
      (this.options.container ?? document.body).appendChild(host);
      this.#current = dialog;
      dialog.showModal();
      // Deny has focus, so a stray Enter never allows (a form: its first field).
      first?.focus();
    });
  }
}
