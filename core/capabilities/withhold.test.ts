// Unit tests of withholding secret values from foreign text as whole tokens; trusted side.
import { describe, expect, it } from 'vitest';
import { holdsToken, valueForms, withholdInJson, withholdTokens } from './withhold.js';

const W = '<withheld>';

describe('withholdTokens', () => {
  it('withholds a value standing as a token, in any of its forms', () => {
    const v = 'sk-live-9Qx2';
    expect(withholdTokens(`bad token ${v}`, [v])).toBe(`bad token ${W}`);
    expect(withholdTokens(`{"token":"${v}"}`, [v])).toBe(`{"token":"${W}"}`);
    expect(withholdTokens(`https://api.example.com/v1?key=${v}&x=1`, [v])).toBe(
      `https://api.example.com/v1?key=${W}&x=1`,
    );
    expect(withholdTokens(`Authorization: Bearer ${v}\nnext`, [v])).toBe(`Authorization: Bearer ${W}\nnext`);
    const q = 'quo"te\\slash pass';
    expect(withholdTokens(`{"v":${JSON.stringify(q)}}`, [q])).toBe(`{"v":"${W}"}`);
    expect(withholdTokens(`GET /x?p=${encodeURIComponent(q)}`, [q])).toBe(`GET /x?p=${W}`);
  });

  it('never touches a value inside a longer word, number or identifier', () => {
    for (const [text, values] of [
      ['the data total is 2026-12-02T10:00:00.000Z', ['ta', 't', '0', 'e', 'x']],
      ['text-stats@bagaaierapqucmugcesg7ua72us5v2rodpjtis4hd2gkyasc456j5jd3bu2za', ['e', 'x', 'ta', '0', 't']],
      ['éte ßt ｔ', ['t']],
      ['x̂', ['x']],
    ] as const)
      expect(withholdTokens(text, values), text).toBe(text);
    expect(holdsToken('a x b', ['x'])).toBe(true);
    expect(holdsToken('axb', ['x'])).toBe(false);
  });

  it('withholds one-character values standing alone, and the longest of overlapping values', () => {
    expect(withholdTokens('e = mc2; e', ['e'])).toBe(`${W} = mc2; ${W}`);
    expect(withholdTokens('0', ['0'])).toBe(W);
    expect(withholdTokens('key abc-def here', ['abc', 'abc-def'])).toBe(`key ${W} here`);
    // a value whose edges are not word characters needs no boundary there
    expect(withholdTokens('x-!!-y', ['-!!-'])).toBe(`x${W}y`);
  });

  it('is the identity without values, and ignores empty ones', () => {
    expect(withholdTokens('abc', [])).toBe('abc');
    expect(withholdTokens('abc', [''])).toBe('abc');
    expect(valueForms('a b')).toEqual(['a b', 'a%20b']);
  });
});

describe('withholdInJson', () => {
  it('withholds values in every string and key, decoded first', () => {
    const v = 'tok"en-1';
    expect(withholdInJson({ a: v, list: [`x ${v}`, 1, null], [v]: 2, nested: { k: 'data' } }, [v])).toEqual({
      a: W,
      list: [`x ${W}`, 1, null],
      [W]: 2,
      nested: { k: 'data' },
    });
    expect(withholdInJson({ t: 'ta' }, [])).toEqual({ t: 'ta' });
    expect(withholdInJson(() => 1, ['x'])).toBeUndefined();
  });
});
