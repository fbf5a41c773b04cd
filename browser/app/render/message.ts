// One assistant text rendered for the conversation: markdown to sanitized nodes, images behind a click, code blocks
// decorated; browser app, trusted side.
import { h } from '../dom.js';
import { decorateCode } from './highlight.js';
import { markdownToHtml, safeImageUrl } from './markdown.js';
import { sanitizeToFragment } from './sanitize.js';

/** The host an image would be loaded from, as the button names it (`data:` images: "this message"). */
export function imageHost(src: string): string {
  if (src.startsWith('data:')) return 'this message';
  try {
    return new URL(src).host;
  } catch {
    return 'an unknown address';
  }
}

/**
 * Replace each image placeholder (`span.md-image`, from markdown.ts) with a button "Show image from HOST": an image
 * URL is a way to leak the conversation (its address can carry any text the model wrote), so nothing is fetched until
 * the person asks. The click loads it as `<img referrerpolicy="no-referrer">` with its alt text, after checking the
 * URL again (https: or a raster data: image).
 */
export function imagesBehindClick(root: ParentNode): void {
  for (const ph of root.querySelectorAll<HTMLElement>('span.md-image')) {
    const src = ph.dataset.src ?? '';
    const alt = ph.dataset.alt ?? '';
    if (!safeImageUrl(src)) {
      ph.replaceWith(h('span', { class: 'image-refused' }, `[image: ${alt}]`));
      continue;
    }
    const b = h('button', { type: 'button', class: 'show-image' }, `Show image from ${imageHost(src)}`);
    const box = h('span', { class: 'image-box' }, b, alt ? h('span', { class: 'image-alt' }, ` ${alt}`) : null);
    b.addEventListener('click', () => {
      box.replaceChildren(h('img', { src, alt, referrerpolicy: 'no-referrer', decoding: 'async' }));
    });
    ph.replaceWith(box);
  }
}

/**
 * Markdown text as sanitized, decorated nodes (a fragment to append). `draft`: the unfinished end of a streaming
 * answer, rendered again next frame: its code blocks are not coloured yet (they are once finished).
 */
export function renderMarkdown(text: string, opts: { draft?: boolean } = {}): DocumentFragment {
  const frag = sanitizeToFragment(markdownToHtml(text));
  imagesBehindClick(frag);
  decorateCode(frag, { colour: !opts.draft });
  for (const t of frag.querySelectorAll('table')) scrollingTable(t);
  return frag;
}

/** Marks each table wrapper by whether its table is wider than it (checked whenever either changes size). */
let tableSizes: ResizeObserver | undefined;

/** Make `wrap` a keyboard-reachable named region while it scrolls sideways, a plain box otherwise. */
function markScrolling(wrap: HTMLElement): void {
  const scrolls = wrap.scrollWidth > wrap.clientWidth + 1;
  if (scrolls === (wrap.getAttribute('role') === 'region')) return;
  if (scrolls) {
    wrap.setAttribute('role', 'region');
    wrap.setAttribute('aria-label', 'Table (scrolls sideways)');
    wrap.tabIndex = 0;
  } else {
    wrap.removeAttribute('role');
    wrap.removeAttribute('aria-label');
    wrap.removeAttribute('tabindex');
  }
}

/**
 * Put `table` in a `div.table-scroll` of its own: the table keeps words whole (app.css) and, when wider than the
 * answer, scrolls sideways inside that box, which is then a focusable region named "Table (scrolls sideways)" so a
 * keyboard reaches it (WCAG 2.1.1; axe's scrollable-region-focusable); a table that fits adds no Tab stop.
 */
function scrollingTable(table: HTMLTableElement): void {
  const wrap = h('div', { class: 'table-scroll' });
  table.replaceWith(wrap);
  wrap.append(table);
  tableSizes ??= new ResizeObserver((entries) => {
    for (const e of entries) {
      const w = (e.target as HTMLElement).closest<HTMLElement>('.table-scroll');
      if (w) markScrolling(w);
    }
  });
  tableSizes.observe(wrap);
  tableSizes.observe(table);
}
