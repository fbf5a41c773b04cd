// Tests of the file store's generation counter (node/store/generation.ts); test side.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GENERATION_REUSE_MS, StoreGeneration } from './generation.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ty-gen-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const pause = () => new Promise((r) => setTimeout(r, GENERATION_REUSE_MS + 2));

describe('StoreGeneration', () => {
  it('absent before any writer; every bump of this process moves it at once; the file is 0600', () => {
    const g = new StoreGeneration(dir);
    expect(g.current()).toBe('absent');
    const seen = new Set([g.current()]);
    for (let i = 0; i < 5; i++) {
      g.bump();
      seen.add(g.current());
    }
    expect(seen.size).toBe(6);
    expect(statSync(g.path).mode & 0o777).toBe(0o600);
  });

  it("another process's bump is seen once the reuse window has passed", async () => {
    const g = new StoreGeneration(dir);
    const before = g.current();
    execFileSync(process.execPath, ['-e', `require('node:fs').appendFileSync(${JSON.stringify(g.path)}, 'g')`]);
    await pause();
    expect(g.current()).not.toBe(before);
  });

  it('past 64 KiB the counter file is replaced by a fresh one, which moves the generation too', () => {
    const g = new StoreGeneration(dir);
    g.bump();
    execFileSync(process.execPath, [
      '-e',
      `require('node:fs').appendFileSync(${JSON.stringify(g.path)}, 'g'.repeat(65536))`,
    ]);
    const ino = statSync(g.path).ino;
    const before = g.current();
    g.bump();
    expect(statSync(g.path).ino).not.toBe(ino);
    expect(statSync(g.path).size).toBe(1);
    expect(g.current()).not.toBe(before);
  });

  it('a store folder it cannot write to: bump never throws, current() reports what it can', () => {
    const g = new StoreGeneration(join(dir, 'missing'));
    expect(() => g.bump()).not.toThrow();
    expect(g.current()).toBe('absent');
  });
});
