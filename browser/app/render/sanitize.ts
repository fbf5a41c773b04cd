// HTML text from the markdown renderer to DOM nodes through DOMPurify under the page's Trusted Types policy, with an
// explicit allow-list of elements and attributes; browser app, trusted side.
import DOMPurify, { type Config } from 'dompurify';
import { htmlPolicy } from '../../trusted-html.js';

/** Elements rendered markdown may contain (after sanitizing; the view adds its own buttons afterwards). */
export const ALLOWED_TAGS = [
  'p',
  'br',
  'hr',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'blockquote',
  'ul',
  'ol',
  'li',
  'strong',
  'em',
  'del',
  's',
  'code',
  'pre',
  'a',
  'table',
  'thead',
  'tbody',
  'tr',
  'th',
  'td',
  'span',
] as const;

/** Attributes rendered markdown may carry; `href` is further limited to http:, https: and mailto:. */
export const ALLOWED_ATTR = ['href', 'title', 'class', 'start', 'data-src', 'data-alt', 'role', 'aria-label'] as const;

/** Class names the renderer and the highlighter write; any other class is dropped. */
const CLASS_RE =
  /^(?:language-[a-z0-9_+#-]{1,32}|hljs(?:-[a-z_]+)*|[a-z_]+_|task|task-box|done|md-image|image-refused|link-refused|align-(?:left|right|center))$/;

const CONFIG: Config = {
  ALLOWED_TAGS: [...ALLOWED_TAGS],
  ALLOWED_ATTR: [...ALLOWED_ATTR],
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
  // values that are text, not URLs (DOMPurify checks every other attribute's value as a URL): alt text, the task
  // boxes' labels, an ordered list's start number
  ADD_URI_SAFE_ATTR: ['data-alt', 'aria-label', 'start'],
  KEEP_CONTENT: true,
  RETURN_DOM_FRAGMENT: true,
};

let hooked = false;

function hooks(): void {
  if (hooked) return;
  hooked = true;
  DOMPurify.addHook('uponSanitizeAttribute', (node, data) => {
    if (data.attrName === 'class') {
      data.attrValue = data.attrValue
        .split(/\s+/)
        .filter((c) => CLASS_RE.test(c))
        .join(' ');
      if (!data.attrValue) data.keepAttr = false;
    } else if (data.attrName === 'role' && !(node.nodeName === 'SPAN' && data.attrValue === 'img')) {
      data.keepAttr = false;
    } else if (data.attrName === 'start' && !(node.nodeName === 'OL' && /^\d{1,9}$/.test(data.attrValue))) {
      data.keepAttr = false;
    } else if ((data.attrName === 'data-src' || data.attrName === 'data-alt') && node.nodeName !== 'SPAN') {
      data.keepAttr = false;
    }
  });
}

/**
 * Sanitize `html` into a DocumentFragment: DOMPurify 3 parses it in an inert document through the page's one Trusted
 * Types policy (browser/trusted-html.ts) and keeps only ALLOWED_TAGS and ALLOWED_ATTR (`href` only http(s)/mailto,
 * class names only the renderer's and highlight.js's, `role` only `img` on a span). Nothing is returned as a string,
 * so no HTML sink is ever used. Links get `target="_blank"` and `rel="noopener noreferrer"`.
 */
export function sanitizeToFragment(html: string): DocumentFragment {
  hooks();
  const policy = htmlPolicy();
  const frag = DOMPurify.sanitize(html, {
    ...CONFIG,
    ...(policy ? { TRUSTED_TYPES_POLICY: policy as unknown as NonNullable<Config['TRUSTED_TYPES_POLICY']> } : {}),
  }) as unknown as DocumentFragment;
  for (const a of frag.querySelectorAll('a')) {
    if (!a.hasAttribute('href')) continue;
    a.setAttribute('target', '_blank');
    a.setAttribute('rel', 'noopener noreferrer');
  }
  return frag;
}
