// Tests of the runtime-library listing behind bubblewrap's minimal binds (ELF interpreter --list vs ldd, cache
// invalidation); Node host, trusted side.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { elfInterpreter, sharedLibraries } from './bwrap.js';
import { resolveDeno } from '../sandbox/runtime.js';

const linux = process.platform === 'linux';
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tysandbox-libs-test-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What ldd(1) itself lists, parsed the same way: [path, realpath] pairs. */
function lddList(bin: string): [string, string][] {
  const out = execFileSync('ldd', [bin], { encoding: 'utf8' });
  const pairs: [string, string][] = [];
  for (const line of out.split('\n')) {
    const m = /(?:=>\s*)?(\/\S+)\s+\(0x[0-9a-f]+\)/.exec(line);
    if (m) pairs.push([m[1] as string, realpathSync(m[1] as string)]);
  }
  return pairs;
}

/**
 * A minimal little-endian ELF64 header with `phnum` program headers of the given types (no PT_INTERP unless listed).
 */
function fakeElf(types: number[], interp?: string): Buffer {
  const phoff = 64;
  const phentsize = 56;
  const dataOff = phoff + phentsize * types.length;
  const body = Buffer.from(interp !== undefined ? `${interp}\0` : '', 'latin1');
  const b = Buffer.alloc(dataOff + body.length);
  b.writeUInt32BE(0x7f454c46, 0);
  b[4] = 2; // ELFCLASS64
  b[5] = 1; // little-endian
  b[6] = 1;
  b.writeBigUInt64LE(BigInt(phoff), 0x20);
  b.writeUInt16LE(phentsize, 0x36);
  b.writeUInt16LE(types.length, 0x38);
  types.forEach((t, i) => {
    const o = phoff + i * phentsize;
    b.writeUInt32LE(t, o);
    if (t === 3) {
      b.writeBigUInt64LE(BigInt(dataOff), o + 8);
      b.writeBigUInt64LE(BigInt(body.length), o + 32);
    }
  });
  body.copy(b, dataOff);
  return b;
}

describe.skipIf(!linux)('shared library listing', () => {
  it('lists exactly what ldd lists for node, deno and prlimit', () => {
    const bins = [realpathSync(process.execPath)];
    const deno = resolveDeno();
    if (deno) bins.push(realpathSync(deno));
    try {
      bins.push(realpathSync(execFileSync('sh', ['-c', 'command -v prlimit'], { encoding: 'utf8' }).trim()));
    } catch {
      /* no prlimit here */
    }
    for (const bin of bins) {
      const got = sharedLibraries(bin);
      expect(got).not.toBeNull();
      expect(got!.map((l) => [l.path, l.real])).toEqual(lddList(bin));
      expect(got!.length).toBeGreaterThan(0);
    }
  });

  it('reads the program interpreter from the ELF header', () => {
    const interp = elfInterpreter(realpathSync(process.execPath));
    expect(interp).toMatch(/^\/.*ld-.*\.so/);
    const withInterp = join(dir, 'with-interp');
    writeFileSync(withInterp, fakeElf([1, 3], '/lib/ld-fake.so.1'));
    expect(elfInterpreter(withInterp)).toBe('/lib/ld-fake.so.1');
    const staticElf = join(dir, 'static');
    writeFileSync(staticElf, fakeElf([1, 1]));
    expect(elfInterpreter(staticElf)).toBe('');
    const relative = join(dir, 'relative');
    writeFileSync(relative, fakeElf([3], 'ld.so'));
    expect(elfInterpreter(relative)).toBeUndefined();
    const script = join(dir, 'script');
    writeFileSync(script, '#!/bin/sh\nexit 0\n');
    expect(elfInterpreter(script)).toBeUndefined();
    const truncated = join(dir, 'truncated');
    writeFileSync(truncated, fakeElf([1, 3], '/lib/ld-fake.so.1').subarray(0, 80));
    expect(elfInterpreter(truncated)).toBeUndefined();
    expect(elfInterpreter(join(dir, 'missing'))).toBeUndefined();
  });

  it('lists a binary again when it was replaced (cache keyed by inode, size and mtime)', () => {
    const bin = join(dir, 'bin-copy');
    copyFileSync(realpathSync(process.execPath), bin);
    const first = sharedLibraries(bin);
    expect(first).not.toBeNull();
    expect(first!.length).toBeGreaterThan(0);
    // Same path, different content (a script is no dynamic executable: ldd lists nothing): a stale cache would still
    // list node's libraries.
    rmSync(bin);
    writeFileSync(bin, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    expect(sharedLibraries(bin)).toEqual([]);
  });
});
