// What a waiting-question store is, whether in files (node/ask/store.ts) or PostgreSQL
// (node/store/postgres/questions.ts), and the documents both store; Node host, trusted side.
import { TyError } from '../../core/errors.js';
import type { Answer, Question } from '../../core/exec/runtime.js';
import { answerValues } from './form.js';
import type { StoredAnswer, StoredQuestion } from './schemas.js';

/** The stored-file schemas (zod): loaded by the first question stored or read, not by every host that might ask. */
const schemas = () => import('./schemas.js');

/** A holder of the store's liveness lock (an answering surface such as `tycli questions --watch`). */
export interface WatchLock {
  release(): Promise<void>;
}

/** An answer as `tycli answer` gives it. */
export interface GivenAnswer {
  allow: boolean;
  scope?: Answer['scope'];
  by: string;
  values?: Record<string, unknown>;
}

/** The outcome of answering: a question not waiting, already answered or not fitting its form is E_USAGE. */
export type AnswerOutcome = { ok: true } | { ok: false; code: 'E_USAGE'; message: string };

/**
 * What the store channel (node/ask/channels.ts), `tycli questions` and `tycli answer` need of a waiting-question store.
 * The first answer to a question is final on every implementation.
 */
export interface WaitingQuestions {
  /** Store a question as waiting; returns its new random id. @throws TyError E_STORE */
  put(q: Question): Promise<string>;
  /** A waiting question, or undefined. @throws TyError E_USAGE for a malformed id */
  get(id: string): Promise<StoredQuestion | undefined>;
  readAnswer(id: string): Promise<StoredAnswer | undefined>;
  /** Waiting questions (unanswered, asker alive), oldest first; stale ones are removed. */
  list(): Promise<StoredQuestion[]>;
  answer(id: string, a: GivenAnswer): Promise<AnswerOutcome>;
  /** Remove a question and its answer (withdrawn or done); absent is fine. */
  remove(id: string): Promise<void>;
  /** Hold the liveness lock: questions wait here while some holder runs. @throws TyError E_STORE */
  holdWatchLock(): Promise<WatchLock>;
  /** Whether some holder of the liveness lock runs now. */
  isWatched(): Promise<boolean>;
  /**
   * Call `fn` when questions or answers may have changed (a hint: file events, database notifications); returns the
   * way to stop. Callers still poll: a hint can be missed.
   */
  onChange(fn: (id?: string) => void): () => void;
}

/**
 * The stored form of a question: bounded text, hints and scopes that fit their schemas, a form only when it fits.
 * @throws TyError E_STORE for a form that cannot be stored.
 */
export async function questionDoc(q: Question, id: string, pid: number): Promise<StoredQuestion> {
  const doc: StoredQuestion = {
    v: 1,
    id,
    createdAt: Date.now(),
    pid,
    title: String(q.title).slice(0, 4096),
    details: (Array.isArray(q.details) ? q.details : []).slice(0, 256).map((d) => String(d).slice(0, 65_536)),
  };
  if (typeof q.suggestedRule === 'string') doc.suggestedRule = q.suggestedRule.slice(0, 4096);
  const { HintsSchema, ScopeSchema, storedForm } = await schemas();
  const hints = HintsSchema.safeParse(q.hints ?? {});
  if (q.hints && hints.success) doc.hints = hints.data;
  if (q.scopes) doc.scopes = q.scopes.filter((s) => ScopeSchema.safeParse(s).success).slice(0, 3);
  const form = storedForm(q.form);
  if (q.form !== undefined && form === undefined) throw new TyError('E_STORE', "the question's form cannot be stored");
  if (form) doc.form = form;
  return doc;
}

/**
 * The answer document for question `q` (undefined: not waiting), or why it is refused: a scope the question does not
 * offer, values that do not fit its form.
 */
export function answerDoc(
  id: string,
  q: StoredQuestion | undefined,
  a: GivenAnswer,
): { ok: true; doc: StoredAnswer } | (AnswerOutcome & { ok: false }) {
  if (!q)
    return {
      ok: false,
      code: 'E_USAGE',
      message: `question ${id} is not waiting (unknown, withdrawn, or its asker ended)`,
    };
  const scope = a.scope ?? 'once';
  const offered = q.scopes && q.scopes.length > 0 ? q.scopes : ['once'];
  if (a.allow && !offered.includes(scope))
    return { ok: false, code: 'E_USAGE', message: `question ${id} offers ${offered.join(', ')}, not ${scope}` };
  const vals = answerValues(q.form, a.allow === true, a.values);
  if (!vals.ok) return { ok: false, code: 'E_USAGE', message: `question ${id}: ${vals.message}` };
  return {
    ok: true,
    doc: {
      v: 1,
      allow: a.allow === true,
      scope: a.allow ? scope : 'once',
      answeredAt: Date.now(),
      by: String(a.by).slice(0, 128),
      ...(vals.values ? { values: vals.values } : {}),
    },
  };
}

/** The refusal of a second answer: the first is final. */
export const alreadyAnswered = (id: string): AnswerOutcome => ({
  ok: false,
  code: 'E_USAGE',
  message: `question ${id} was already answered; the first answer is final`,
});
