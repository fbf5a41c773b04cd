// Canonical JSON encoding used for every content address and for a call's arguments; host-agnostic core, trusted side.
import { TyError } from '../errors.js';

type Code = 'E_INVALID_MANIFEST' | 'E_INVALID_TASK' | 'E_INVALID_ARGS';

/**
 * Strings at least this long (UTF-16 code units) are scanned natively for what JSON must escape before being escaped
 * one character at a time.
 */
const SCAN_MIN = 256;
/**
 * Strings at least this long (UTF-16 code units) that JSON writes verbatim become a piece of their own in
 * `canonicalParts`: a transport writes them without joining them to the text around them.
 */
export const PART_MIN = 16 * 1024;

/** Every character JSON.stringify escapes in a well-formed string (RFC 8785 §3.2.2.2), the common ones first. */
const ESCAPED: readonly string[] = [
  '\n',
  '"',
  '\\',
  '\r',
  '\t',
  ...Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)).filter((c) => !'\n\r\t'.includes(c)),
];
/** String.prototype.isWellFormed (ES2024) where the engine has it. */
const isWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;
const SURROGATE = /[\ud800-\udfff]/;
/** Any character JSON.stringify escapes in a well-formed string, in one pass. */
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;

/**
 * True when some of 17 evenly spaced characters of `s` is above U+00FF: `s` is then stored two bytes per character,
 * where a memchr-based `indexOf` of a control character can stop at every character whose high byte equals it
 * (U+0400-U+04FF for U+0004, ...). Only the choice of scan depends on it, never the result.
 */
function wide(s: string): boolean {
  const step = Math.max(1, Math.floor(s.length / 16));
  for (let i = 0; i < s.length; i += step) if (s.charCodeAt(i) > 0xff) return true;
  return false;
}

/**
 * True when JSON.stringify(s) is `"` + s + `"`: no quote, backslash or control character, no lone surrogate.
 * Native scans, several times faster than escaping a long string one character at a time: one memchr-like
 * `indexOf` per escaped character (one byte per character), or one regular-expression pass (two bytes per character).
 */
function verbatim(s: string): boolean {
  if (wide(s)) {
    if (NEEDS_ESCAPE.test(s)) return false;
  } else for (let i = 0; i < ESCAPED.length; i++) if (s.indexOf(ESCAPED[i]!) !== -1) return false;
  // without isWellFormed, any surrogate (paired or not) takes the escaping path, which is always right
  return isWellFormed ? isWellFormed.call(s) : !SURROGATE.test(s);
}

/**
 * Encode a plain-data value as canonical JSON, in pieces whose concatenation is the text: object keys sorted by
 * UTF-16 code units (as RFC 8785 JCS does), no whitespace, `undefined` members omitted, no sparse arrays.
 * Numbers must be finite; non-plain objects (class instances, Map, Date, functions, symbols, bigint) are refused.
 * Number and string formatting is ECMAScript's JSON.stringify, which RFC 8785 adopts, so equal values hash equally
 * on every host. A string of at least PART_MIN code units is a piece of its own: the caller's string itself
 * (never copied) when it needs no escaping, its JSON.stringify text otherwise; the text between such strings is
 * one piece each. The list and its pieces are never empty.
 * @throws TyError(code) for a value that is not plain data or nests deeper than 256.
 */
export function canonicalParts(value: unknown, code: Code = 'E_INVALID_MANIFEST'): string[] {
  const seen = new Set<object>();
  const out: string[] = [];
  // The text since the last piece, built by concatenation (ropes: a long string is linked, not copied).
  let acc = '';
  const str = (s: string): void => {
    if (s.length < SCAN_MIN) {
      acc += JSON.stringify(s);
      return;
    }
    const plain = verbatim(s);
    if (s.length < PART_MIN) acc += plain ? '"' + s + '"' : JSON.stringify(s);
    else if (plain) {
      out.push(acc + '"', s);
      acc = '"';
    } else {
      // escaped once, kept as its own piece too: never copied again into the text around it
      if (acc.length > 0) out.push(acc);
      out.push(JSON.stringify(s));
      acc = '';
    }
  };
  const enc = (v: unknown, depth: number): void => {
    if (depth > 256) throw new TyError(code, 'value nests deeper than 256 levels');
    if (v === null) {
      acc += 'null';
      return;
    }
    switch (typeof v) {
      case 'string':
        return str(v);
      case 'boolean':
        acc += v ? 'true' : 'false';
        return;
      case 'number':
        if (!Number.isFinite(v)) throw new TyError(code, 'numbers must be finite');
        acc += JSON.stringify(v);
        return;
      case 'object': {
        if (seen.has(v)) throw new TyError(code, 'value contains a cycle');
        seen.add(v);
        try {
          if (Array.isArray(v)) {
            acc += '[';
            for (let i = 0; i < v.length; i++) {
              if (!(i in v)) throw new TyError(code, 'arrays must not be sparse');
              if (i > 0) acc += ',';
              enc(v[i], depth + 1);
            }
            acc += ']';
            return;
          }
          const proto = Object.getPrototypeOf(v);
          if (proto !== Object.prototype && proto !== null)
            throw new TyError(code, 'only plain objects can be encoded');
          const keys = Object.keys(v).sort();
          acc += '{';
          let first = true;
          for (const k of keys) {
            const item = (v as Record<string, unknown>)[k];
            if (item === undefined) continue;
            if (first) first = false;
            else acc += ',';
            str(k);
            acc += ':';
            enc(item, depth + 1);
          }
          acc += '}';
          return;
        } finally {
          seen.delete(v);
        }
      }
      default:
        throw new TyError(code, `a ${typeof v} cannot be encoded as JSON`);
    }
  };
  enc(value, 0);
  if (acc.length > 0 || out.length === 0) out.push(acc);
  return out;
}

/**
 * Encode a plain-data value as canonical JSON text (canonicalParts joined): object keys sorted by UTF-16 code
 * units (as RFC 8785 JCS does), no whitespace, `undefined` members omitted, no sparse arrays.
 * @throws TyError(code) for a value that is not plain data or nests deeper than 256.
 */
export function canonicalJson(value: unknown, code: Code = 'E_INVALID_MANIFEST'): string {
  return joinParts(canonicalParts(value, code));
}

/** The text of canonicalParts' pieces, linked (string concatenation) rather than copied. */
export function joinParts(parts: readonly string[]): string {
  let text = parts[0] ?? '';
  for (let i = 1; i < parts.length; i++) text += parts[i]!;
  return text;
}
