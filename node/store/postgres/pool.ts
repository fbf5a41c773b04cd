// Connections to the PostgreSQL store: URL checks and redaction, pools, one-client sessions, errors as E_STORE; Node
// host, trusted side.
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { TyError } from '../../../core/errors.js';

/** What migrations and queries need: a pool, or one client (a session: BEGIN/COMMIT and advisory locks stay on it). */
export interface PgQueryable {
  query<R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
}

/** True for a `postgres://` or `postgresql://` URL (the values of TYCLI_STORE and the setting `store.url`). */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

/**
 * The URL with its password replaced by `***` (for messages, logs and `tycli store` output). A URL that does not
 * parse is shown as `postgres://<unparsable>` (it may hold a password in an unexpected place).
 */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    for (const k of [...u.searchParams.keys()]) if (/pass|secret|key/i.test(k)) u.searchParams.set(k, '***');
    return u.toString();
  } catch {
    return 'postgres://<unparsable>';
  }
}

/**
 * Check a store URL before any connection: the scheme, a host, a database name.
 * @throws TyError E_USAGE naming what is wrong (the password never appears in the message).
 */
export function checkStoreUrl(url: string): void {
  if (!isPostgresUrl(url)) throw new TyError('E_USAGE', 'a store URL starts with postgres:// (or postgresql://)');
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new TyError('E_USAGE', `the store URL ${redactUrl(url)} does not parse`);
  }
  if (!u.hostname && !u.searchParams.get('host'))
    throw new TyError('E_USAGE', `the store URL ${redactUrl(url)} names no host`);
  if (u.pathname.length <= 1) throw new TyError('E_USAGE', `the store URL ${redactUrl(url)} names no database`);
}

export interface PoolOptions {
  /** Most connections (default 10). */
  max?: number;
  /** `application_name` seen in pg_stat_activity (default `tycli`). */
  applicationName?: string;
  /** Give up connecting after this long, ms (default 10 000) -> E_STORE. */
  connectTimeoutMs?: number;
}

/** The pg module, loaded on first use (a file-store host never loads it). */
export async function pgModule(): Promise<typeof import('pg')> {
  const m = (await import('pg')) as unknown as { default?: typeof import('pg') } & typeof import('pg');
  return m.default ?? m;
}

/**
 * A pool over `url`: TCP keepalive on (a peer that vanished is noticed), bounded connections, idle clients closed after
 * 30 s. An idle client's error (the server restarted) is absorbed: the pool replaces it. TLS follows the URL's
 * `sslmode` (pg-connection-string: `require` and `verify-full` verify the server's certificate). Every session runs
 * with `synchronous_commit = on`.
 * @throws TyError E_USAGE for a bad URL.
 */
export async function openPool(url: string, opts: PoolOptions = {}): Promise<Pool> {
  checkStoreUrl(url);
  const pg = await pgModule();
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    keepAlive: true,
    application_name: opts.applicationName ?? 'tycli',
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 10_000,
    idleTimeoutMillis: 30_000,
    // every session commits synchronously, whatever the server's default: the audit's durability depends on it
    options: '-c synchronous_commit=on',
  });
  pool.on('error', () => undefined);
  return pool;
}

/**
 * A database failure as E_STORE, with the URL redacted and PostgreSQL's SQLSTATE in `data.sqlstate`. A TyError passes
 * unchanged.
 */
export function storeError(e: unknown, what: string, url?: string): TyError {
  if (e instanceof TyError) return e;
  const err = e as { message?: string; code?: string };
  let msg = String(err?.message ?? e);
  if (url) msg = msg.split(url).join(redactUrl(url));
  const sqlstate = typeof err?.code === 'string' && /^[0-9A-Z]{5}$/.test(err.code) ? err.code : undefined;
  return new TyError('E_STORE', `${what}: ${msg}`, {
    store: 'postgres',
    ...(sqlstate ? { sqlstate } : {}),
    ...(err?.code && !sqlstate ? { reason: String(err.code).slice(0, 32) } : {}),
  });
}

/**
 * Run `fn` with one client of `pool` (a session of its own), released afterwards; a client whose session broke is
 * destroyed instead of going back to the pool.
 */
export async function withClient<T>(pool: Pool, fn: (c: PoolClient) => Promise<T>): Promise<T> {
  const c = await checkout(pool);
  let broken: Error | undefined;
  try {
    return await fn(c.client);
  } catch (e) {
    // a failed statement leaves the session usable; a lost connection does not
    if (c.lost() || (e as { code?: string }).code === undefined) broken = e as Error;
    throw e;
  } finally {
    c.release(broken);
  }
}

/**
 * One client of `pool`, with an error listener for as long as it is checked out: a connection that dies meanwhile
 * (the server restarted, the session was terminated) fails the statement in flight instead of crashing the process
 * with an unhandled 'error' event. `lost()` says whether that happened; `release(err)` destroys a broken client.
 */
export async function checkout(
  pool: Pool,
): Promise<{ client: PoolClient; lost(): boolean; release(err?: Error): void }> {
  const client = await pool.connect();
  let lost = false;
  const onError = (): void => {
    lost = true;
  };
  client.on('error', onError);
  return {
    client,
    lost: () => lost,
    release(err) {
      client.off('error', onError);
      client.release(err ?? (lost ? new Error('connection lost') : undefined));
    },
  };
}
