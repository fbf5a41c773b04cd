// Unit tests for node/store/file-store.ts (FileStoreBackend): atomicity, modes, key checks, cross-process locks; test
// side.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { execFile } from 'node:child_process';
import { appendFile, mkdtemp, readdir, rm, stat, writeFile, mkdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { FileStoreBackend } from './file-store.js';
import { Store } from '../../core/store/contract.js';
import { TyError } from '../../core/errors.js';
import { StoreAuditLog, type AuditRecord } from '../../core/audit/trail.js';
import { ToolStorage } from '../../core/capabilities/storage.js';
import type { CallerIdentity } from '../../core/capabilities/fetch/mediated.js';

const run = promisify(execFile);
let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'tystore-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b ? new TextDecoder().decode(b) : undefined);

describe('FileStoreBackend', () => {
  it('puts, gets, lists and deletes, with 0600 files in 0700 folders', async () => {
    const s = new FileStoreBackend(join(root, 'store'));
    expect(await s.get('ns', 'k')).toBeUndefined();
    await s.put('ns', 'k', enc('one'));
    await s.put('ns', 'k', enc('two'));
    await s.put('ns', 'a', enc('x'));
    expect(dec(await s.get('ns', 'k'))).toBe('two');
    expect(await s.list('ns')).toEqual(['a', 'k']);
    expect((await stat(join(root, 'store', 'ns', 'k'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(root, 'store', 'ns'))).mode & 0o777).toBe(0o700);
    expect((await stat(join(root, 'store'))).mode & 0o777).toBe(0o700);
    await s.delete('ns', 'k');
    await s.delete('ns', 'k');
    expect(await s.list('ns')).toEqual(['a']);
    expect(await s.list('empty')).toEqual([]);
    expect(await readdir(join(root, 'store', '.tmp'))).toEqual([]);
  });

  it('sweeps temp files left by a dead writer, keeps those of live ones', async () => {
    const tmpDir = join(root, 'store', '.tmp');
    await mkdir(tmpDir, { recursive: true });
    await writeFile(join(tmpDir, `${2 ** 22 + 999}.abcd`), 'half');
    await writeFile(join(tmpDir, `${process.ppid}.beef`), 'in progress');
    await new FileStoreBackend(join(root, 'store')).put('ns', 'k', enc('x'));
    expect(await readdir(tmpDir)).toEqual([`${process.ppid}.beef`]);
  });

  it.each([['..'], ['../x'], ['a/b'], ['.hidden'], [''], ['x'.repeat(201)], ['a\0b'], ['%2e%2e']])(
    'refuses the key %j with E_STORE and touches nothing',
    async (bad) => {
      const s = new FileStoreBackend(join(root, 'store'));
      await expect(s.put('ns', bad, enc('x'))).rejects.toMatchObject({ code: 'E_STORE' });
      await expect(s.get(bad, 'k')).rejects.toMatchObject({ code: 'E_STORE' });
      await expect(s.append(bad, 'x')).rejects.toMatchObject({ code: 'E_STORE' });
      await expect(s.withLock(bad, async () => 1)).rejects.toMatchObject({ code: 'E_STORE' });
      const left = await readdir(root);
      expect(left.filter((n) => n !== 'store')).toEqual([]);
    },
  );

  it('appends lines and reads them back; refuses a line break', async () => {
    const s = new FileStoreBackend(join(root, 'store'));
    await s.append('audit', '{"a":1}');
    await s.append('audit', 'x'.repeat(10_000)); // over PIPE_BUF: goes through the lock
    expect(await s.readLog('audit')).toEqual(['{"a":1}', 'x'.repeat(10_000)]);
    expect(await s.readLog('none')).toEqual([]);
    await expect(s.append('audit', 'a\nb')).rejects.toMatchObject({ code: 'E_STORE' });
    expect((await stat(join(root, 'store', '.logs', 'audit'))).mode & 0o777).toBe(0o600);
  });

  it('an append after a torn tail (a write cut short) starts on a fresh line: the next record parses', async () => {
    const s = new FileStoreBackend(join(root, 'store'));
    const store = new Store(s);
    await store.appendJsonl('audit', { n: 1 });
    await appendFile(join(root, 'store', '.logs', 'audit'), '{"n":2,"tor'); // what a full disk leaves
    await store.appendJsonl('audit', { n: 3 });
    await s.append('audit', 'y'.repeat(10_000)); // the locked path too
    await appendFile(join(root, 'store', '.logs', 'audit'), 'zz');
    await s.append('audit', 'y'.repeat(10_000));
    const { entries, corrupt } = await store.readJsonl<unknown>('audit');
    expect(entries.slice(0, 2)).toEqual([{ n: 1 }, { n: 3 }]);
    expect(corrupt).toBe(4); // the two fragments (each its own line) and the two non-JSON lines
    expect((await s.readLog('audit')).slice(-2)).toEqual(['zz', 'y'.repeat(10_000)]);
  });

  it('serializes withLock inside one process', async () => {
    const s = new FileStoreBackend(join(root, 'store'));
    const store = new Store(s);
    await Promise.all(
      Array.from({ length: 40 }, () =>
        store.update<number>('c', 'n', async (n) => {
          const v = n ?? 0;
          await new Promise((r) => setTimeout(r, 1));
          return v + 1;
        }),
      ),
    );
    expect(await store.getJson('c', 'n')).toBe(40);
    await expect(
      s.withLock('x', async () => {
        throw new TyError('E_STORE', 'inner');
      }),
    ).rejects.toThrow('inner');
    expect(await s.withLock('x', async () => 7)).toBe(7); // released after a throw
  });

  it('takes over a lock whose owner process is gone, and gives up with E_BUSY on a live one', async () => {
    const s = new FileStoreBackend(join(root, 'store'), { lockTimeoutMs: 300 });
    const lockDir = join(root, 'store', '.locks', 'L');
    await mkdir(lockDir, { recursive: true });
    // A pid that cannot be alive (above pid_max on Linux).
    await writeFile(
      join(lockDir, 'owner.json'),
      JSON.stringify({ pid: 2 ** 22 + 12345, host: (await import('node:os')).hostname(), token: 't', at: Date.now() }),
    );
    expect(await s.withLock('L', async () => 'got it')).toBe('got it');
    await mkdir(lockDir, { recursive: true });
    await writeFile(
      join(lockDir, 'owner.json'),
      JSON.stringify({ pid: process.pid, host: (await import('node:os')).hostname(), token: 'other', at: Date.now() }),
    );
    await expect(s.withLock('L', async () => 'never')).rejects.toMatchObject({ code: 'E_BUSY' });
    // Never removes a lock it does not own.
    expect(JSON.parse(await readFile(join(lockDir, 'owner.json'), 'utf8')).token).toBe('other');
  });

  it('recovers within a second a lock folder left without an owner file (its taker died before writing it)', async () => {
    const s = new FileStoreBackend(join(root, 'store'), { lockTimeoutMs: 2000 });
    await mkdir(join(root, 'store', '.locks', 'L'), { recursive: true });
    expect(await s.withLock('L', async () => 'got it')).toBe('got it');
  });

  it('takes over a lock whose owner pid is alive but belongs to another process now (pid reused: other start time)', async () => {
    const { processStartTime } = await import('../process/identity.js');
    if (processStartTime(process.pid) === undefined) return; // no /proc: staleness falls back to lockStaleMs
    const s = new FileStoreBackend(join(root, 'store'), { lockTimeoutMs: 2000 });
    const lockDir = join(root, 'store', '.locks', 'L');
    await mkdir(lockDir, { recursive: true });
    const host = (await import('node:os')).hostname();
    await writeFile(
      join(lockDir, 'owner.json'),
      JSON.stringify({ pid: process.pid, start: '1', host, token: 'reused', at: Date.now() }),
    );
    expect(await s.withLock('L', async () => 'got it')).toBe('got it');
    // The same pid with its real start time is a live owner: E_BUSY.
    await mkdir(lockDir, { recursive: true });
    await writeFile(
      join(lockDir, 'owner.json'),
      JSON.stringify({ pid: process.pid, start: processStartTime(process.pid), host, token: 'live', at: 0 }),
    );
    await expect(
      new FileStoreBackend(join(root, 'store'), { lockTimeoutMs: 200 }).withLock('L', async () => 'never'),
    ).rejects.toMatchObject({ code: 'E_BUSY' });
  });

  it('bounds its open files: 2,000 concurrent operations with maxOpenFiles 8 never hold more than 8 at once', async () => {
    const s = new FileStoreBackend(join(root, 'store'), { maxOpenFiles: 8 });
    const before = (await readdir('/proc/self/fd').catch(() => [])).length;
    let peak = 0;
    const timer = setInterval(
      () =>
        void readdir('/proc/self/fd').then(
          (l) => (peak = Math.max(peak, l.length - before)),
          () => {},
        ),
      1,
    );
    await Promise.all(
      Array.from({ length: 2000 }, (_, i) =>
        i % 2 ? s.put('ns', `k${i % 50}`, enc('v'.repeat(100))) : s.append('log', `line ${i}`),
      ),
    );
    clearInterval(timer);
    expect(await s.readLog('log')).toHaveLength(1000);
    if (before > 0) expect(peak).toBeLessThanOrEqual(8 * 2 + 4);
  });

  it('keeps a counter exact and every log line whole across 4 processes', async () => {
    const storeUrl = pathToFileURL(join(import.meta.dirname, 'file-store.ts')).href;
    const coreUrl = pathToFileURL(join(import.meta.dirname, '..', '..', 'core', 'store', 'contract.ts')).href;
    const child = `
      const { FileStoreBackend } = await import(${JSON.stringify(storeUrl)});
      const { Store } = await import(${JSON.stringify(coreUrl)});
      const b = new FileStoreBackend(process.argv[1]);
      const s = new Store(b);
      for (let i = 0; i < 25; i++) {
        await s.update('c', 'n', (n) => (n ?? 0) + 1);
        await s.appendJsonl('log', { pid: process.pid, i, pad: 'p'.repeat(3000) });
        await b.put('objs', 'k' + (i % 3), new TextEncoder().encode(JSON.stringify({ pid: process.pid, i, pad: 'q'.repeat(50000) })));
      }`;
    const dir = join(root, 'store');
    await Promise.all(
      Array.from({ length: 4 }, () =>
        run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', child, dir], { timeout: 60_000 }),
      ),
    );
    const store = new Store(new FileStoreBackend(dir));
    expect(await store.getJson('c', 'n')).toBe(100);
    const { entries, corrupt } = await store.readJsonl<{ i: number }>('log');
    expect(corrupt).toBe(0);
    expect(entries).toHaveLength(100);
    for (const k of ['k0', 'k1', 'k2'])
      expect(JSON.parse(dec(await store.backend.get('objs', k))!).pad).toHaveLength(50000);
    expect(await readdir(join(dir, '.locks'))).toEqual([]);
  }, 90_000);
});

describe('tool storage writes behind the audit log (write-ahead)', () => {
  it("a storage write is on disk only after the audit records written before it, a call's staged intent record included", async () => {
    const store = new Store(new FileStoreBackend(join(root, 'store')));
    const audit = new StoreAuditLog(store);
    const tool = {
      name: 'kv',
      revision: 'bagaaierakvtoolrevision',
      manifest: { capabilities: { storage: { quotaBytes: 1024 } } },
    } as unknown as CallerIdentity;
    const storage = new ToolStorage(store);
    // the staged record's own timer (STAGED_SYNC_MS) never fires: only the storage write's write-ahead point can sync
    // it
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    try {
      for (const op of ['set', 'delete'] as const) {
        const rec = {
          v: 1,
          time: new Date().toISOString(),
          principal: 'cli:user',
          tool: 'kv',
          revision: tool.revision,
          kind: 'tool',
          decision: 'allow',
          list: 'allow',
          rule: 'tool(kv)',
          scope: 'flags',
          outcome: 'started',
          durationMs: 0,
        } as AuditRecord;
        const { durable } = await audit.stage(rec);
        let synced = false;
        void durable.then(() => (synced = true));
        if (op === 'set') await storage.set(tool, 'k', { n: 1 });
        else expect(await storage.delete(tool, 'k')).toBe(true);
        expect(synced, op).toBe(true);
      }
    } finally {
      vi.useRealTimers();
    }
    expect((await audit.read()).entries).toHaveLength(2); // (read back as interrupted: no completion follows)
  });
});
