// Readiness checks: all must pass, each bounded in time, reasons without driver text; test side.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileStoreBackend } from '../store/file-store.js';
import { readiness, storeCheck } from './health.js';

describe('readiness', () => {
  it('is ready only when every check passes; a hung check times out; reasons are codes, not messages', async () => {
    expect(await readiness({ a: async () => undefined })).toEqual({ ok: true, checks: { a: { ok: true } } });
    const r = await readiness(
      {
        store: async () => {
          throw Object.assign(new Error('password=hunter2 refused'), { code: 'ECONNREFUSED' });
        },
        sandbox: () => new Promise(() => undefined),
        fine: async () => undefined,
      },
      100,
    );
    expect(r).toEqual({
      ok: false,
      checks: {
        store: { ok: false, reason: 'ECONNREFUSED' },
        sandbox: { ok: false, reason: 'timed out' },
        fine: { ok: true },
      },
    });
  });
  it('the file store is ready while its folder is writable', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ty-ready-'));
    try {
      await expect(storeCheck(new FileStoreBackend(dir))()).resolves.toBeUndefined();
      await expect(storeCheck(new FileStoreBackend(join(dir, 'absent')))()).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
