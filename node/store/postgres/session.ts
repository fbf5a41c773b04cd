// One instance's own PostgreSQL session: its liveness lock (registered in tycli_instances) and LISTEN for changes made
// by any instance; Node host, trusted side.
import type { Client } from 'pg';
import { CHANGES_CHANNEL, QUESTIONS_CHANNEL } from './migrations.js';
import { pgModule, storeError, type PgQueryable } from './pool.js';

/** Advisory lock class of instance liveness locks: `pg_advisory_lock(INSTANCE_LOCK_CLASS, instance id)`. */
export const INSTANCE_LOCK_CLASS = 0x7479; // 'ty'
/** Advisory lock class of question watchers: `pg_advisory_lock_shared(WATCH_LOCK_CLASS, 0)` while one watches. */
export const WATCH_LOCK_CLASS = 0x7477; // 'tw'

/** A change to a notified namespace (migrations.ts NOTIFIED_NAMESPACES), made by any instance. */
export interface ChangeEvent {
  ns: string;
  key: string;
}

/** A question event: `asked`, `answered` or `gone`, with the question id. */
export interface QuestionEvent {
  event: 'asked' | 'answered' | 'gone';
  id: string;
}

export interface SessionOptions {
  /** This process as it appears on audit records (`HOST:PID:START`, node/process/identity.ts hostIdentity). */
  host: string;
  /** First reconnection delay after the session is lost, ms (default 100; doubled up to 5 000). */
  retryMs?: number;
}

/**
 * A long-lived connection of its own (not from a pool) that
 * - registers this process in `tycli_instances` and holds `pg_advisory_lock(INSTANCE_LOCK_CLASS, id)`: the instance is
 *   alive exactly while PostgreSQL keeps that session (a process killed with -9 loses it at once on the same machine;
 *   across machines TCP keepalive notices a vanished peer), which is how other instances tell `interrupted` calls;
 * - LISTENs to `tycli_changes` and `tycli_questions` and hands each notification to the listeners.
 * When the connection is lost it reconnects (backoff 100 ms .. 5 s), takes its lock again under the same id and tells
 * `onResync` listeners, which must re-read what they keep (notifications sent meanwhile are lost).
 */
export class PgSession {
  readonly #changes = new Set<(e: ChangeEvent) => void>();
  readonly #questions = new Set<(e: QuestionEvent) => void>();
  readonly #resync = new Set<() => void>();
  #client: Client | undefined;
  #closed = false;
  #retryMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;

  private constructor(
    readonly url: string,
    readonly host: string,
    readonly instanceId: number,
    client: Client,
    readonly retryMs: number,
  ) {
    this.#client = client;
    this.#retryMs = retryMs;
  }

  /**
   * Register and start listening. Old rows of instances that are gone (no lock, started over a day ago) are removed.
   * @throws TyError E_STORE when the database cannot be reached.
   */
  static async start(url: string, opts: SessionOptions): Promise<PgSession> {
    const client = await connect(url);
    try {
      const r = await client.query<{ id: string }>('INSERT INTO tycli_instances (host) VALUES ($1) RETURNING id', [
        opts.host.slice(0, 256),
      ]);
      const id = Number(r.rows[0]!.id);
      await client.query('SELECT pg_advisory_lock($1, $2)', [INSTANCE_LOCK_CLASS, id]);
      await client.query(
        `DELETE FROM tycli_instances i WHERE i.started_at < now() - interval '1 day'
           AND NOT EXISTS (${LOCK_HELD('i.id', INSTANCE_LOCK_CLASS)})`,
      );
      const s = new PgSession(url, opts.host, id, client, opts.retryMs ?? 100);
      await s.#listen(client);
      return s;
    } catch (e) {
      await client.end().catch(() => undefined);
      throw storeError(e, 'cannot start the instance session', url);
    }
  }

  /** Whether the session is connected now (its instance counts as alive). */
  get connected(): boolean {
    return this.#client !== undefined;
  }

  onChange(fn: (e: ChangeEvent) => void): () => void {
    this.#changes.add(fn);
    return () => this.#changes.delete(fn);
  }
  onQuestion(fn: (e: QuestionEvent) => void): () => void {
    this.#questions.add(fn);
    return () => this.#questions.delete(fn);
  }
  onResync(fn: () => void): () => void {
    this.#resync.add(fn);
    return () => this.#resync.delete(fn);
  }

  /** Run one statement on the session itself (its session-level advisory locks are held here). */
  async query(text: string, values?: unknown[]): Promise<void> {
    if (!this.#client) throw storeError(new Error('the instance session is reconnecting'), 'session');
    await this.#client.query(text, values);
  }

  async #listen(client: Client): Promise<void> {
    client.on('notification', (m) => {
      const payload = m.payload ?? '';
      if (m.channel === CHANGES_CHANNEL) {
        const slash = payload.indexOf('/');
        if (slash <= 0) return;
        const e = { ns: payload.slice(0, slash), key: payload.slice(slash + 1) };
        for (const fn of [...this.#changes]) fn(e);
      } else if (m.channel === QUESTIONS_CHANNEL) {
        const [event, id] = payload.split(':');
        if ((event === 'asked' || event === 'answered' || event === 'gone') && id)
          for (const fn of [...this.#questions]) fn({ event, id });
      }
    });
    client.on('error', () => this.#lost(client));
    client.on('end', () => this.#lost(client));
    await client.query(`LISTEN ${CHANGES_CHANNEL}`);
    await client.query(`LISTEN ${QUESTIONS_CHANNEL}`);
  }

  #lost(client: Client): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    client.end().catch(() => undefined);
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#reconnect();
    }, this.#retryMs);
    this.#timer.unref();
    this.#retryMs = Math.min(this.#retryMs * 2, 5000);
  }

  async #reconnect(): Promise<void> {
    let client: Client | undefined;
    try {
      client = await connect(this.url);
      await client.query('SELECT pg_advisory_lock($1, $2)', [INSTANCE_LOCK_CLASS, this.instanceId]);
      await this.#listen(client);
    } catch {
      await client?.end().catch(() => undefined);
      this.#scheduleReconnect();
      return;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#retryMs = this.retryMs;
    for (const fn of [...this.#resync]) fn();
  }

  /** End the session: the lock goes with it (the instance is gone). Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    const c = this.#client;
    this.#client = undefined;
    await c?.end().catch(() => undefined);
  }
}

/** SQL: a row of pg_locks showing the two-key advisory lock (CLASS, idExpr) granted in this database. */
export function LOCK_HELD(idExpr: string, lockClass: number): string {
  return `SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND l.classid = ${lockClass} AND l.objid = (${idExpr})::int::oid AND l.objsubid = 2`;
}

/**
 * The hosts (`HOST:PID:START`) of instances alive now: registered and holding their lock. Used to tell a call that is
 * still running on another machine from one whose instance died (the audit shows it `interrupted`).
 * @throws TyError E_STORE
 */
export async function liveHosts(db: PgQueryable): Promise<Set<string>> {
  try {
    const r = await db.query<{ host: string }>(
      `SELECT DISTINCT i.host FROM tycli_instances i WHERE EXISTS (${LOCK_HELD('i.id', INSTANCE_LOCK_CLASS)})`,
    );
    return new Set(r.rows.map((x) => x.host));
  } catch (e) {
    throw storeError(e, 'cannot read the live instances');
  }
}

/** Ids of instances alive now (see liveHosts). @throws TyError E_STORE */
export async function liveInstanceIds(db: PgQueryable): Promise<Set<number>> {
  try {
    const r = await db.query<{ id: string }>(
      `SELECT i.id FROM tycli_instances i WHERE EXISTS (${LOCK_HELD('i.id', INSTANCE_LOCK_CLASS)})`,
    );
    return new Set(r.rows.map((x) => Number(x.id)));
  } catch (e) {
    throw storeError(e, 'cannot read the live instances');
  }
}

async function connect(url: string): Promise<Client> {
  const pg = await pgModule();
  const client = new pg.Client({
    connectionString: url,
    keepAlive: true,
    application_name: 'tycli-session',
    connectionTimeoutMillis: 10_000,
    options: '-c synchronous_commit=on',
  });
  // an error before the listeners are attached must not crash the process
  client.on('error', () => undefined);
  await client.connect();
  return client;
}
