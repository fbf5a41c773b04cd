// Code block decoration: "Copy" buttons at once, syntax colours once the lazily loaded highlighter arrives; browser
// app, trusted side.
import { h } from '../dom.js';
import { sanitizeToFragment } from './sanitize.js';

type Highlighter = (code: string, language: string) => string | undefined;

let highlighter: Highlighter | undefined;
let loading: Promise<Highlighter> | undefined;

/** Load highlight.js and its languages (a chunk of its own, fetched the first time a code block is shown). */
export function loadHighlighter(): Promise<Highlighter> {
  loading ??= import('./languages.js').then((m) => {
    highlighter = m.highlight;
    return m.highlight;
  });
  return loading;
}

/** Longest code block coloured (characters): a longer one stays plain, so one answer cannot stall the page. */
const MAX_HIGHLIGHT = 100_000;

function colour(code: HTMLElement, hl: Highlighter): void {
  if (code.dataset.highlighted) return;
  const lang = /(?:^|\s)language-([a-z0-9_+#-]+)/.exec(code.className)?.[1];
  const text = code.textContent ?? '';
  code.dataset.highlighted = 'true';
  if (!lang || text.length > MAX_HIGHLIGHT) return;
  const html = hl(text, lang);
  if (html === undefined) return;
  code.replaceChildren(sanitizeToFragment(html));
  code.classList.add('hljs');
}

/**
 * Give each `pre > code` under `root` a toolbar with its language and a "Copy" button (copies the code's text), and
 * colour it (unless `colour` is false): at once when the highlighter is loaded, else once it is (the first code block
 * starts the load).
 */
export function decorateCode(root: ParentNode, opts: { colour?: boolean } = {}): void {
  const paint = opts.colour !== false;
  const blocks = [...root.querySelectorAll<HTMLElement>('pre > code')].filter((c) => !c.dataset.decorated);
  if (blocks.length === 0) return;
  for (const code of blocks) {
    code.dataset.decorated = 'true';
    const pre = code.parentElement!;
    pre.tabIndex = 0; // it may scroll sideways: reachable by keyboard
    const lang = /(?:^|\s)language-([a-z0-9_+#-]+)/.exec(code.className)?.[1];
    const status = h('span', { class: 'copy-status', role: 'status' });
    const copy = h('button', { type: 'button', class: 'copy' }, 'Copy');
    copy.addEventListener('click', () => {
      void navigator.clipboard.writeText(code.textContent ?? '').then(
        () => (status.textContent = 'Copied'),
        () => (status.textContent = 'Copy failed: the browser refused the clipboard'),
      );
    });
    const wrap = h(
      'div',
      { class: 'code-block' },
      h('div', { class: 'code-bar' }, h('span', {}, lang ?? 'code'), status, copy),
    );
    pre.replaceWith(wrap);
    wrap.append(pre);
    if (paint && highlighter) colour(code, highlighter);
  }
  if (paint && !highlighter)
    void loadHighlighter().then((hl) => {
      for (const code of blocks) colour(code, hl);
    });
}
