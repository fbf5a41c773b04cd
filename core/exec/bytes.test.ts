// Tests of core/exec/bytes.ts utf8Length against the encoder's own count, around its chunk boundaries; test side.
import { describe, expect, it } from 'vitest';
import { utf8Length } from './bytes.js';

const CHUNK = 64 * 1024;
const encoded = (s: string): number => new TextEncoder().encode(s).length;

describe('utf8Length', () => {
  it('counts what TextEncoder writes, for short and long strings of 1-, 2-, 3- and 4-byte characters', () => {
    const pieces = ['a', 'é', 'ж', '€', '😀', '\ud800', '\udc00', '\u0000', '"'];
    for (const p of pieces) {
      for (const n of [1, 63, 64, 65, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 7]) {
        const s = p.repeat(Math.ceil(n / p.length)).slice(0, n);
        expect(utf8Length(s), `${JSON.stringify(p)} x ${n}`).toBe(encoded(s));
        expect(utf8Length(s)).toBe(Buffer.byteLength(s, 'utf8'));
      }
    }
  });

  it('keeps a surrogate pair whole across a chunk boundary, and counts a lone surrogate there as U+FFFD', () => {
    for (const at of [CHUNK - 2, CHUNK - 1, CHUNK, 2 * CHUNK - 1]) {
      const pair = `${'x'.repeat(at)}😀${'y'.repeat(CHUNK)}`;
      expect(utf8Length(pair), `pair at ${at}`).toBe(encoded(pair));
      const lone = `${'x'.repeat(at)}\ud83d${'y'.repeat(CHUNK)}`;
      expect(utf8Length(lone), `lone high surrogate at ${at}`).toBe(encoded(lone));
      const trail = `${'x'.repeat(at)}\ude00${'y'.repeat(CHUNK)}`;
      expect(utf8Length(trail), `lone low surrogate at ${at}`).toBe(encoded(trail));
    }
    const end = `${'x'.repeat(CHUNK + 5)}\ud83d`;
    expect(utf8Length(end)).toBe(encoded(end));
  });

  it('matches TextEncoder on mixed text, surrogate pairs and lone surrogates (short strings)', () => {
    for (const s of ['', 'abc', 'é', '€', '😀', 'a😀b€é', '\ud800', '\udc00x', 'x\ud83d'])
      expect(utf8Length(s)).toBe(encoded(s));
  });

  it('mixed text of every width, 1 MiB', () => {
    let s = '';
    const alphabet = ['a', 'é', 'ж', '€', '😀', '\n', '\ud800'];
    for (let i = 0; s.length < 1024 * 1024; i++) s += alphabet[(i * 7919) % alphabet.length]!.repeat((i % 5) + 1);
    expect(utf8Length(s)).toBe(encoded(s));
  });
});
