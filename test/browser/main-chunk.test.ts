// The browser package's main chunk (index.js and every chunk it imports statically) stays within its budget, bytes
// and gzip: a static import that drags in zod whole, Pyodide's loader or the MCP SDK fails here; test side.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error a plain .mjs module of the benchmarks, without declarations
import { MAIN_CHUNK_BUDGET, MAIN_CHUNK_GZIP_BUDGET, mainChunk } from '../bench/browser-package.bench.mjs';

const OUT = resolve(import.meta.dirname, '..', '..', 'dist', 'browser');

describe('tysandbox/browser main chunk', () => {
  it('is within its budget (npm run build first)', () => {
    expect(existsSync(join(OUT, 'index.js')), 'dist/browser is missing: run npm run build').toBe(true);
    const size = mainChunk(OUT) as { files: number; raw: number; gzip: number };
    expect(size.files).toBeGreaterThan(1);
    expect(size.raw).toBeLessThanOrEqual(MAIN_CHUNK_BUDGET);
    expect(size.gzip).toBeLessThanOrEqual(MAIN_CHUNK_GZIP_BUDGET);
  });
});
