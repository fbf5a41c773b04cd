// The PostgreSQL store's own guarantees beyond the shared contract: append-only log, synchronous commit, transactions
// under locks, schema checks; test side (a private cluster).
import { afterAll, describe, expect, it } from 'vitest';
import { Store } from '../../../core/store/contract.js';
import { usePostgres } from '../../../test/helpers/postgres.js';
import { PgStoreBackend } from './backend.js';
import { MIGRATIONS, migrate, schemaVersion } from './migrations.js';
import { openPool, redactUrl } from './pool.js';

const cluster = usePostgres();
const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  await Promise.all(opened.map((b) => b.close()));
});
async function fresh(): Promise<{ url: string; b: PgStoreBackend }> {
  const url = await cluster.pg.createDatabase();
  const b = await PgStoreBackend.open(url, { migrate: true });
  opened.push(b);
  return { url, b };
}
async function open(url: string, opts: Parameters<typeof PgStoreBackend.open>[1] = {}): Promise<PgStoreBackend> {
  const b = await PgStoreBackend.open(url, opts);
  opened.push(b);
  return b;
}
const enc = (s: string) => new TextEncoder().encode(s);
const dbOf = (url: string) => new URL(url).pathname.slice(1);

describe('PgStoreBackend', () => {
  it('the log is append-only: UPDATE, DELETE and TRUNCATE are refused, even to the table owner', async () => {
    const { url, b } = await fresh();
    await b.append('audit', '{"n":1}');
    const db = dbOf(url);
    for (const sql of ["UPDATE tycli_log SET line = 'x'", 'DELETE FROM tycli_log', 'TRUNCATE tycli_log'])
      expect(() => cluster.pg.psql(sql, db), sql).toThrow(/append-only/);
    expect(await b.readLog('audit')).toEqual(['{"n":1}']);
  });

  it('every session commits synchronously even when the database default is off', async () => {
    const { url } = await fresh();
    cluster.pg.psql(`ALTER DATABASE "${dbOf(url)}" SET synchronous_commit = off`);
    const b = await open(url);
    const r = await b.pool.query<{ synchronous_commit: string }>('SHOW synchronous_commit');
    expect(r.rows[0]?.synchronous_commit).toBe('on');
    await b.withLock('x', async () => {
      const c = await b.lockPool.query<{ synchronous_commit: string }>('SHOW synchronous_commit');
      expect(c.rows[0]?.synchronous_commit).toBe('on');
    });
  });

  it('writes inside a lock are one transaction: a throw leaves nothing written; a success commits them together', async () => {
    const { url, b } = await fresh();
    const peer = await open(url);
    await expect(
      b.withLock('tx', async () => {
        await b.put('bindings', 'a', enc('1'));
        await b.put('bindings', 'b', enc('2'));
        // not visible to another instance before commit
        expect(await peer.get('bindings', 'a')).toBeUndefined();
        throw new Error('refused half-way');
      }),
    ).rejects.toThrow('refused half-way');
    expect(await peer.get('bindings', 'a')).toBeUndefined();
    expect(await peer.get('bindings', 'b')).toBeUndefined();
    await b.withLock('tx', async () => {
      await b.put('bindings', 'a', enc('1'));
      await b.put('bindings', 'b', enc('2'));
    });
    expect(new TextDecoder().decode(await peer.get('bindings', 'b'))).toBe('2');
  });

  it('an audit append inside a lock that then fails is kept (never rolled back with the transaction)', async () => {
    const { b } = await fresh();
    await expect(
      b.withLock('tx', async () => {
        await b.append('audit', 'attempt');
        throw new Error('after the record');
      }),
    ).rejects.toThrow('after the record');
    expect(await b.readLog('audit')).toEqual(['attempt']);
  });

  it('a lock held on one instance makes another wait; its death releases it at once; a long wait is E_BUSY', async () => {
    const { url, b } = await fresh();
    const peer = await open(url, { lockTimeoutMs: 300 });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const holder = b.withLock('shared', async () => {
      entered();
      await held;
    });
    await inside;
    await expect(peer.withLock('shared', async () => 'got it')).rejects.toMatchObject({ code: 'E_BUSY' });
    // the holder's session dies (as when its instance is killed): PostgreSQL releases the lock with it
    const pid = await b.lockPool.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE application_name = 'tycli-locks' AND state = 'idle in transaction' AND datname = $1",
      [dbOf(url)],
    );
    expect(pid.rows.length).toBe(1);
    await peer.pool.query('SELECT pg_terminate_backend($1)', [pid.rows[0]!.pid]);
    expect(await peer.withLock('shared', async () => 'got it')).toBe('got it');
    release();
    await expect(holder).rejects.toMatchObject({ code: 'E_STORE' });
  });

  it('Store.update is one transaction: 3 instances x 20 increments of one record count 60', async () => {
    const { url, b } = await fresh();
    const stores = [new Store(b), new Store(await open(url)), new Store(await open(url))];
    await Promise.all(
      Array.from({ length: 60 }, (_, i) => stores[i % 3]!.update<number>('counters', 'n', (o) => (o ?? 0) + 1)),
    );
    expect(await stores[2]!.getJson('counters', 'n')).toBe(60);
  });

  it('a database without the schema is refused, naming tycli store migrate; a newer one is refused too', async () => {
    const url = await cluster.pg.createDatabase();
    await expect(PgStoreBackend.open(url)).rejects.toMatchObject({
      code: 'E_STORE',
      message: expect.stringContaining('tycli store migrate'),
    });
    const pool = await openPool(url);
    try {
      const c = await pool.connect();
      try {
        expect(await migrate(c)).toMatchObject({ version: MIGRATIONS.length });
        expect((await migrate(c)).applied).toEqual([]);
        await c.query("INSERT INTO tycli_schema (id, name) VALUES (999, 'from the future')");
      } finally {
        c.release();
      }
    } finally {
      await pool.end();
    }
    await expect(PgStoreBackend.open(url)).rejects.toMatchObject({
      code: 'E_STORE',
      data: expect.objectContaining({ reason: 'schema-newer' }),
    });
  });

  it('instances migrating at once apply each migration exactly once', async () => {
    const url = await cluster.pg.createDatabase();
    const all = await Promise.all(Array.from({ length: 4 }, () => open(url, { migrate: true })));
    const r = await all[0]!.pool.query<{ n: string }>('SELECT count(*) AS n FROM tycli_schema');
    expect(Number(r.rows[0]!.n)).toBe(MIGRATIONS.length);
    expect(await schemaVersion(all[1]!.pool)).toBe(MIGRATIONS.length);
  });

  it('a refused connection is E_STORE and never shows the password', async () => {
    const url = `postgres://someone:hunter2-secret@127.0.0.1:${cluster.pg.port}/no_such_database`;
    const err = await PgStoreBackend.open(url).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'E_STORE' });
    expect(String((err as Error).message)).not.toContain('hunter2');
    expect(redactUrl(url)).toBe(`postgres://someone:***@127.0.0.1:${cluster.pg.port}/no_such_database`);
  });

  it('keys outside the contract pattern are refused by the database itself too', async () => {
    const { url } = await fresh();
    expect(() =>
      cluster.pg.psql("INSERT INTO tycli_entries (ns, key, value) VALUES ('../x', 'k', '\\x00')", dbOf(url)),
    ).toThrow(/check constraint/);
  });
});
