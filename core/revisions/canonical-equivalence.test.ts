// Property tests: canonicalParts / canonicalJson produce exactly the text (and the errors) of the plain recursive
// encoder they replaced.
import { describe, expect, it } from 'vitest';
import { canonicalJson, canonicalParts, joinParts, PART_MIN } from './canonical.js';
import { TyError } from '../errors.js';

/** The encoder before the native-scan fast path (verbatim), the reference the fast path must match byte for byte. */
function reference(value: unknown, code = 'E_INVALID_MANIFEST'): string {
  const seen = new Set<object>();
  const enc = (v: unknown, depth: number): string => {
    if (depth > 256) throw new TyError(code as 'E_INVALID_MANIFEST', 'value nests deeper than 256 levels');
    if (v === null) return 'null';
    switch (typeof v) {
      case 'string':
        return JSON.stringify(v);
      case 'boolean':
        return v ? 'true' : 'false';
      case 'number':
        if (!Number.isFinite(v)) throw new TyError(code as 'E_INVALID_MANIFEST', 'numbers must be finite');
        return JSON.stringify(v);
      case 'object': {
        if (seen.has(v)) throw new TyError(code as 'E_INVALID_MANIFEST', 'value contains a cycle');
        seen.add(v);
        try {
          if (Array.isArray(v)) {
            const parts: string[] = [];
            for (let i = 0; i < v.length; i++) {
              if (!(i in v)) throw new TyError(code as 'E_INVALID_MANIFEST', 'arrays must not be sparse');
              parts.push(enc(v[i], depth + 1));
            }
            return `[${parts.join(',')}]`;
          }
          const proto = Object.getPrototypeOf(v);
          if (proto !== Object.prototype && proto !== null)
            throw new TyError(code as 'E_INVALID_MANIFEST', 'only plain objects can be encoded');
          const keys = Object.keys(v).sort();
          const parts: string[] = [];
          for (const k of keys) {
            const item = (v as Record<string, unknown>)[k];
            if (item === undefined) continue;
            parts.push(`${JSON.stringify(k)}:${enc(item, depth + 1)}`);
          }
          return `{${parts.join(',')}}`;
        } finally {
          seen.delete(v);
        }
      }
      default:
        throw new TyError(code as 'E_INVALID_MANIFEST', `a ${typeof v} cannot be encoded as JSON`);
    }
  };
  return enc(value, 0);
}

/** mulberry32: a small seeded generator, so a failure names the seed that reproduces it. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Alphabets a string is drawn from: plain ASCII, Latin-1, BMP, astral pairs, and what JSON must escape.
const CONTROLS = Array.from({ length: 32 }, (_, i) => String.fromCharCode(i));
const ALPHABETS: string[][] = [
  ['a', 'b', 'z', '0', ' ', '~', '\x7f', '/', "'", '<', '{', '}'],
  ['é', 'ü', 'ÿ', '\xa0', '\x80', '\x9f'],
  ['ж', '中', '\u2028', '\u2029', '\ufeff', '\uffff', '\ue000'],
  ['😀', '\u{10ffff}', '\u{1f600}', '𝄞'],
  ['"', '\\', ...CONTROLS],
  ['\ud800', '\udbff', '\udc00', '\udfff'], // lone surrogates, and pairs when two meet in order
];
const NUMBERS = [
  0,
  -0,
  1,
  -1,
  0.1,
  1e21,
  1e-7,
  1e-6,
  123456789012345680000,
  5e-324,
  -5e-324,
  Number.MAX_VALUE,
  -Number.MAX_VALUE,
  Number.MIN_SAFE_INTEGER,
  Number.MAX_SAFE_INTEGER,
  2 ** 53 + 2,
  1 / 3,
  4.35,
  0.000001,
  (1e300 * 10 ** 8) / 10 ** 8,
];

function gen(r: () => number) {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const str = (long: boolean): string => {
    // long strings straddle the native-scan and own-piece thresholds; one unusual character may sit anywhere
    const n = long ? pick([255, 256, 257, 1000, PART_MIN - 1, PART_MIN, PART_MIN + 1, 70_000]) : Math.floor(r() * 12);
    const base = pick(ALPHABETS.slice(0, 4));
    let s = '';
    while (s.length < n) s += pick(base);
    if (s.length > n && n > 0) s = s.slice(0, n); // may cut an astral pair: a lone high surrogate at the end
    if (r() < 0.5 && s.length > 0) {
      const at = pick([0, s.length - 1, s.length, Math.floor(r() * s.length)]);
      s = s.slice(0, at) + pick(pick(ALPHABETS.slice(4))) + s.slice(at);
    }
    return s;
  };
  const value = (depth: number): unknown => {
    const k = r();
    if (depth > 3 || k < 0.35) {
      const leaf = r();
      if (leaf < 0.35) return str(r() < 0.4);
      if (leaf < 0.7) return r() < 0.5 ? pick(NUMBERS) : (r() - 0.5) * 10 ** Math.floor(r() * 40 - 20);
      if (leaf < 0.85) return r() < 0.5;
      return null;
    }
    if (k < 0.6) return Array.from({ length: Math.floor(r() * 5) }, () => value(depth + 1));
    const o: Record<string, unknown> = r() < 0.1 ? Object.create(null) : {};
    const n = Math.floor(r() * 6);
    for (let i = 0; i < n; i++) {
      // key orders: integer-like keys (which engines list first, numerically), prefixes, non-ASCII, empty, huge
      const key = pick([
        () => String(Math.floor(r() * 20)),
        () => str(false),
        () => pick(['a', 'aa', 'B', '', '_', 'é', 'ж', '😀', '\ud800', '10', '2', '-1', '01', '1.5', '__proto__x']),
        () => (r() < 0.05 ? str(true) : 'k' + i),
      ])();
      o[key] = r() < 0.1 ? undefined : value(depth + 1);
    }
    return o;
  };
  return value;
}

/** The outcome of an encoder: its text, or the code and message it threw. */
function outcome(f: () => string): string {
  try {
    return `ok:${f()}`;
  } catch (e) {
    return e instanceof TyError ? `err:${e.code}:${e.message}` : `raw:${String(e)}`;
  }
}

describe('canonicalParts and canonicalJson equal the reference encoder', () => {
  it('on 2000 random values (unicode, lone surrogates, controls, -0, extreme numbers, nesting, key orders, long strings)', () => {
    for (let seed = 1; seed <= 2000; seed++) {
      const v = gen(rng(seed))(0);
      const want = reference(v, 'E_INVALID_ARGS');
      const parts = canonicalParts(v, 'E_INVALID_ARGS');
      expect(parts.length, `seed ${seed}`).toBeGreaterThan(0);
      expect(
        parts.every((p) => p.length > 0),
        `seed ${seed}`,
      ).toBe(true);
      expect(parts.join(''), `seed ${seed}`).toBe(want);
      expect(joinParts(parts), `seed ${seed}`).toBe(want);
      expect(canonicalJson(v, 'E_INVALID_ARGS'), `seed ${seed}`).toBe(want);
      expect(JSON.parse(want), `seed ${seed}`).toEqual(JSON.parse(JSON.stringify(v)));
    }
  });

  it('on long strings with each escaped character (and lone surrogates) at the start, middle and end', () => {
    const specials = [
      ...CONTROLS,
      '"',
      '\\',
      '\ud800',
      '\udbff',
      '\udc00',
      '\udfff',
      '\ud83d\ude00',
      '\u2028',
      '\x7f',
      'é',
      'ж',
    ];
    for (const len of [256, PART_MIN]) {
      for (const base of ['y', 'é', 'ж', '😀']) {
        const body = base.repeat(Math.ceil(len / base.length)).slice(0, len);
        for (const c of specials) {
          for (const s of [c + body, body.slice(0, len >> 1) + c + body.slice(len >> 1), body + c, body]) {
            const v = { s, t: [{ [s.slice(0, 300)]: s }] };
            const want = reference(v);
            expect(canonicalParts(v).join('')).toBe(want);
            expect(canonicalJson(s)).toBe(JSON.stringify(s));
          }
        }
      }
    }
  });

  it('a long string that needs no escaping is a piece of its own, the very string given (no copy, no join)', () => {
    const data = 'y'.repeat(PART_MIN * 4);
    const parts = canonicalParts({ k: 2, data }, 'E_INVALID_ARGS');
    expect(parts).toEqual(['{"data":"', data, '","k":2}']);
    expect(parts[1]).toBe(data);
    // one that needs escaping is escaped once and kept as a piece of its own too
    expect(canonicalParts({ data: data + '\n', k: 2 })).toEqual(['{"data":', JSON.stringify(data + '\n'), ',"k":2}']);
    expect(canonicalParts(data)).toEqual(['"', data, '"']);
    expect(canonicalParts([data + '"', data + '\\'])).toEqual([
      '[',
      JSON.stringify(data + '"'),
      ',',
      JSON.stringify(data + '\\'),
      ']',
    ]);
    // short strings stay inside the text around them
    expect(canonicalParts({ a: 'y'.repeat(PART_MIN - 1), b: 'x\n'.repeat(300) })).toHaveLength(1);
  });

  it('refuses exactly what the reference refuses, with the same code and message (first problem in key order)', () => {
    const deep: unknown[] = [];
    let cur = deep;
    for (let i = 0; i < 300; i++) cur.push([]), (cur = cur[0] as unknown[]);
    const cyc: Record<string, unknown> = { a: 1 };
    cyc.z = { back: cyc };
    const shared = { x: 1 };
    const bad: unknown[] = [
      NaN,
      -Infinity,
      new Date(0),
      new Map(),
      () => 1,
      Symbol('s'),
      1n,
      [1, , 3],
      [undefined],
      deep,
      cyc,
      { b: NaN, a: 1n },
      { a: 'y'.repeat(PART_MIN), b: new Set() },
      Object.create({ inherited: 1 }),
      { x: shared, y: shared },
      [shared, [shared]],
      undefined,
      { u: undefined },
    ];
    for (const v of bad) {
      for (const code of ['E_INVALID_ARGS', 'E_INVALID_TASK'] as const) {
        expect(outcome(() => canonicalParts(v, code).join(''))).toBe(outcome(() => reference(v, code)));
        expect(outcome(() => canonicalJson(v, code))).toBe(outcome(() => reference(v, code)));
      }
    }
  });
});
