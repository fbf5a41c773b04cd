// StoreBackend over PostgreSQL: entries, an append-only log, advisory-lock transactions shared by every instance; Node
// host, trusted side.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Pool, PoolClient } from 'pg';
import { TyError } from '../../../core/errors.js';
import { checkKey, type StoreBackend } from '../../../core/store/contract.js';
import { serializeByName } from '../../../core/store/memory.js';
import { checkSchema, migrate } from './migrations.js';
import { checkout, openPool, withClient, redactUrl, storeError, type PgQueryable } from './pool.js';

export interface PgStoreOptions {
  /** Most connections for reads, writes and log appends (default 10). */
  maxConnections?: number;
  /** Most lock transactions in flight at once (default 4; each holds one connection of its own). */
  maxLockConnections?: number;
  /** Give up waiting for a lock after this long, ms (default 30 000) -> E_BUSY. */
  lockTimeoutMs?: number;
  /** Apply pending migrations on open (default false: a database without the current schema is refused). */
  migrate?: boolean;
  /** `application_name` of the connections (default `tycli`). */
  applicationName?: string;
}

/** The transaction a withLock call runs in: operations inside `fn` use its client while it is open. */
interface Tx {
  client: PoolClient;
  open: boolean;
}

/**
 * The PostgreSQL store (TYCLI_STORE=postgres://..., setting `store.url`), shared by every instance of a team gateway.
 *
 * - entries: `tycli_entries (ns, key, value bytea)`; put is one upsert, delete one DELETE: atomic, visible to every
 *   instance once it resolves.
 * - logs: `tycli_log`, rows never updated or deleted (triggers refuse it, migrations.ts); an append resolves once its
 *   INSERT is committed with `synchronous_commit = on` (set on every session), so a record is durable before the
 *   answer it precedes.
 * - withLock(name, fn): one transaction holding `pg_advisory_xact_lock(hashtextextended(name, 0))`, and every
 *   get/put/delete/list inside `fn` runs in that same transaction (AsyncLocalStorage carries it), so `Store.update` is
 *   a compare-and-set in one transaction: read, decide, write, commit; nothing of it is written when `fn` throws, and
 *   a lost update is impossible across instances. Nested withLock calls take their lock in the same transaction.
 *   Log appends inside `fn` are committed on their own (an audit record is never rolled back). An instance that dies
 *   loses its session and PostgreSQL releases its locks at once; a lock not obtained within `lockTimeoutMs` is E_BUSY.
 * - no stamps: records read on every call are read from the database every time, so a change made on any instance
 *   applies to the next call everywhere.
 */
export class PgStoreBackend implements StoreBackend {
  readonly #tx = new AsyncLocalStorage<Tx>();
  readonly #local = new Map<string, Promise<unknown>>();
  readonly #lockTimeoutMs: number;
  #closed = false;

  private constructor(
    readonly url: string,
    readonly pool: Pool,
    readonly lockPool: Pool,
    lockTimeoutMs: number,
  ) {
    this.#lockTimeoutMs = lockTimeoutMs;
  }

  /**
   * Connect to `url` and check (or with `migrate`, bring up to date) its schema.
   * @throws TyError E_USAGE (bad URL), E_STORE (unreachable, or the schema needs `tycli store migrate`; see
   *   migrations.ts checkSchema).
   */
  static async open(url: string, opts: PgStoreOptions = {}): Promise<PgStoreBackend> {
    const app = opts.applicationName ?? 'tycli';
    const pool = await openPool(url, { max: opts.maxConnections ?? 10, applicationName: app });
    const lockPool = await openPool(url, { max: opts.maxLockConnections ?? 4, applicationName: `${app}-locks` });
    const b = new PgStoreBackend(url, pool, lockPool, opts.lockTimeoutMs ?? 30_000);
    try {
      await withClient(pool, async (c) => {
        if (opts.migrate) await migrate(c);
        else await checkSchema(c);
      });
    } catch (e) {
      await b.close();
      throw storeError(e, `cannot open the store at ${redactUrl(url)}`, url);
    }
    return b;
  }

  /** The open transaction of the withLock call this code runs in, else the pool. */
  #db(): PgQueryable {
    const tx = this.#tx.getStore();
    return tx?.open ? tx.client : this.pool;
  }

  #live(): void {
    if (this.#closed) throw new TyError('E_STORE', 'the store is closed');
  }

  async get(ns: string, key: string): Promise<Uint8Array | undefined> {
    checkKey(ns, key);
    this.#live();
    try {
      const r = await this.#db().query<{ value: Buffer }>(
        'SELECT value FROM tycli_entries WHERE ns = $1 AND key = $2',
        [ns, key],
      );
      const v = r.rows[0]?.value;
      return v === undefined ? undefined : new Uint8Array(v);
    } catch (e) {
      throw storeError(e, `cannot read store entry ${ns}/${key}`, this.url);
    }
  }

  async put(ns: string, key: string, bytes: Uint8Array): Promise<void> {
    checkKey(ns, key);
    this.#live();
    try {
      await this.#db().query(
        `INSERT INTO tycli_entries (ns, key, value) VALUES ($1, $2, $3)
         ON CONFLICT (ns, key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
        [ns, key, Buffer.from(bytes)],
      );
    } catch (e) {
      throw storeError(e, `cannot write store entry ${ns}/${key}`, this.url);
    }
  }

  async delete(ns: string, key: string): Promise<void> {
    checkKey(ns, key);
    this.#live();
    try {
      await this.#db().query('DELETE FROM tycli_entries WHERE ns = $1 AND key = $2', [ns, key]);
    } catch (e) {
      throw storeError(e, `cannot delete store entry ${ns}/${key}`, this.url);
    }
  }

  async list(ns: string): Promise<string[]> {
    checkKey(ns);
    this.#live();
    try {
      // COLLATE "C": byte order, which for these ASCII keys is JavaScript's default sort
      const r = await this.#db().query<{ key: string }>(
        'SELECT key FROM tycli_entries WHERE ns = $1 ORDER BY key COLLATE "C"',
        [ns],
      );
      return r.rows.map((x) => x.key);
    } catch (e) {
      throw storeError(e, `cannot list store namespace ${ns}`, this.url);
    }
  }

  async append(log: string, line: string): Promise<void> {
    checkKey(log);
    this.#live();
    if (/[\n\r]/.test(line)) throw new TyError('E_STORE', 'a log line must not contain a line break');
    try {
      // never in the caller's transaction: an audit record is committed on its own, before the answer
      await this.pool.query('INSERT INTO tycli_log (log, line) VALUES ($1, $2)', [log, line]);
    } catch (e) {
      throw storeError(e, `cannot append to log ${log}`, this.url);
    }
  }

  async readLog(log: string): Promise<string[]> {
    checkKey(log);
    this.#live();
    try {
      const r = await this.pool.query<{ line: string }>('SELECT line FROM tycli_log WHERE log = $1 ORDER BY seq', [
        log,
      ]);
      return r.rows.map((x) => x.line);
    } catch (e) {
      throw storeError(e, `cannot read log ${log}`, this.url);
    }
  }

  async withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    checkKey(name);
    this.#live();
    const outer = this.#tx.getStore();
    if (outer?.open) {
      // nested: the lock joins the caller's transaction (held until it commits)
      await this.#lock(outer.client, name);
      return fn();
    }
    // one waiter per name in this process, so waiting callers do not each hold a connection
    return serializeByName(this.#local, name, async () => {
      let held: Awaited<ReturnType<typeof checkout>>;
      try {
        held = await checkout(this.lockPool);
      } catch (e) {
        throw storeError(e, `cannot take the lock ${name}`, this.url);
      }
      const client = held.client;
      const tx: Tx = { client, open: true };
      let broken: Error | undefined;
      const rollback = async (): Promise<void> => {
        tx.open = false;
        await client.query('ROLLBACK').catch((r) => (broken = r as Error));
      };
      try {
        try {
          await client.query('BEGIN');
          await client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(this.#lockTimeoutMs))}`);
          await this.#lock(client, name);
        } catch (e) {
          await rollback();
          throw storeError(e, `cannot take the lock ${name}`, this.url);
        }
        let out: T;
        try {
          out = await this.#tx.run(tx, fn);
        } catch (e) {
          // fn's own error passes unchanged; nothing it wrote inside the transaction stays
          await rollback();
          throw e;
        }
        tx.open = false;
        try {
          await client.query('COMMIT');
        } catch (e) {
          broken = e as Error;
          throw storeError(e, `cannot commit the transaction under lock ${name}`, this.url);
        }
        return out;
      } finally {
        held.release(broken);
      }
    });
  }

  /** @throws TyError E_BUSY when the lock is not obtained within the lock timeout (SQLSTATE 55P03), else E_STORE */
  async #lock(client: PoolClient, name: string): Promise<void> {
    try {
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`lock:${name}`]);
    } catch (e) {
      if ((e as { code?: string }).code === '55P03')
        throw new TyError('E_BUSY', `the store lock ${name} is held elsewhere; try again`, { lock: name });
      throw storeError(e, `cannot take the lock ${name}`, this.url);
    }
  }

  /** Close both pools (open transactions roll back). Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([this.pool.end(), this.lockPool.end()]);
  }
}
