// A tiny DOM builder for the chat app: text is always set as text (never parsed as HTML); browser app, trusted side.
import { shortId as coreShortId } from '../../core/revisions/refs.js';

type Attr = string | number | boolean | undefined | null | ((ev: Event) => void);
export type Child = Node | string | number | null | undefined | false;

/**
 * `h('button', { type: 'button', onclick: fn, 'aria-label': 'Send' }, 'Send')`. Keys starting with `on` add
 * listeners; `false`/`undefined` attributes are left out, `true` sets an empty one; string children become
 * text nodes. Nothing here assigns innerHTML, so model and tool text can never become markup.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, Attr> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.slice(2), v as EventListener);
    else if (k === 'value' && 'value' in el) (el as HTMLInputElement).value = String(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, ...children);
  return el;
}

export function append(el: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

/** Replace every child of `el`. */
export function replaceChildren(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, ...children);
}

/** The short form of a revision id (core/revisions/refs.ts shortId, the form `tycli` prints and accepts back). */
export function shortId(id: string | undefined): string {
  return id ? coreShortId(id) : '';
}

/** Let the person download `value` as a JSON file named `name` (a Blob URL, revoked after a while). */
export function downloadJson(name: string, value: unknown): void {
  const url = URL.createObjectURL(new Blob([JSON.stringify(value, null, 2)], { type: 'application/json' }));
  const a = h('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
