// Unit tests of the folder locks: a stale lock taken over, and a process killed at every file step of a take-over
// and a release, leave nothing behind; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DirLocks } from './lock.js';

const ROOT = resolve(__dirname, '../..');
const LOCK_MODULE = pathToFileURL(resolve(__dirname, 'lock.ts')).href;
let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'ty-lock-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let n = 0;
const fresh = (): string => {
  const d = join(tmp, `l${n++}`);
  mkdirSync(d, { recursive: true });
  return d;
};

/** A lock `name` in `dir` whose owner is a process of this machine that is gone (no such pid). */
function plantStale(dir: string, name: string): void {
  mkdirSync(join(dir, name));
  const owner = { pid: 2 ** 22 + 17, host: hostname(), token: 'dead0000dead0000dead0000', at: Date.now(), start: '1' };
  writeFileSync(join(dir, name, 'owner.json'), JSON.stringify(owner));
}

const opts = { timeoutMs: 20_000, staleMs: 600_000 };

/**
 * A separate process takes `x` over from its dead owner and releases it, counting its file-system steps; with
 * `killAt`, it kills itself with SIGKILL before step `killAt` (a crash between two steps, as kill -9 or a power
 * cut would leave it). Resolves with the steps it ran before stopping, and how it ended.
 */
function child(dir: string, killAt: number): Promise<{ steps: number; signal: string | null }> {
  const script = join(tmp, `child-${n++}.mts`);
  writeFileSync(
    script,
    `import { DirLocks } from ${JSON.stringify(LOCK_MODULE)};
let steps = 0;
const io = async (fn) => {
  steps++;
  if (steps === ${killAt}) process.kill(process.pid, 'SIGKILL');
  process.stdout.write(steps + '\\n');
  return fn();
};
const l = new DirLocks(${JSON.stringify(dir)}, { timeoutMs: 20000, staleMs: 600000, io });
const t = await l.acquire('x');
await l.release('x', t);
`,
  );
  return new Promise((res, rej) => {
    const p = spawn(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += String(d)));
    p.stderr.on('data', (d: Buffer) => (err += String(d)));
    p.once('error', rej);
    p.once('exit', (code, signal) => {
      if (code !== 0 && signal === null) rej(new Error(`child exited ${code}: ${err}`));
      const lines = out.trim().split('\n').filter(Boolean);
      res({ steps: Number(lines[lines.length - 1] ?? 0), signal });
    });
  });
}

describe('DirLocks', () => {
  it('takes over a lock whose owner process is gone and leaves nothing behind after releasing it', async () => {
    const dir = fresh();
    plantStale(dir, 'x');
    const l = new DirLocks(dir, opts);
    const t = await l.acquire('x');
    expect(readdirSync(dir)).toEqual(['x']);
    expect((await l.owner('x'))?.token).toBe(t);
    await l.release('x', t);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('never removes a lock it does not own: release with another token leaves the holder its lock', async () => {
    const dir = fresh();
    const a = new DirLocks(dir, opts);
    const t = await a.acquire('x');
    await new DirLocks(dir, opts).release('x', 'not-the-token');
    expect((await a.owner('x'))?.token).toBe(t);
    await a.release('x', t);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('an empty lock folder (a releaser killed before its last step) is free to take', async () => {
    const dir = fresh();
    mkdirSync(join(dir, 'x'));
    const l = new DirLocks(dir, { ...opts, timeoutMs: 1000 });
    const t = await l.acquire('x');
    await l.release('x', t);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('four takers of one stale lock: one at a time, and nothing left behind', async () => {
    const dir = fresh();
    plantStale(dir, 'x');
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        const l = new DirLocks(dir, opts);
        for (let i = 0; i < 5; i++) {
          const t = await l.acquire('x');
          inside++;
          most = Math.max(most, inside);
          await new Promise((r) => setTimeout(r, 1));
          inside--;
          await l.release('x', t);
        }
      }),
    );
    expect(most).toBe(1);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a process killed before any file step of a take-over or a release leaves no .dead-* folder, and the next ' +
    'taker leaves nothing at all', async () => {
    const whole = fresh();
    plantStale(whole, 'x');
    const { steps: total, signal } = await child(whole, 0);
    expect(signal).toBeNull();
    expect(readdirSync(whole)).toEqual([]);
    expect(total).toBeGreaterThan(4);
    for (let k = 1; k <= total; k++) {
      const dir = fresh();
      plantStale(dir, 'x');
      const r = await child(dir, k);
      expect(r.signal, `killed before step ${k}`).toBe('SIGKILL');
      const left = readdirSync(dir);
      expect(
        left.filter((e) => e.startsWith('.dead-')),
        `after a kill before step ${k}`,
      ).toEqual([]);
      // the next process comes later: whatever the killed one left is at least a second old
      const past = new Date(Date.now() - 2000);
      for (const e of left) utimesSync(join(dir, e), past, past);
      const next = new DirLocks(dir, opts);
      const t = await next.acquire('x');
      await next.release('x', t);
      expect(readdirSync(dir), `after a kill before step ${k} (left: ${left.join(', ')})`).toEqual([]);
    }
  }, 120_000);
});
