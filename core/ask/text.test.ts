// Unit tests for the question-text sanitizer (core/ask/text.ts); test code, trusted side.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  MAX_LINE_CHARS,
  MAX_QUESTION_LINES,
  escapeCodePoint,
  inertJson,
  renderQuestion,
  sanitizeForDisplay,
  sanitizeInline,
} from './text.js';

/** Anything a terminal or dialog could interpret, or that is invisible, must not survive sanitizing. */
const DANGEROUS = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Cs}\p{Default_Ignorable_Code_Point}\u2800]/u;
function assertInert(lines: string[]): void {
  for (const line of lines) {
    expect(DANGEROUS.test(line), JSON.stringify(line.slice(0, 200))).toBe(false);
    expect(codePointLength(line)).toBeLessThanOrEqual(MAX_LINE_CHARS + 40);
  }
}
function codePointLength(s: string): number {
  return [...s].length;
}

const cases = JSON.parse(
  readFileSync(new URL('../../test/fixtures/cases/prompt-text.json', import.meta.url), 'utf8'),
) as { cases: { text: string; kind: string }[] };

describe('prompt-text.json cases', () => {
  for (const c of cases.cases) {
    it(`case: ${c.kind}`, () => {
      const out = sanitizeForDisplay(c.text);
      assertInert(out);
    });
  }
  it('ANSI clear-screen and OSC title become visible escapes', () => {
    expect(sanitizeForDisplay('\u001b[2J\u001b]0;PWNED\u0007')).toEqual(['\\x1b[2J\\x1b]0;PWNED\\x07']);
  });
  it('OSC 8 hyperlink shows its target as text', () => {
    expect(sanitizeForDisplay('\u001b]8;;https://evil.example\u0007hi\u001b]8;;\u0007')).toEqual([
      '\\x1b]8;;https://evil.example\\x07hi\\x1b]8;;\\x07',
    ]);
  });
  it('cursor-up and erase-line cannot overwrite the question', () => {
    expect(sanitizeForDisplay('\u001b[1A\u001b[2Kallow')).toEqual(['\\x1b[1A\\x1b[2Kallow']);
  });
  it('single-byte C1 CSI', () => {
    expect(sanitizeForDisplay('\u009b2J')).toEqual(['\\x9b2J']);
  });
  it('bare carriage return is shown, both halves visible on one line', () => {
    expect(sanitizeForDisplay('safe\rrm -rf ~')).toEqual(['safe\\rrm -rf ~']);
  });
  it('a 10,000-character line is cut at 600 with a marker naming what was cut', () => {
    const long = cases.cases.find((c) => c.text.length >= 10_000);
    expect(long).toBeDefined();
    const [line, ...rest] = sanitizeForDisplay(long!.text);
    expect(rest).toEqual([]);
    expect(line).toBe(`${'x'.repeat(600)}… [cut: ${long!.text.length - 600} more characters]`);
  });
});

describe('kind: C0, DEL and C1 controls', () => {
  it('every C0 except LF, DEL and every C1 becomes an escape', () => {
    for (let cp = 0; cp <= 0x9f; cp++) {
      if (cp === 0x0a || (cp >= 0x20 && cp < 0x7f)) continue;
      const out = sanitizeForDisplay(`a${String.fromCodePoint(cp)}b`);
      expect(out).toEqual([`a${escapeCodePoint(cp)}b`]);
      assertInert(out);
    }
  });
  it('tab is shown as \\t (decision: only LF is interpreted)', () => {
    expect(sanitizeForDisplay('a\tb')).toEqual(['a\\tb']);
  });
  it('LF and CRLF split lines; a CR elsewhere does not', () => {
    expect(sanitizeForDisplay('one\ntwo\r\nthree\r')).toEqual(['one', 'two', 'three\\r']);
  });
  it('NEL (U+0085) does not break a line', () => {
    expect(sanitizeForDisplay('a\u0085b')).toEqual(['a\\x85b']);
  });
});

describe('kind: bidi, zero-width, invisible and format characters', () => {
  const ranges: [number, number][] = [
    [0x200b, 0x200f],
    [0x202a, 0x202e],
    [0x2060, 0x2064],
    [0x2066, 0x2069],
    [0xfeff, 0xfeff],
    [0x2028, 0x2029],
    [0x00ad, 0x00ad],
    [0x061c, 0x061c],
    [0x180e, 0x180e],
    [0x3164, 0x3164],
    [0x115f, 0x1160],
    [0xffa0, 0xffa0],
    [0x034f, 0x034f],
    [0x2800, 0x2800],
  ];
  for (const [lo, hi] of ranges) {
    it(`U+${lo.toString(16)}..U+${hi.toString(16)} shown as escapes`, () => {
      for (let cp = lo; cp <= hi; cp++) {
        const out = sanitizeForDisplay(`x${String.fromCodePoint(cp)}y`);
        expect(out).toEqual([`x${escapeCodePoint(cp)}y`]);
        expect(escapeCodePoint(cp)).toMatch(/^\\(x|u)[0-9a-f]{2,4}$/);
      }
    });
  }
  it('Trojan-Source style reordering stays in source order', () => {
    const out = sanitizeForDisplay('access = "user\u202e \u2066// admin\u2069 \u2066"');
    expect(out).toEqual(['access = "user\\u202e \\u2066// admin\\u2069 \\u2066"']);
  });
  it('U+2028 and U+2029 do not start new lines', () => {
    expect(sanitizeForDisplay('a\u2028b\u2029c')).toHaveLength(1);
  });
});

describe('kind: tags, variation selectors, private use, unassigned, lone surrogates', () => {
  it('tag characters U+E0000-E007F (hidden ASCII) become escapes', () => {
    for (let cp = 0xe0000; cp <= 0xe007f; cp++) {
      const out = sanitizeForDisplay(`a${String.fromCodePoint(cp)}`);
      expect(out).toEqual([`a\\u{${cp.toString(16)}}`]);
    }
  });
  it('"ignore previous" hidden in tags is spelled out as escapes, not invisible', () => {
    const hidden = [...'hi'].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join('');
    expect(sanitizeForDisplay(`ok${hidden}`)).toEqual(['ok\\u{e0068}\\u{e0069}']);
  });
  it('variation selectors U+FE00-FE0F and U+E0100-E01EF', () => {
    for (let cp = 0xfe00; cp <= 0xfe0f; cp++)
      expect(sanitizeForDisplay(String.fromCodePoint(cp))).toEqual([`\\u${cp.toString(16)}`]);
    for (let cp = 0xe0100; cp <= 0xe01ef; cp++)
      expect(sanitizeForDisplay(String.fromCodePoint(cp))).toEqual([`\\u{${cp.toString(16)}}`]);
  });
  it('private use (BMP and planes 15/16), noncharacters and unassigned code points', () => {
    for (const cp of [0xe000, 0xf8ff, 0xf0000, 0x10fffd, 0xfdd0, 0xfffe, 0xffff, 0x10ffff, 0x0378]) {
      assertInert(sanitizeForDisplay(`a${String.fromCodePoint(cp)}b`));
    }
  });
  it('lone surrogates (high and low) become escapes; a valid pair stays', () => {
    expect(sanitizeForDisplay('a\ud800b')).toEqual(['a\\ud800b']);
    expect(sanitizeForDisplay('a\udfffb')).toEqual(['a\\udfffb']);
    expect(sanitizeForDisplay('\ud83d\ude00')).toEqual(['\u{1f600}']);
  });
  it('general categories Cf, Cc, Zl, Zp, Co, Cn never survive (exhaustive over all code points)', () => {
    const cats = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}]/u;
    const bad: number[] = [];
    let chunk = '';
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      if (cp === 0x0a) continue;
      const ch = String.fromCodePoint(cp);
      if (!cats.test(ch)) continue;
      chunk += ch;
      if (chunk.length >= 120) {
        for (const l of sanitizeForDisplay(chunk)) if (cats.test(l)) bad.push(cp);
        chunk = '';
      }
    }
    for (const l of sanitizeForDisplay(chunk)) if (cats.test(l)) bad.push(-1);
    expect(bad).toEqual([]);
  });
});

describe('kind: stacked combining marks', () => {
  it('up to 4 marks in a row are kept; the rest of a stack is escaped so it cannot draw over other lines', () => {
    expect(sanitizeForDisplay('e\u0301')).toEqual(['e\u0301']);
    expect(sanitizeForDisplay('Vi\u1EC7t')).toEqual(['Vi\u1EC7t']);
    const [line] = sanitizeForDisplay(`Z${'\u0336'.repeat(50)}`);
    expect(line).toBe(`Z${'\u0336'.repeat(4)}${'\\u0336'.repeat(46)}`);
    expect(sanitizeForDisplay(`a${'\u0301'.repeat(3)} b${'\u0301'.repeat(3)}`)).toEqual([
      `a${'\u0301'.repeat(3)} b${'\u0301'.repeat(3)}`,
    ]);
  });
});

describe('kind: padding and long lines', () => {
  it('runs of spaces collapse to one space; trailing padding is dropped', () => {
    expect(sanitizeForDisplay(`safe${' '.repeat(5000)}rm -rf ~   `)).toEqual(['safe rm -rf ~']);
  });
  it('runs of NBSPs and other space separators collapse too', () => {
    expect(sanitizeForDisplay(`a${'\u00a0'.repeat(900)}b\u2000\u2001\u3000\u202f\u205f\u1680c`)).toEqual(['a b c']);
  });
  it('padding cannot push text past the cut marker', () => {
    const out = sanitizeForDisplay(`allow${' '.repeat(10_000)}delete everything`);
    expect(out).toEqual(['allow delete everything']);
  });
  it('a long line of wide characters is cut at 600 code points, never splitting a pair', () => {
    const wide = '中'.repeat(2000);
    expect(sanitizeForDisplay(wide)).toEqual([`${'中'.repeat(600)}… [cut: 1400 more characters]`]);
    const emoji = '\u{1f600}'.repeat(1000);
    const [line] = sanitizeForDisplay(emoji);
    expect(line).toBe(`${'\u{1f600}'.repeat(600)}… [cut: 400 more characters]`);
  });
  it('an escape is never split by the cut; the count is of source characters hidden', () => {
    const text = `${'a'.repeat(598)}\u001b${'b'.repeat(10)}`;
    expect(sanitizeForDisplay(text)).toEqual([`${'a'.repeat(598)}… [cut: 11 more characters]`]);
  });
  it('every line is cut separately', () => {
    const out = sanitizeForDisplay(`${'x'.repeat(700)}\n${'y'.repeat(601)}\nshort`);
    expect(out).toEqual([
      `${'x'.repeat(600)}… [cut: 100 more characters]`,
      `${'y'.repeat(600)}… [cut: 1 more characters]`,
      'short',
    ]);
  });
  it('a line of escapes is cut by displayed width', () => {
    const out = sanitizeForDisplay('\u001b'.repeat(1000));
    expect(out[0]).toBe(`${'\\x1b'.repeat(150)}… [cut: 850 more characters]`);
  });
  it('non-string input does not throw', () => {
    expect(sanitizeForDisplay(42 as unknown as string)).toEqual(['42']);
  });
});

describe('renderQuestion', () => {
  it('shows server hints as unchecked claims and the suggested rule', () => {
    const lines = renderQuestion({
      id: 'q1',
      title: 'Allow MCP call?',
      details: ['server: files', 'tool: delete_all'],
      hints: { readOnlyHint: true, destructiveHint: false },
      suggestedRule: 'mcp(files/delete_all)',
    });
    expect(lines[0]).toBe('Allow MCP call?');
    expect(
      lines.some(
        (l) => l.includes('readOnlyHint=true') && l.includes('destructiveHint=false') && l.includes('never skip'),
      ),
    ).toBe(true);
    expect(lines.some((l) => l.includes('Rule that allows this without asking: mcp(files/delete_all)'))).toBe(true);
  });
  it('sanitizes every field, including a multi-line title and the rule', () => {
    const lines = renderQuestion({
      id: 'q',
      title: 'Allow?\u001b[2J\nsecond',
      details: ['a\u202eb', 'c\u0007'],
      suggestedRule: 'fetch(read:https://x)\u001b]0;t\u0007',
    });
    assertInert(lines);
    expect(lines[0]).toBe('Allow?\\x1b[2J ⏎ second');
  });
  it('caps the number of lines with a marker', () => {
    const details = Array.from({ length: 500 }, (_, i) => `line ${i}`);
    const lines = renderQuestion({ id: 'q', title: 't', details });
    expect(lines).toHaveLength(MAX_QUESTION_LINES);
    expect(lines[lines.length - 1]).toMatch(/^… \[cut: \d+ more lines\]$/);
  });
  it('sanitizeInline joins lines with a visible separator', () => {
    expect(sanitizeInline('a\nb')).toBe('a ⏎ b');
  });
});

describe('inertJson', () => {
  it('indented: hidden characters in strings become \\u escapes, the layout keeps its line feeds, and it parses back to the same value', () => {
    const value = { 'ke\u202ey': ['a\u001b]52;c;x\u0007', 'b\u200bc', 'line\nbreak'], n: 1 };
    const text = inertJson(value, 2);
    expect(text).toContain('\n  ');
    expect(text).not.toMatch(/[\u001b\u0007\u202e\u200b]/u);
    expect(text).toContain('ke\\u202ey');
    expect(JSON.parse(text)).toEqual(value);
    expect(JSON.parse(inertJson(value))).toEqual(value);
    expect(inertJson(value)).not.toContain('\n');
  });
});
