// A progress bar while Pyodide's files load and verify for a Python tool; browser app, trusted side.
import { h } from '../dom.js';

/** The host's Python load progress (browser/python/assets.ts PythonProgress). */
export interface PythonLoad {
  phase: 'fetch' | 'verify' | 'ready' | 'start';
  loaded: number;
  total: number;
  cached?: boolean;
}

const mb = (n: number) => (n / 1_000_000).toFixed(1);

/**
 * `element` is a labelled <progress> ("Loading Python (Pyodide)") with a status line; `update` follows the
 * host's phases: fetch (bytes of every file), verify (sha-256 against the digests built into the app), start
 * (the sandbox starts Pyodide from the verified files; indeterminate), then it hides itself.
 */
export class PythonProgressBar {
  readonly bar = h('progress', { 'aria-label': 'Loading Python (Pyodide)', max: 1, value: 0 });
  readonly text = h('span', { class: 'py-progress-text' });
  readonly element = h(
    'div',
    { class: 'py-progress', role: 'status', hidden: true },
    h('span', {}, 'Python: '),
    this.bar,
    ' ',
    this.text,
  );
  #timer: ReturnType<typeof setTimeout> | undefined;

  update(p: PythonLoad): void {
    clearTimeout(this.#timer);
    this.element.hidden = false;
    if (p.phase === 'fetch' || p.phase === 'verify') {
      this.bar.max = Math.max(1, p.total);
      this.bar.value = Math.min(p.loaded, p.total);
      this.text.textContent =
        p.phase === 'fetch'
          ? `downloading ${mb(p.loaded)} of ${mb(p.total)} MB`
          : 'checking the files against their digests';
    } else if (p.phase === 'ready') {
      this.bar.max = 1;
      this.bar.value = 1;
      this.text.textContent = p.cached ? 'files ready (verified earlier)' : 'files verified';
    } else {
      this.bar.removeAttribute('value'); // indeterminate while Pyodide starts in the sandbox
      this.text.textContent = 'starting Pyodide in the sandbox';
      // The host reports no further phase: hide once the call's result arrives (done()), or after a while.
      this.#timer = setTimeout(() => this.done(), 120_000);
    }
  }

  /** Hide the bar (a Python call finished). */
  done(): void {
    clearTimeout(this.#timer);
    this.element.hidden = true;
  }
}
