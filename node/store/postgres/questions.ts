// Waiting questions in the PostgreSQL store: asked on one instance, answered with `tycli answer` on any machine; Node
// host, trusted side.
import type { Client } from 'pg';
import { TyError } from '../../../core/errors.js';
import type { Question } from '../../../core/exec/runtime.js';
import type { StoredAnswer, StoredQuestion } from '../../ask/schemas.js';
import {
  alreadyAnswered,
  answerDoc,
  questionDoc,
  type AnswerOutcome,
  type GivenAnswer,
  type WaitingQuestions,
  type WatchLock,
} from '../../ask/waiting.js';
import { QUESTION_ID_RE, newQuestionId } from '../../ask/question-id.js';
import { QUESTIONS_CHANNEL } from './migrations.js';
import { LOCK_HELD, INSTANCE_LOCK_CLASS, WATCH_LOCK_CLASS, type PgSession, type QuestionEvent } from './session.js';
import { pgModule, storeError, type PgQueryable } from './pool.js';

const schemas = () => import('../../ask/schemas.js');

function checkId(id: string): void {
  if (typeof id !== 'string' || !QUESTION_ID_RE.test(id))
    throw new TyError('E_USAGE', 'a question id is 24 characters of a-z and 2-7 (as `tycli questions` shows it)');
}

/**
 * The waiting-question store of a team gateway, in `tycli_questions` / `tycli_answers`: the same documents and rules
 * as the file store (node/ask/store.ts), shared by every instance.
 * - put: stores a question under the asking instance's id and notifies `asked:ID`; a question whose instance is gone
 *   (its session lock lost: killed, or stopped) is no longer waiting and is removed by the next list().
 * - answer: one INSERT into `tycli_answers` keyed by the question id, so the first answer from any machine is final
 *   (a second finds the row and is refused with E_USAGE); notifies `answered:ID`, which wakes the asking instance.
 * - liveness: a watcher (`tycli questions --watch`, anywhere) holds a shared advisory lock on a session of its own;
 *   the store is live while one does. A killed watcher's session ends and the store is no longer live.
 */
export class PgQuestionStore implements WaitingQuestions {
  constructor(
    readonly db: PgQueryable,
    /** The instance's session: needed to ask (put) and to hear events; reading and answering work without one. */
    readonly session?: PgSession,
    /** The database URL: holdWatchLock opens a connection of its own to it. */
    readonly url?: string,
  ) {}

  /** Hints from every instance's question events (needs a session; without one, none: callers poll). */
  onChange(fn: (id?: string) => void): () => void {
    return this.onEvent((e) => fn(e.id));
  }

  /** Hear `asked`, `answered` and `gone` events from every instance. */
  onEvent(fn: (e: QuestionEvent) => void): () => void {
    return this.session?.onQuestion(fn) ?? (() => undefined);
  }

  async #notify(event: QuestionEvent['event'], id: string): Promise<void> {
    await this.db.query('SELECT pg_notify($1, $2)', [QUESTIONS_CHANNEL, `${event}:${id}`]);
  }

  /** Store a question as waiting; returns its new random id. @throws TyError E_STORE */
  async put(q: Question): Promise<string> {
    if (!this.session) throw new TyError('E_STORE', 'asking through the PostgreSQL store needs an instance session');
    const id = newQuestionId();
    const doc = await questionDoc(q, id, process.pid);
    try {
      await this.db.query('INSERT INTO tycli_questions (id, instance, doc) VALUES ($1, $2, $3)', [
        id,
        this.session.instanceId,
        JSON.stringify(doc),
      ]);
      await this.#notify('asked', id);
    } catch (e) {
      throw storeError(e, 'cannot store the question');
    }
    return id;
  }

  /** A waiting question, or undefined. @throws TyError E_USAGE for a malformed id. */
  async get(id: string): Promise<StoredQuestion | undefined> {
    checkId(id);
    const r = await this.#query<{ doc: string }>('SELECT doc FROM tycli_questions WHERE id = $1', [id]);
    return r[0] ? parseQuestion(r[0].doc, id) : undefined;
  }

  /** The answer to a question, if any. */
  async readAnswer(id: string): Promise<StoredAnswer | undefined> {
    checkId(id);
    const r = await this.#query<{ doc: string }>('SELECT doc FROM tycli_answers WHERE id = $1', [id]);
    if (!r[0]) return undefined;
    try {
      const parsed = (await schemas()).StoredAnswerSchema.safeParse(JSON.parse(r[0].doc));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  /** Waiting questions (unanswered, asking instance alive), oldest first; those of instances that are gone removed. */
  async list(): Promise<StoredQuestion[]> {
    await this.#query(
      `DELETE FROM tycli_questions q WHERE NOT EXISTS (${LOCK_HELD('q.instance', INSTANCE_LOCK_CLASS)})`,
    );
    const rows = await this.#query<{ id: string; doc: string }>(
      `SELECT q.id, q.doc FROM tycli_questions q
        WHERE NOT EXISTS (SELECT 1 FROM tycli_answers a WHERE a.id = q.id) ORDER BY q.created_at, q.id`,
    );
    const out: StoredQuestion[] = [];
    for (const row of rows) {
      const q = await parseQuestion(row.doc, row.id);
      if (q) out.push(q);
    }
    return out;
  }

  /**
   * Answer a waiting question; the first answer (from any instance or machine) is final.
   * @returns `{ok:false}` with E_USAGE when the question is not waiting or is already answered.
   * @throws TyError E_USAGE for a malformed id, E_STORE
   */
  async answer(id: string, a: GivenAnswer): Promise<AnswerOutcome> {
    checkId(id);
    const made = answerDoc(id, await this.get(id), a);
    if (!made.ok) return made;
    const doc = made.doc;
    let inserted: number;
    try {
      const r = await this.db.query(
        `INSERT INTO tycli_answers (id, doc) SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM tycli_questions WHERE id = $1)
         ON CONFLICT (id) DO NOTHING`,
        [id, JSON.stringify(doc)],
      );
      inserted = r.rowCount ?? 0;
    } catch (e) {
      throw storeError(e, 'cannot write the answer');
    }
    if (inserted === 0) {
      const still = await this.get(id);
      return still ? alreadyAnswered(id) : answerDoc(id, undefined, a);
    }
    await this.#notify('answered', id).catch(() => undefined);
    return { ok: true };
  }

  /** Remove a question and its answer (withdrawn or done). Absent is fine. */
  async remove(id: string): Promise<void> {
    checkId(id);
    await this.#query('DELETE FROM tycli_questions WHERE id = $1', [id]);
    await this.#notify('gone', id).catch(() => undefined);
  }

  /**
   * Hold the store's liveness lock (a shared advisory lock on a connection of its own) until released or this process
   * ends. @throws TyError E_STORE
   */
  async holdWatchLock(): Promise<WatchLock> {
    const url = this.url;
    if (!url) throw new TyError('E_STORE', 'holding the watcher lock needs the database URL');
    const pg = await pgModule();
    const client: Client = new pg.Client({ connectionString: url, keepAlive: true, application_name: 'tycli-watch' });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT pg_advisory_lock_shared($1, 0)', [WATCH_LOCK_CLASS]);
    } catch (e) {
      await client.end().catch(() => undefined);
      throw storeError(e, 'cannot hold the watcher lock', url);
    }
    let released = false;
    return {
      async release() {
        if (released) return;
        released = true;
        await client.end().catch(() => undefined);
      },
    };
  }

  /** Whether some watcher, on any machine, holds the liveness lock now. */
  async isWatched(): Promise<boolean> {
    try {
      const r = await this.db.query(`${LOCK_HELD('0', WATCH_LOCK_CLASS)} LIMIT 1`);
      return r.rows.length > 0;
    } catch {
      return false;
    }
  }

  async #query<R extends Record<string, unknown>>(text: string, values?: unknown[]): Promise<R[]> {
    try {
      return (await this.db.query<R>(text, values)).rows;
    } catch (e) {
      throw storeError(e, 'cannot read the question store');
    }
  }
}

async function parseQuestion(text: string, id: string): Promise<StoredQuestion | undefined> {
  try {
    const parsed = (await schemas()).StoredQuestionSchema.safeParse(JSON.parse(text));
    return parsed.success && parsed.data.id === id ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
