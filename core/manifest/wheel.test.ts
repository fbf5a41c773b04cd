// Unit tests for core/manifest/wheel.ts: what a declared pure-Python wheel may hold, read from its zip directory;
// test side.
import { describe, expect, it } from 'vitest';
import { tinyWheel, zip } from '../../test/helpers/wheel.js';
import { checkPureWheel, zipEntryNames } from './wheel.js';

const refusal = (fn: () => void) => {
  try {
    fn();
  } catch (e) {
    return e as { code?: string; message: string; data?: unknown };
  }
  throw new Error('not refused');
};

describe('checkPureWheel', () => {
  it('reads the entry names of a wheel and accepts a pure-Python one', () => {
    const w = tinyWheel();
    expect(zipEntryNames(w.file, w.bytes)).toContain('tinytext/__init__.py');
    expect(() => checkPureWheel(w.file, w.bytes)).not.toThrow();
  });

  it.each([
    'tinytext/_speed.cpython-314-wasm32-emscripten.so',
    'tinytext/libz.so.1',
    'tinytext/_speed.pyd',
    'tinytext/lib.dylib',
    'tinytext/helper.DLL',
    'tinytext/libfoo.a',
    'tinytext/module.wasm',
  ])('refuses native code (%s) with E_INVALID_MANIFEST, one line naming the wheel and the entry', (name) => {
    const w = tinyWheel({ [name]: new Uint8Array([0, 97, 115, 109]) });
    const e = refusal(() => checkPureWheel(w.file, w.bytes));
    expect(e.code).toBe('E_INVALID_MANIFEST');
    expect(e.message).toBe(
      `the wheel ${w.file} holds native code (${JSON.stringify(name)}); only pure-Python wheels are supported`,
    );
    expect(e.data).toEqual({ path: 'python.packages', file: w.file });
  });

  it.each(['../escape.py', 'tinytext/../../escape.py', '/etc/cron.d/x', 'tinytext\\..\\x.py', 'a\0b.py'])(
    'refuses an entry that leaves the install folder (%j)',
    (name) => {
      const w = tinyWheel({ [name]: 'x = 1\n' });
      const e = refusal(() => checkPureWheel(w.file, w.bytes));
      expect(e.code).toBe('E_INVALID_MANIFEST');
      expect(e.message).toContain('has an entry that leaves the install folder');
      expect(e.message).not.toContain('\n');
    },
  );

  it('refuses bytes that are not a zip archive, and a damaged directory', () => {
    expect(refusal(() => checkPureWheel('x-1.0-py3-none-any.whl', new TextEncoder().encode('not a zip'))).message).toBe(
      'the wheel x-1.0-py3-none-any.whl is not a zip archive (a wheel is one, PEP 427)',
    );
    const good = zip({ 'a.py': 'x = 1\n' });
    const bad = Buffer.from(good);
    bad.writeUInt32LE(0xdeadbeef, good.length - 22 - 46 - 4); // the central entry's signature
    expect(refusal(() => checkPureWheel('x-1.0-py3-none-any.whl', bad)).message).toContain('damaged zip directory');
  });
});
