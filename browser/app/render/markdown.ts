// Model text to HTML text: CommonMark + GFM tables, strikethrough and task lists (markdown-it, raw HTML off), links
// and images restricted, invisible characters made visible; browser app, trusted side (its output is sanitized next).
import markdownIt, { type MarkdownIt, type StateCore } from 'markdown-it';
import { inertText } from '../../../core/ask/text.js';

/** Schemes a rendered link may use; anything else (javascript:, data:, vbscript:, file:, relative URLs) is text. */
export const LINK_SCHEMES = ['http:', 'https:', 'mailto:'] as const;

/** True for an absolute http(s) or mailto URL (the only links rendered). */
export function safeLinkUrl(href: string): boolean {
  try {
    const u = new URL(href);
    return (LINK_SCHEMES as readonly string[]).includes(u.protocol) && !/[\s<>"]/.test(href);
  } catch {
    return false;
  }
}

/** Raster image types a `data:` image may have (no SVG: it may carry script and links). */
const DATA_IMAGE = /^data:image\/(?:png|gif|jpeg|webp|avif);base64,[A-Za-z0-9+/=\s]+$/i;

/** True for an image URL the app may load after a click: https: or a `data:` raster image. */
export function safeImageUrl(src: string): boolean {
  if (DATA_IMAGE.test(src)) return true;
  try {
    return new URL(src).protocol === 'https:';
  } catch {
    return false;
  }
}

const escapeAttr = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A GFM task list item starts with `[ ] ` or `[x] ` (https://github.github.com/gfm/#task-list-items-extension-). */
const TASK = /^\[([ xX])\][ \t]/;

function taskLists(state: StateCore): void {
  const tokens = state.tokens;
  for (let i = 2; i < tokens.length; i++) {
    const inline = tokens[i]!;
    if (
      inline.type !== 'inline' ||
      tokens[i - 1]!.type !== 'paragraph_open' ||
      tokens[i - 2]!.type !== 'list_item_open'
    )
      continue;
    const first = inline.children?.[0];
    const m = first && first.type === 'text' ? TASK.exec(first.content) : null;
    if (!first || !m) continue;
    const done = m[1] !== ' ';
    first.content = first.content.slice(m[0].length);
    const box = new state.Token('task_box', '', 0);
    box.meta = { done };
    inline.children!.unshift(box);
    tokens[i - 2]!.attrJoin('class', 'task');
  }
}

/** Every text the model wrote is shown as it is: bidi, zero-width and other invisible code points become escapes. */
function inertTokens(state: StateCore): void {
  for (const t of state.tokens) {
    if (t.type === 'fence' || t.type === 'code_block') t.content = inertText(t.content);
    for (const c of t.children ?? [])
      if (c.type === 'text' || c.type === 'code_inline') c.content = inertText(c.content);
  }
}

/** Table cell alignment as a class: the CSP allows no style attributes. */
function alignClasses(state: StateCore): void {
  for (const t of state.tokens) {
    if (t.type !== 'th_open' && t.type !== 'td_open') continue;
    const style = t.attrGet('style');
    if (!style) continue;
    t.attrs = (t.attrs ?? []).filter(([k]) => k !== 'style');
    const m = /text-align:\s*(left|right|center)/.exec(String(style));
    if (m) t.attrJoin('class', `align-${m[1]}`);
  }
}

function create(): MarkdownIt {
  const md = markdownIt('default', { html: false, linkify: true, typographer: false, breaks: false });
  // Links and images are judged again when rendered; here only the URL syntax markdown-it accepts is widened to data:
  // images (its default refuses most data: URLs), so a refused one renders as text, not as a broken link.
  md.validateLink = (url) => safeLinkUrl(url) || safeImageUrl(url);
  md.core.ruler.push('tysandbox_tasks', taskLists);
  md.core.ruler.push('tysandbox_inert', inertTokens);
  md.core.ruler.push('tysandbox_align', alignClasses);
  const rules = md.renderer.rules;
  rules.link_open = (tokens, idx, options, _env, self) => {
    const t = tokens[idx]!;
    const href = String(t.attrGet('href') ?? '');
    if (!safeLinkUrl(href)) {
      t.attrs = [];
      t.attrSet('class', 'link-refused');
      return '<span class="link-refused">';
    }
    return self.renderToken(tokens, idx, options);
  };
  rules.link_close = (tokens, idx, options, _env, self) => {
    // the matching open token was refused: close its span
    for (let i = idx - 1; i >= 0; i--) {
      const t = tokens[i]!;
      if (t.type === 'link_open' && t.level === tokens[idx]!.level)
        return t.attrGet('class') === 'link-refused' ? '</span>' : self.renderToken(tokens, idx, options);
    }
    return self.renderToken(tokens, idx, options);
  };
  // Images are never loaded as rendered: a placeholder the view turns into a "Show image from HOST" button.
  rules.image = (tokens, idx) => {
    const t = tokens[idx]!;
    const src = String(t.attrGet('src') ?? '');
    const alt = inertText(t.content || (t.children ?? []).map((c) => c.content).join(''));
    if (!safeImageUrl(src)) return `<span class="image-refused">${escapeAttr(`[image: ${alt}]`)}</span>`;
    return `<span class="md-image" data-src="${escapeAttr(src)}" data-alt="${escapeAttr(alt)}"></span>`;
  };
  rules.task_box = (tokens, idx) =>
    tokens[idx]!.meta?.done
      ? '<span class="task-box done" role="img" aria-label="done">☑</span> '
      : '<span class="task-box" role="img" aria-label="not done">☐</span> ';
  // Code blocks carry their language for the highlighter; highlighting happens on the sanitized DOM.
  rules.fence = (tokens, idx) => {
    const t = tokens[idx]!;
    const lang = (t.info.trim().split(/\s+/)[0] ?? '')
      .toLowerCase()
      .replace(/[^a-z0-9_+#-]/g, '')
      .slice(0, 32);
    const cls = lang ? ` class="language-${lang}"` : '';
    return `<pre><code${cls}>${md.utils.escapeHtml(t.content)}</code></pre>\n`;
  };
  return md;
}

let instance: MarkdownIt | undefined;

/**
 * Render markdown to an HTML string (CommonMark 0.31 as markdown-it 15 implements it, plus GFM tables,
 * strikethrough, autolinks and task lists). Raw HTML in the text is shown as text, never parsed. Links keep only
 * absolute http:, https: and mailto: URLs (others render as plain text); images become `span.md-image` placeholders
 * with `data-src` (https: or a raster `data:` image) that the view shows only after a click; fenced code keeps its
 * language as `class="language-X"`. The string still goes through the sanitizer (sanitize.ts) before the DOM.
 */
export function markdownToHtml(text: string): string {
  instance ??= create();
  return instance.render(text);
}
