// Question text made safe to display: shown as it is, never interpreted by a terminal or dialog; core, trusted side.
import type { Question } from '../exec/runtime.js';

/** Longest displayed line, in code points of the escaped text; the rest is replaced by a cut marker. */
export const MAX_LINE_CHARS = 600;
/** Most lines `renderQuestion` returns; the rest is replaced by one cut marker line. */
export const MAX_QUESTION_LINES = 60;

/**
 * Code points made visible as escapes instead of being shown:
 * - `Cc` (C0 except LF, DEL, single-byte C1 0x80-0x9f: ESC/CSI/OSC start sequences, CR, BEL, backspace, tab),
 * - `Cf` (bidi embeddings/overrides/isolates U+202A-202E U+2066-2069, LRM/RLM/ALM, ZWSP/ZWNJ/ZWJ, BOM U+FEFF,
 *   soft hyphen, tag characters U+E0001 U+E0020-E007F), `Zl`/`Zp` (U+2028/2029: not line breaks here),
 * - `Co` private use, `Cn` unassigned and noncharacters, `Cs` lone surrogates,
 * - Unicode `Default_Ignorable_Code_Point` (variation selectors U+FE00-FE0F and U+E0100-E01EF, Hangul fillers,
 *   combining grapheme joiner, U+E0000-E0FFF, ...) and U+2800 (braille blank, an invisible letter-like space).
 * Sources: Unicode UAX #44 general categories, DerivedCoreProperties.txt (Default_Ignorable_Code_Point),
 * UTS #39 / CVE-2021-42574 ("Trojan Source") for bidi controls, ECMA-48 for C0/C1 controls.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Cs}\p{Default_Ignorable_Code_Point}\u2800]/u;
/** Padding: any space separator (U+0020, NBSP, U+2000-200A, U+202F, U+205F, U+3000, U+1680). */
const PADDING = /\p{Zs}/u;
/** Combining marks; more than MAX_STACKED_MARKS in a row (a "Zalgo" stack that draws over other lines) are escaped. */
const MARK = /\p{M}/u;
export const MAX_STACKED_MARKS = 4;

function hex(cp: number, width: number): string {
  return cp.toString(16).padStart(width, '0');
}

/** The visible escape for one hidden code point: `\r`, `\t`, `\xHH` (<= 0xff), `\uHHHH`, `\u{HHHHH}`. */
export function escapeCodePoint(cp: number): string {
  if (cp === 0x0d) return '\\r';
  if (cp === 0x09) return '\\t';
  if (cp <= 0xff) return `\\x${hex(cp, 2)}`;
  if (cp <= 0xffff) return `\\u${hex(cp, 4)}`;
  return `\\u{${hex(cp, 5)}}`;
}

/** One displayed line as tokens: each token is the display form of one source code point (or a collapsed run). */
function tokensOf(line: string): string[] {
  const out: string[] = [];
  let padding = 0;
  const flushPadding = (): void => {
    if (padding > 0) out.push(' ');
    padding = 0;
  };
  // for..of iterates code points; a lone surrogate comes through as a one-unit string.
  let marks = 0;
  for (const ch of line) {
    if (PADDING.test(ch)) {
      padding++;
      marks = 0;
      continue;
    }
    flushPadding();
    const hidden = HIDDEN.test(ch);
    marks = !hidden && MARK.test(ch) ? marks + 1 : 0;
    out.push(hidden || marks > MAX_STACKED_MARKS ? escapeCodePoint(ch.codePointAt(0) ?? 0) : ch);
  }
  // Trailing padding is dropped: it is invisible and only pushes text off-screen.
  return out;
}

/** Count code points (not UTF-16 units). */
function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/**
 * Make text safe to show to a person: returns display lines. Only LF (and CRLF) breaks lines; every
 * other control, bidi, zero-width, invisible, tag, variation-selector, private-use, unassigned or lone
 * surrogate code point is shown as an escape (`\x1b`, `\r`, `\u202e`, `\u{e0041}`), and so is every combining
 * mark after MAX_STACKED_MARKS (4) in a row; a run of padding
 * (spaces, NBSPs, other `Zs`) becomes one space and trailing padding is dropped; each line is cut at
 * MAX_LINE_CHARS (600) code points, never inside an escape, with a marker
 * `… [cut: N more characters]` where N counts the source code points not shown.
 * A backslash is shown as itself, so `\x1b` typed literally looks like an escaped ESC: both are inert.
 * Never throws; a non-string is converted with String().
 */
export function sanitizeForDisplay(text: string): string[] {
  const src = typeof text === 'string' ? text : String(text);
  const lines = src.split(/\r?\n/);
  return lines.map((line) => {
    const tokens = tokensOf(line);
    let shown = '';
    let width = 0;
    let i = 0;
    for (; i < tokens.length; i++) {
      const t = tokens[i] as string;
      const w = t.length === 1 ? 1 : codePoints(t);
      if (width + w > MAX_LINE_CHARS) break;
      shown += t;
      width += w;
    }
    if (i === tokens.length) return shown;
    // Count the hidden source code points: collapsed padding tokens stand for at least one.
    const hidden = codePoints(line) - sourceCodePointsOf(line, i);
    return `${shown}… [cut: ${hidden} more characters]`;
  });
}

/** How many source code points produced the first `tokenCount` tokens of `line` (mirrors tokensOf). */
function sourceCodePointsOf(line: string, tokenCount: number): number {
  let tokens = 0;
  let consumed = 0;
  let inPadding = false;
  for (const ch of line) {
    if (PADDING.test(ch)) {
      if (!inPadding) {
        if (tokens === tokenCount) return consumed;
        tokens++;
        inPadding = true;
      }
      consumed++;
      continue;
    }
    inPadding = false;
    if (tokens === tokenCount) return consumed;
    tokens++;
    consumed++;
  }
  return consumed;
}

const HIDDEN_ALL = new RegExp(HIDDEN.source, 'gu');

/**
 * Text kept as it is but made inert: every hidden code point (the HIDDEN set) except line feed and tab
 * becomes a visible escape (escapeCodePoint). For text from untrusted peers that is passed on, such as an
 * MCP server's tool descriptions.
 */
export function inertText(text: string): string {
  return text.replace(HIDDEN_ALL, (ch) => (ch === '\n' || ch === '\t' ? ch : escapeCodePoint(ch.codePointAt(0) ?? 0)));
}

/**
 * JSON.stringify(value) with every hidden code point (the HIDDEN set above: controls incl. DEL and C1,
 * bidi, zero-width, U+2028/2029, tags, private use, ...) written as `\uXXXX` escapes (astral ones as
 * an escaped surrogate pair), so the text is pure inert JSON wherever it is shown (RFC 8259 section 7
 * allows any character escaped). Parses back to the same value. With `space`, indented like
 * JSON.stringify(value, null, space). @throws TypeError like JSON.stringify.
 */
export function inertJson(value: unknown, space?: number): string {
  const text = JSON.stringify(value, null, space);
  if (typeof text !== 'string') return 'null';
  const escape = (ch: string): string => {
    let out = '';
    for (let i = 0; i < ch.length; i++) out += `\\u${hex(ch.charCodeAt(i), 4)}`;
    return out;
  };
  // indented: the layout's line feeds stay; only string literals (where JSON has no raw line feed) are touched
  return space ? text.replace(JSON_STRING, (lit) => lit.replace(HIDDEN_ALL, escape)) : text.replace(HIDDEN_ALL, escape);
}

/**
 * Untrusted text echoed in a message: at most `max` code points (then `…`), as an inert JSON string literal
 * (inertJson: quotes, backslashes and hidden code points escaped), so it reads safely on any terminal.
 */
export function quoteText(text: string, max = 64): string {
  const cps = Array.from(text);
  return inertJson(cps.length > max ? `${cps.slice(0, max).join('')}…` : text);
}

/** A JSON string literal as JSON.stringify writes it. */
const JSON_STRING = /"(?:[^"\\]|\\.)*"/g;

/** Sanitize a one-line field (title, rule): every line joined with the visible separator ` ⏎ `. */
export function sanitizeInline(text: string): string {
  return sanitizeForDisplay(text).join(' ⏎ ');
}

function hintLine(hints: NonNullable<Question['hints']>): string | undefined {
  const parts: string[] = [];
  for (const key of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const) {
    const v = hints[key];
    if (typeof v === 'boolean') parts.push(`${key}=${v}`);
  }
  if (parts.length === 0) return undefined;
  return `Server hints (claims by the server, not checked; they never skip this question): ${parts.join(', ')}`;
}

/**
 * The lines every channel shows for a question, each sanitized with sanitizeForDisplay:
 * title, details, server hints (labelled as unchecked claims), the rule that would allow it without
 * asking, and the scopes on offer. At most MAX_QUESTION_LINES lines; more become one
 * `… [cut: N more lines]` line. Channel-specific instructions (a code to type, a command) are added by the channel.
 */
export function renderQuestion(q: Question): string[] {
  const out: string[] = [];
  out.push(sanitizeInline(q.title));
  for (const d of Array.isArray(q.details) ? q.details : []) {
    for (const line of sanitizeForDisplay(d)) out.push(`  ${line}`);
  }
  if (q.hints) {
    const h = hintLine(q.hints);
    if (h !== undefined) out.push(`  ${h}`);
  }
  if (typeof q.suggestedRule === 'string' && q.suggestedRule.length > 0) {
    out.push(`  Rule that allows this without asking: ${sanitizeInline(q.suggestedRule)}`);
  }
  const scopes = q.scopes && q.scopes.length > 0 ? q.scopes : ['once'];
  out.push(`  Allow for: ${scopes.join(', ')}`);
  if (out.length > MAX_QUESTION_LINES) {
    const more = out.length - (MAX_QUESTION_LINES - 1);
    return [...out.slice(0, MAX_QUESTION_LINES - 1), `… [cut: ${more} more lines]`];
  }
  return out;
}
