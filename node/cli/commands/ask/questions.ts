// tycli questions [--watch]: list waiting questions, and while watching keep the question store live; Node host,
// trusted side.
import { wordQuestion } from '../../../ask/wording.js';
import type { StoredQuestion } from '../../../ask/store.js';
import type { WaitingQuestions } from '../../../ask/waiting.js';
import type { CliCommand, CliContext } from '../../types.js';
import { out, outJson, note } from '../../output.js';

/** The display lines of one stored question (every field sanitized by renderQuestion). */
export function questionLines(q: StoredQuestion, now = Date.now()): string[] {
  const waited = Math.max(0, Math.round((now - q.createdAt) / 1000));
  const rendered = wordQuestion({
    id: q.id,
    title: q.title,
    details: q.details,
    ...(q.suggestedRule !== undefined ? { suggestedRule: q.suggestedRule } : {}),
    ...(q.hints ? { hints: q.hints } : {}),
    ...(q.scopes ? { scopes: q.scopes } : {}),
  });
  const scopes =
    q.scopes && q.scopes.length > 1
      ? ` (add --scope ${q.scopes.filter((s) => s !== 'once').join('|')} to allow for longer)`
      : '';
  if (q.form !== undefined) {
    const example = q.form.fields
      .map((f) => ` --field ${f.name}=…`)
      .join('')
      .slice(0, 300);
    return [
      `question ${q.id}  (waiting ${waited}s, asked by process ${q.pid})`,
      ...rendered.filter((l) => !l.trimStart().startsWith('Allow for:')).map((l) => `  ${l}`),
      `  answer: tycli answer ${q.id} yes${example}  |  tycli answer ${q.id} no (decline)`,
    ];
  }
  return [
    `question ${q.id}  (waiting ${waited}s, asked by process ${q.pid})`,
    ...rendered.map((l) => `  ${l}`),
    `  answer: tycli answer ${q.id} yes${scopes}  |  tycli answer ${q.id} no`,
  ];
}

/** A stored question as structured fields for --json (raw text; outJson escapes every hidden character). */
export function questionFields(q: StoredQuestion): Record<string, unknown> {
  return {
    id: q.id,
    createdAt: new Date(q.createdAt).toISOString(),
    pid: q.pid,
    title: q.title,
    details: q.details,
    ...(q.suggestedRule !== undefined ? { suggestedRule: q.suggestedRule } : {}),
    ...(q.hints ? { hints: q.hints } : {}),
    scopes: q.scopes ?? ['once'],
    // the form's fields as the server named them (raw text; no values: none are stored before an answer)
    ...(q.form ? { form: q.form } : {}),
  };
}

function show(ctx: CliContext, q: StoredQuestion): void {
  if (ctx.globals.json) outJson(ctx, { ok: true, event: 'waiting', ...questionFields(q) });
  else out(ctx, `${questionLines(q).join('\n')}\n`);
}

/**
 * Hold the store's watcher lock (so questions wait in the store instead of being refused) and print each
 * question as it arrives and each that goes away, until `signal` aborts. Releases the lock on return.
 * @throws TyError E_STORE when the folder is unusable or the lock cannot be held.
 */
export async function watchQuestions(
  ctx: CliContext,
  store: WaitingQuestions,
  signal: AbortSignal,
  pollMs = 1000,
): Promise<void> {
  const lock = await store.holdWatchLock();
  const seen = new Set<string>();
  let stopHints: (() => void) | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  let running = false;
  let again = false;
  const refresh = async (): Promise<void> => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        const now = await store.list();
        const ids = new Set(now.map((q) => q.id));
        for (const q of now) {
          if (!seen.has(q.id)) {
            seen.add(q.id);
            show(ctx, q);
          }
        }
        for (const id of [...seen]) {
          if (!ids.has(id)) {
            seen.delete(id);
            if (ctx.globals.json) outJson(ctx, { event: 'gone', id });
            else out(ctx, `question ${id}: answered or withdrawn`);
          }
        }
      } while (again);
    } catch (e) {
      note(ctx, `cannot read the question store: ${(e as Error).message}`);
    } finally {
      running = false;
    }
  };
  try {
    note(ctx, 'watching for questions (questions now wait here for an answer); Ctrl-C to stop');
    await refresh();
    await new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      signal.addEventListener('abort', () => resolve(), { once: true });
      timer = setInterval(() => void refresh(), pollMs);
      stopHints = store.onChange(() => void refresh());
    });
  } finally {
    if (timer) clearInterval(timer);
    stopHints?.();
    await lock.release();
  }
}

const questions: CliCommand = {
  path: ['questions'],
  summary: 'list questions waiting for an answer (--watch keeps listing and lets questions wait)',
  usage: `Usage: tycli questions [--watch]

Lists the questions tool calls are waiting on, each with its id and the command that answers it
(tycli answer ID yes|no). Question text is shown sanitized: controls and invisible characters as
escapes, long lines cut with a marker.

A question waits in the store only while some 'tycli questions --watch' runs (it holds the store's
lock); with no watcher and no terminal, a call that needs a person's answer is refused at once.
--watch runs until Ctrl-C. With --json, one JSON line per question ({"event":"waiting",...}) or,
while watching, per question gone ({"event":"gone","id"}).`,
  options: { watch: { type: 'boolean' } },
  allowPositionals: false,
  async run(ctx, values) {
    const { openTycliStore } = await import('../../../store/open.js');
    const opened = await openTycliStore({ home: ctx.globals.home, env: ctx.env });
    try {
      // a watcher hears every instance's questions at once (a team gateway's store: a session of its own)
      const store = await opened.questions({ events: values.watch === true });
      if (values.watch !== true) {
        const list = await store.list();
        if (ctx.globals.json) outJson(ctx, { ok: true, questions: list.map(questionFields) });
        else if (list.length === 0) out(ctx, 'no questions waiting');
        else for (const q of list) show(ctx, q);
        return 0;
      }
      // until main() aborts ctx.signal (Ctrl-C, SIGTERM); an embedder without one watches for as long as it runs
      await watchQuestions(ctx, store, ctx.signal ?? new AbortController().signal);
      return 0;
    } finally {
      await opened.close();
    }
  },
};

export const questionsCommands: CliCommand[] = [questions];
