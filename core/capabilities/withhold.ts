// Secret values withheld from text that comes from outside the host (a tool's own error text, a hook's output, a
// network library's error, arguments an LLM wrote), as whole tokens only; core, trusted side.
import { WITHHELD } from '../audit/record.js';

/**
 * What the host writes never holds a secret value: audit records, identifiers (tool names, revision ids, rules,
 * principals, origins) and the host's own messages are built from names, never from values, so they are never
 * searched. Text that comes from outside the host can hold one (a tool echoing a value it was granted, a server
 * echoing a header, a model pasting one into arguments): that text is passed through `withholdTokens` at the one
 * place it enters the host, before it reaches a person, a hook or a message.
 */

/** True for the code units that join a token: letters, digits (any script) and `_`. */
const WORD = /[\p{L}\p{N}\p{M}_]/u;

/** The code point that ends just before index `i` of `s`, as a string ('' at the start). */
function before(s: string, i: number): string {
  if (i <= 0) return '';
  const lo = s.charCodeAt(i - 1);
  if (lo >= 0xdc00 && lo <= 0xdfff && i >= 2) {
    const hi = s.charCodeAt(i - 2);
    if (hi >= 0xd800 && hi <= 0xdbff) return s.slice(i - 2, i);
  }
  return s.slice(i - 1, i);
}

/** The code point that starts at index `i` of `s`, as a string ('' at the end). */
function at(s: string, i: number): string {
  if (i >= s.length) return '';
  const cp = s.codePointAt(i) ?? 0;
  return String.fromCodePoint(cp);
}

/**
 * The forms a value is looked for in: as it is, JSON-escaped (inside a JSON string: quotes, backslashes, controls)
 * and percent-encoded (inside a URL, RFC 3986 section 2.1); each distinct and non-empty.
 */
export function valueForms(value: string): string[] {
  const forms = new Set<string>([value, JSON.stringify(value).slice(1, -1)]);
  try {
    forms.add(encodeURIComponent(value));
  } catch {
    /* a lone surrogate has no percent-encoding */
  }
  return [...forms].filter((f) => f.length > 0);
}

/**
 * `text` with every occurrence of a known value (in any of its valueForms) that stands as a whole token replaced by
 * `<withheld>`. A match counts only where the value's own first (last) character is a letter, digit or `_` and the
 * character before (after) it is not one: a value `ta` is withheld in `key=ta;` and `"ta"` but not inside `data` or
 * `total`, and a value `0` never inside `2026` or `10`. So text that holds no value as a token comes back unchanged,
 * whatever the values are, and a short value never corrupts the words around it. Overlapping matches: the earliest,
 * then the longest, wins. Values are compared exactly (case, normalization); empty ones are ignored.
 * @param values the secret values known now (e.g. a host's stored secrets); read once per call
 */
export function withholdTokens(text: string, values: Iterable<string>): string {
  if (text.length === 0) return text;
  const forms: string[] = [];
  for (const v of values) if (typeof v === 'string' && v.length > 0) forms.push(...valueForms(v));
  if (forms.length === 0) return text;
  const hits: [number, number][] = [];
  for (const f of new Set(forms)) {
    const joinsStart = WORD.test(at(f, 0));
    const joinsEnd = WORD.test(before(f, f.length));
    for (let i = text.indexOf(f); i >= 0; i = text.indexOf(f, i + 1)) {
      const end = i + f.length;
      if (joinsStart && WORD.test(before(text, i))) continue;
      if (joinsEnd && WORD.test(at(text, end))) continue;
      hits.push([i, end]);
    }
  }
  if (hits.length === 0) return text;
  hits.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let out = '';
  let pos = 0;
  for (const [s, e] of hits) {
    if (s < pos) continue;
    out += text.slice(pos, s) + WITHHELD;
    pos = e;
  }
  return out + text.slice(pos);
}

/** True when `text` holds a known value as a whole token (withholdTokens would change it). */
export function holdsToken(text: string, values: Iterable<string>): boolean {
  return withholdTokens(text, values) !== text;
}

/**
 * A JSON value with withholdTokens applied to every string in it (keys included), decoded first so JSON escaping
 * cannot hide a value. Returns a new value; `undefined` when `v` is not JSON data.
 */
export function withholdInJson(v: unknown, values: readonly string[]): unknown {
  let text: string | undefined;
  try {
    text = JSON.stringify(v);
  } catch {
    return undefined;
  }
  if (typeof text !== 'string') return undefined;
  if (values.length === 0) return JSON.parse(text) as unknown;
  return JSON.parse(text, (_key: string, val: unknown) => {
    if (typeof val === 'string') return withholdTokens(val, values);
    if (val !== null && typeof val === 'object' && !Array.isArray(val)) {
      const o = val as Record<string, unknown>;
      let renamed: Record<string, unknown> | undefined;
      for (const k of Object.keys(o)) {
        const clean = withholdTokens(k, values);
        if (clean === k) continue;
        renamed ??= { ...o };
        delete renamed[k];
        renamed[clean] = o[k];
      }
      return renamed ?? val;
    }
    return val;
  }) as unknown;
}
