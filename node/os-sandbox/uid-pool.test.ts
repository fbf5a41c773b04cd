// Unit tests of the per-sandbox uid leases: unique across processes, released, stale ones reclaimed; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SANDBOX_UID_BASE, SANDBOX_UID_COUNT, UidPool } from './uid-pool.js';

const MODULE = pathToFileURL(resolve(__dirname, '../../dist/node/os-sandbox/uid-pool.js')).href;
let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'ty-uidpool-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const fresh = (name: string) => join(tmp, name);
const child = (dir: string, count: number, take: number, hold: boolean) =>
  `import { UidPool } from ${JSON.stringify(MODULE)};
const p = new UidPool({ dir: ${JSON.stringify(dir)}, base: ${SANDBOX_UID_BASE}, count: ${count} });
const got = []; for (let i = 0; i < ${take}; i++) got.push(p.acquire().uid);
console.log(JSON.stringify(got));${hold ? "\nprocess.stdin.resume(); process.stdin.on('end', () => process.exit(0));" : ''}`;

describe('UidPool', () => {
  it('the reserved range is above normal, subordinate and nobody uids and below 2^31', () => {
    expect(SANDBOX_UID_BASE).toBeGreaterThan(1_879_048_191);
    expect(SANDBOX_UID_BASE + SANDBOX_UID_COUNT).toBeLessThanOrEqual(0x7ffe0000);
  });

  it('hands out distinct uids to four processes leasing at the same moment', async () => {
    const dir = fresh('multi');
    const procs = Array.from({ length: 4 }, () =>
      spawn(process.execPath, ['--input-type=module', '-e', child(dir, 200, 40, true)], {
        stdio: ['pipe', 'pipe', 'inherit'],
      }),
    );
    const outs = await Promise.all(
      procs.map(
        (p) =>
          new Promise<number[]>((res, rej) => {
            let out = '';
            p.stdout.on('data', (d: Buffer) => {
              out += String(d);
              if (out.includes('\n')) res(JSON.parse(out) as number[]);
            });
            p.once('exit', (c) => rej(new Error(`child exited ${c}`)));
          }),
      ),
    );
    const all = outs.flat();
    expect(all).toHaveLength(160);
    expect(new Set(all).size).toBe(160);
    for (const u of all) expect(u >= SANDBOX_UID_BASE && u < SANDBOX_UID_BASE + 200).toBe(true);
    // While they hold them, this process gets none of those 160 of the 200.
    const pool = new UidPool({ dir, count: 200 });
    const mine = Array.from({ length: 40 }, () => pool.acquire().uid);
    expect(mine.filter((u) => all.includes(u))).toEqual([]);
    expect(() => pool.acquire()).toThrow(/all 200 sandbox uids/);
    for (const p of procs) p.stdin.end();
    await Promise.all(procs.map((p) => new Promise((r) => (p.exitCode !== null ? r(null) : p.once('exit', r)))));
  }, 60_000);

  it('release frees the uid for the next lease; a second release of the same lease does nothing', () => {
    const pool = new UidPool({ dir: fresh('release'), count: 1 });
    const a = pool.acquire();
    expect(() => pool.acquire()).toThrow(expect.objectContaining({ code: 'E_SANDBOX_FAILED' }));
    a.release();
    const b = pool.acquire();
    expect(b.uid).toBe(a.uid);
    a.release(); // stale handle: must not free b's lease
    expect(() => pool.acquire()).toThrow(/in use/);
    b.release();
  });

  it('reclaims the lease of a process that died holding it, but not while a process still runs as that uid', () => {
    const dir = fresh('stale');
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', child(dir, 1, 1, false)], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const [uid] = JSON.parse(r.stdout) as number[];
    expect(readdirSync(dir)).toContain(String(uid));
    expect(() => new UidPool({ dir, count: 1, uidBusy: () => true }).acquire()).toThrow(/in use/);
    expect(new UidPool({ dir, count: 1 }).acquire().uid).toBe(uid);
  });

  it('the first lease of a new pool sweeps away every lease left by processes that died holding them', () => {
    const dir = fresh('sweep');
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', child(dir, 1000, 5, false)], {
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    expect(readdirSync(dir).filter((n) => /^\d+$/.test(n))).toHaveLength(5);
    const lease = new UidPool({ dir, count: 1000 }).acquire();
    expect(readdirSync(dir)).toEqual([String(lease.uid)]);
  });

  it('reclaims an ownerless lease folder (a taker that died mid-way) after 1 s, not before', () => {
    const dir = fresh('ownerless');
    const pool = new UidPool({ dir, count: 1 });
    pool.acquire().release(); // creates the folder
    mkdirSync(join(dir, String(SANDBOX_UID_BASE)));
    mkdirSync(join(dir, String(SANDBOX_UID_BASE), 'x'));
    expect(() => pool.acquire()).toThrow(/in use/);
    const old = new Date(Date.now() - 5000);
    utimesSync(join(dir, String(SANDBOX_UID_BASE)), old, old);
    expect(pool.acquire().uid).toBe(SANDBOX_UID_BASE);
  });

  it('refuses a lease folder others can write', () => {
    const dir = fresh('open');
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    expect(() => new UidPool({ dir }).acquire()).toThrow(/unusable/);
  });
});
