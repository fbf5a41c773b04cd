// Instance sessions over PostgreSQL: liveness by lock, change notifications to every instance, questions answered from
// another instance; test side (a private cluster).
import { afterAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { usePostgres } from '../../../test/helpers/postgres.js';
import { PgStoreBackend } from './backend.js';
import { PgQuestionStore } from './questions.js';
import { PgSession, liveHosts, liveInstanceIds, type ChangeEvent } from './session.js';

const cluster = usePostgres();
const closers: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c.close();
});
async function db(): Promise<{ url: string; b: PgStoreBackend }> {
  const url = await cluster.pg.createDatabase();
  const b = await PgStoreBackend.open(url, { migrate: true });
  closers.push(b);
  return { url, b };
}
async function session(url: string, host: string): Promise<PgSession> {
  const s = await PgSession.start(url, { host, retryMs: 20 });
  closers.push(s);
  return s;
}
const until = async (what: string, ok: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> => {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};
const enc = (s: string) => new TextEncoder().encode(s);

describe('PgSession', () => {
  it('an instance is alive while its session holds its lock; one killed with -9 is gone at once', async () => {
    const { url, b } = await db();
    const c = await session(url, 'host-c:2:2');
    // another process holds a session, then is killed with SIGKILL (no cleanup of its own)
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `const { PgSession } = await import(${JSON.stringify(join(import.meta.dirname, 'session.ts'))});
         await PgSession.start(process.argv[1], { host: 'host-a:1:1' });
         process.stdout.write('ready\\n');
         setInterval(() => {}, 1000);`,
        url,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'], cwd: join(import.meta.dirname, '..', '..', '..') },
    );
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d) => String(d).includes('ready') && resolve());
      child.once('exit', (code) => reject(new Error(`the child exited with ${code}`)));
    });
    expect(await liveHosts(b.pool)).toEqual(new Set(['host-a:1:1', 'host-c:2:2']));
    child.kill('SIGKILL');
    await until('host-a gone', async () => !(await liveHosts(b.pool)).has('host-a:1:1'), 5000);
    expect(await liveHosts(b.pool)).toEqual(new Set(['host-c:2:2']));
    await c.close();
    expect((await liveInstanceIds(b.pool)).has(c.instanceId)).toBe(false);
  });

  it('a session that lost its connection comes back under the same id and tells its listeners to re-read', async () => {
    const { url, b } = await db();
    const a = await session(url, 'host-r:1:1');
    let resynced = 0;
    a.onResync(() => resynced++);
    cluster.pg.psql(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'tycli-session'
         AND datname = '${new URL(url).pathname.slice(1)}'`,
    );
    await until('resync', () => resynced === 1);
    expect(a.connected).toBe(true);
    expect((await liveInstanceIds(b.pool)).has(a.instanceId)).toBe(true);
  });

  it('a change to a binding on one instance reaches every other instance (LISTEN/NOTIFY); other namespaces stay quiet', async () => {
    const { url, b } = await db();
    const s1 = await session(url, 'h1:1:1');
    const s2 = await session(url, 'h2:2:2');
    const got: [ChangeEvent[], ChangeEvent[]] = [[], []];
    s1.onChange((e) => got[0].push(e));
    s2.onChange((e) => got[1].push(e));
    await b.put('tool-storage', 'quiet', enc('x'));
    await b.put('bindings', 'weather', enc('{}'));
    await b.delete('tokens', 'abc');
    await b.put('tokens', 'abcdefghijklmnop', enc('{}'));
    await until('both heard', () => got.every((g) => g.length >= 2));
    for (const g of got)
      expect(g).toEqual([
        { ns: 'bindings', key: 'weather' },
        { ns: 'tokens', key: 'abcdefghijklmnop' },
      ]);
  });
});

describe('PgQuestionStore', () => {
  it('a question asked on instance A is answered from instance B; the first answer is final', async () => {
    const { url, b } = await db();
    const sa = await session(url, 'asker:1:1');
    const sb = await session(url, 'answerer:2:2');
    const asker = new PgQuestionStore(b.pool, sa);
    const elsewhere = new PgQuestionStore((await PgStoreBackend.open(url)).pool, sb);
    const events: string[] = [];
    asker.onEvent((e) => events.push(`${e.event}:${e.id}`));
    const id = await asker.put({ id: 'q', title: 'Allow weather?', details: ['tool weather'], scopes: ['once'] });
    expect((await elsewhere.list()).map((q) => q.id)).toEqual([id]);
    expect(await elsewhere.answer(id, { allow: true, by: 'tycli answer' })).toEqual({ ok: true });
    expect(await elsewhere.answer(id, { allow: false, by: 'tycli answer' })).toMatchObject({
      ok: false,
      message: expect.stringContaining('first answer is final'),
    });
    await until('the asker heard the answer', () => events.includes(`answered:${id}`));
    expect(await asker.readAnswer(id)).toMatchObject({ allow: true, scope: 'once', by: 'tycli answer' });
    expect(await elsewhere.list()).toEqual([]);
    await asker.remove(id);
    expect(await elsewhere.answer(id, { allow: true, by: 'x' })).toMatchObject({ ok: false, code: 'E_USAGE' });
  });

  it('two answers racing from two machines: exactly one wins', async () => {
    const { url, b } = await db();
    const s = await session(url, 'asker:1:1');
    const store = new PgQuestionStore(b.pool, s, url);
    const others = await Promise.all(Array.from({ length: 4 }, () => PgStoreBackend.open(url)));
    closers.push(...others);
    const id = await store.put({ id: 'q', title: 'Allow?', details: [] });
    const results = await Promise.all(
      others.map((o, i) => new PgQuestionStore(o.pool).answer(id, { allow: i % 2 === 0, by: `m${i}` })),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(1);
  });

  it("a question whose instance died is no longer waiting; a watcher anywhere makes the store live, its death doesn't", async () => {
    const { url, b } = await db();
    const s = await session(url, 'dying:1:1');
    const store = new PgQuestionStore(b.pool, s, url);
    await store.put({ id: 'q', title: 'Allow?', details: [] });
    expect(await store.list()).toHaveLength(1);
    await s.close();
    expect(await store.list()).toEqual([]);
    expect(await store.isWatched()).toBe(false);
    const lock = await store.holdWatchLock();
    const second = await store.holdWatchLock();
    expect(await store.isWatched()).toBe(true);
    await lock.release();
    expect(await store.isWatched()).toBe(true);
    cluster.pg.psql(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'tycli-watch'
         AND datname = '${new URL(url).pathname.slice(1)}'`,
    );
    await until('not watched', async () => !(await store.isWatched()));
    await second.release();
  });
});
