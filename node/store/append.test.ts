// Tests of group-committed log appends (node/store/append.ts GroupAppender): durability order, batching, torn tails,
// other writers; test side.
import { spawn } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { GroupAppender, IDLE_CLOSE_MS, STAGED_SYNC_MS, appendLine } from './append.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ty-append-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** How many descriptors of this process are open on `p`. */
const openDescriptorsTo = (p: string): number =>
  readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === p;
    } catch {
      return false;
    }
  }).length;

const lines = (p: string) =>
  readFileSync(p, 'utf8')
    .split('\n')
    .filter((l) => l !== '');

describe('GroupAppender', () => {
  it('concurrent appends share fsyncs (fewer batches than records), every line whole and in order, file 0600', async () => {
    const p = join(dir, 'audit');
    const a = new GroupAppender(p);
    const rec = (i: number) => JSON.stringify({ i, pad: 'p'.repeat(300) });
    await Promise.all(Array.from({ length: 200 }, (_, i) => a.append(rec(i))));
    expect(lines(p)).toEqual(Array.from({ length: 200 }, (_, i) => rec(i)));
    expect(a.stats.records).toBe(200);
    expect(a.stats.batches).toBeLessThan(200);
    expect(a.stats.batches).toBeGreaterThan(0);
    expect(statSync(p).mode & 0o777).toBe(0o600);
  });

  it('a sequential append resolves only after its own commit (one batch each)', async () => {
    const p = join(dir, 'audit');
    const a = new GroupAppender(p);
    for (let i = 0; i < 5; i++) {
      await a.append(`{"n":${i}}`);
      expect(a.stats.records).toBe(i + 1);
      expect(lines(p)).toHaveLength(i + 1);
    }
    expect(a.stats.batches).toBe(5);
  });

  it('stage: resolves once the line is in the file, before its fsync; durable settles after the commit', async () => {
    const p = join(dir, 'audit');
    const a = new GroupAppender(p);
    const { durable } = await a.stage('{"n":1}');
    expect(lines(p)).toEqual(['{"n":1}']);
    expect(a.stats.records).toBe(0); // written, not yet synced
    await durable;
    expect(a.stats.records).toBe(1);
    await expect(new GroupAppender(join(dir, 'no', 'audit')).stage('{"n":2}')).rejects.toMatchObject({
      code: 'E_STORE',
    });
  });

  it("a staged line shares the next append's fsync (a call's intent and completion records: one commit for both)", async () => {
    const p = join(dir, 'audit');
    const a = new GroupAppender(p);
    for (let i = 0; i < 3; i++) {
      const { durable } = await a.stage(`{"started":${i}}`);
      await new Promise((r) => setImmediate(r)); // the call runs meanwhile
      expect(a.stats.records).toBe(2 * i); // staged: written, waiting for company
      await a.append(`{"done":${i}}`);
      await durable;
      expect(a.stats.records).toBe(2 * i + 2);
    }
    expect(a.stats.batches).toBe(3);
    expect(lines(p)).toEqual([
      '{"started":0}',
      '{"done":0}',
      '{"started":1}',
      '{"done":1}',
      '{"started":2}',
      '{"done":2}',
    ]);
  });

  it('a staged line with no append after it is made durable on its own (STAGED_SYNC_MS)', async () => {
    const a = new GroupAppender(join(dir, 'audit'));
    const { durable } = await a.stage('{"n":1}');
    await durable;
    expect(a.stats).toMatchObject({ batches: 1, records: 1 });
  });

  it('sync: a write-ahead point; resolves after the fsync that covers every line written before it, staged ones included, adding no line', async () => {
    const p = join(dir, 'audit');
    const a = new GroupAppender(p);
    // the staged line's own STAGED_SYNC_MS timer never fires here: only the write-ahead point can make it durable
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    try {
      const { durable } = await a.stage('{"started":1}');
      let durableFirst = false;
      void durable.then(() => (durableFirst = true));
      await a.sync();
      expect(durableFirst).toBe(true);
      expect(a.stats.batches).toBe(1);
    } finally {
      vi.useRealTimers();
    }
    await a.sync(); // with nothing written since: still an fsync of its own, at once
    expect(a.stats.batches).toBe(2);
    expect(readFileSync(p, 'utf8')).toBe('{"started":1}\n');
  });

  it('starts on a fresh line after a torn tail left by another writer, and re-creates a log removed meanwhile', async () => {
    const p = join(dir, 'audit');
    const a = new GroupAppender(p);
    await a.append('{"n":1}');
    appendFileSync(p, '{"n":2,"tor');
    await Promise.all([a.append('{"n":3}'), a.append('{"n":4}')]);
    expect(lines(p)).toEqual(['{"n":1}', '{"n":2,"tor', '{"n":3}', '{"n":4}']);
    unlinkSync(p);
    await a.append('{"n":5}');
    expect(lines(p)).toEqual(['{"n":5}']);
  });

  it('lines from another process appending at the same time stay whole (no interleaving within a line)', async () => {
    const p = join(dir, 'audit');
    const other = spawn(
      process.execPath,
      [
        '-e',
        `const fs=require('node:fs');const fd=fs.openSync(${JSON.stringify(p)},'a');for(let i=0;i<2000;i++)fs.writeSync(fd,JSON.stringify({o:i,pad:'q'.repeat(200)})+'\\n');`,
      ],
      { stdio: 'ignore' },
    );
    const done = new Promise((r) => other.once('exit', r));
    const a = new GroupAppender(p);
    for (let r = 0; r < 20; r++)
      await Promise.all(
        Array.from({ length: 50 }, (_, i) => a.append(JSON.stringify({ g: r * 50 + i, pad: 'g'.repeat(200) }))),
      );
    await done;
    const parsed = lines(p).map((l) => JSON.parse(l) as { g?: number; o?: number });
    expect(parsed.filter((x) => x.g !== undefined).map((x) => x.g)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(parsed.filter((x) => x.o !== undefined)).toHaveLength(2000);
  });

  it('holds one descriptor: no open, close or last-byte read per record while nobody else writes the file', async () => {
    const p = join(dir, 'audit');
    const a = new GroupAppender(p);
    for (let i = 0; i < 20; i++) {
      const { durable, begin } = await a.stage(`{"started":${i}}`);
      begin();
      await durable;
      await a.stage(`{"done":${i}}`); // a completion record: written, its fsync joins the next commit
    }
    await a.sync();
    expect(a.stats).toMatchObject({ opens: 1, tailReads: 0, writes: 40 });
    expect(openDescriptorsTo(p)).toBe(1);
    expect(lines(p)).toHaveLength(40);
    await a.close();
    expect(openDescriptorsTo(p)).toBe(0);
  });

  it('reopens when the path names another file (rotated or replaced): records go to the file the path names', async () => {
    const p = join(dir, 'audit');
    const a = new GroupAppender(p);
    await a.append('{"n":1}');
    renameSync(p, join(dir, 'audit.1')); // rotated away
    await a.append('{"n":2}');
    expect(lines(p)).toEqual(['{"n":2}']);
    expect(lines(join(dir, 'audit.1'))).toEqual(['{"n":1}']);
    writeFileSync(join(dir, 'other'), '{"x":0}\n');
    renameSync(join(dir, 'other'), p); // replaced by another file
    await a.append('{"n":3}');
    expect(lines(p)).toEqual(['{"x":0}', '{"n":3}']);
    expect(a.stats.opens).toBe(3);
    expect(openDescriptorsTo(p)).toBe(1); // the retired descriptors are closed
    await a.close();
  });

  it('begin(): a staged line is made durable at once, on the calling thread when nothing else waits for an fsync', async () => {
    const a = new GroupAppender(join(dir, 'audit'));
    vi.useFakeTimers({ toFake: ['setTimeout'] }); // STAGED_SYNC_MS never fires: only begin() can sync
    try {
      const { durable, begin } = await a.stage('{"started":1}');
      expect(a.stats.records).toBe(0);
      begin(true); // its caller has no other call in flight
      expect(a.stats).toMatchObject({ batches: 1, records: 1, inline: 1 }); // synchronously, inside begin()
      await durable;
      begin(); // idempotent
      expect(a.stats.batches).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('begin() of a caller with other calls in flight goes through the thread pool, however few records wait', async () => {
    const a = new GroupAppender(join(dir, 'audit'));
    const s = await a.stage('{"started":1}');
    s.begin(false);
    expect(a.stats.inline).toBe(0);
    await s.durable;
    expect(a.stats).toMatchObject({ batches: 1, records: 1, inline: 0 });
  });

  it('begin() while other records wait for an fsync goes through the thread pool, and one commit covers them', async () => {
    const a = new GroupAppender(join(dir, 'audit'));
    const staged = await Promise.all(Array.from({ length: 8 }, (_, i) => a.stage(`{"started":${i}}`)));
    for (const s of staged) s.begin(true);
    await Promise.all(staged.map((s) => s.durable));
    expect(a.stats.inline).toBe(0);
    expect(a.stats.records).toBe(8);
    expect(a.stats.batches).toBeLessThan(8);
  });

  it("a completion record nobody waits for joins the next call's commit, or gets its own within STAGED_SYNC_MS", async () => {
    const a = new GroupAppender(join(dir, 'audit'));
    const first = await a.stage('{"done":0}');
    let firstDurable = false;
    void first.durable.then(() => (firstDurable = true));
    const next = await a.stage('{"started":1}');
    next.begin();
    await next.durable;
    await Promise.resolve();
    expect(firstDurable).toBe(true); // one commit for both
    expect(a.stats).toMatchObject({ batches: 1, records: 2 });
    const alone = await a.stage('{"done":1}');
    const t0 = Date.now();
    await alone.durable;
    expect(Date.now() - t0).toBeLessThan(STAGED_SYNC_MS + 5000); // bounded: its own fsync after the timer
    expect(a.stats).toMatchObject({ batches: 2, records: 3 });
  });

  it("a completion record still waiting for its commit is fsync'd as the process exits (process.exit included)", async () => {
    const p = join(dir, 'audit');
    const mod = new URL('./append.ts', import.meta.url).pathname;
    const script = `import { GroupAppender } from ${JSON.stringify(mod)};
      const a = new GroupAppender(${JSON.stringify(p)});
      const s = await a.stage('{"started":1}'); s.begin(); await s.durable;
      await a.stage('{"done":1}');
      process.on('exit', () => console.log(JSON.stringify(a.stats)));
      process.exit(0);`;
    const out = await new Promise<string>((resolve, reject) => {
      const c = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let o = '';
      c.stdout.on('data', (d) => (o += String(d)));
      c.once('error', reject);
      c.once('exit', () => resolve(o));
    });
    expect(JSON.parse(out)).toMatchObject({ batches: 1, records: 1, atExit: 1 });
    expect(lines(p)).toEqual(['{"started":1}', '{"done":1}']);
  });

  it('a completion record written during a commit gets no fsync of its own: it rides with the next awaited one', async () => {
    const a = new GroupAppender(join(dir, 'audit'));
    vi.useFakeTimers({ toFake: ['setTimeout'] }); // no STAGED_SYNC_MS round
    try {
      const started = await a.stage('{"started":1}');
      started.begin(false); // through the thread pool, handed over after this turn
      await new Promise((r) => setImmediate(r)); // the commit is in flight while the completion is written
      const done = await a.stage('{"done":1}');
      let doneDurable = false;
      void done.durable.then(() => (doneDurable = true));
      await started.durable;
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
      expect(a.stats.batches).toBe(1);
      expect(doneDurable).toBe(false);
      const next = await a.stage('{"started":2}');
      next.begin(false);
      await next.durable;
      await Promise.resolve();
      expect(doneDurable).toBe(true);
      expect(a.stats).toMatchObject({ batches: 2, records: 3 });
    } finally {
      vi.useRealTimers();
    }
  });

  it('settle(): one fsync for lines nobody waited for, none at all (no file made) when nothing is pending', async () => {
    const p = join(dir, 'audit');
    const a = new GroupAppender(p);
    await a.settle();
    expect(a.stats.batches).toBe(0);
    expect(existsSync(p)).toBe(false);
    const done = await a.stage('{"done":1}');
    await a.settle();
    await done.durable;
    expect(a.stats).toMatchObject({ batches: 1, records: 2 }); // the line and the sync point
    await a.settle();
    expect(a.stats.batches).toBe(1);
  });

  it('closes its descriptor after IDLE_CLOSE_MS without writes, and reopens on the next one', async () => {
    const p = join(dir, 'audit');
    const a = new GroupAppender(p);
    vi.useFakeTimers({ toFake: ['setTimeout', 'Date'] });
    try {
      await a.append('{"n":1}');
      expect(openDescriptorsTo(p)).toBe(1);
      vi.advanceTimersByTime(IDLE_CLOSE_MS + 1);
      expect(openDescriptorsTo(p)).toBe(0);
    } finally {
      vi.useRealTimers();
    }
    await a.append('{"n":2}');
    expect(a.stats.opens).toBe(2);
    expect(lines(p)).toEqual(['{"n":1}', '{"n":2}']);
    await a.close();
  });

  it('an append that cannot open its file rejects with E_STORE and the next one works', async () => {
    const a = new GroupAppender(join(dir, 'missing-folder', 'audit'));
    await expect(a.append('{"n":1}')).rejects.toMatchObject({ code: 'E_STORE' });
    const b = new GroupAppender(join(dir, 'audit'));
    await b.append('{"n":2}');
    await appendLine(join(dir, 'audit'), '{"n":3}');
    expect(lines(join(dir, 'audit'))).toEqual(['{"n":2}', '{"n":3}']);
  });
});
