// The waiting-question store as an ask channel, and the command line's asker over terminal, store and dialog; Node
// host, trusted side.
import type { Answer, AskChannel, Question } from '../../core/exec/runtime.js';
import { AskRouter, DEFAULT_ASK_WAIT_MS } from '../../core/ask/router.js';
import { TerminalAskChannel } from './terminal.js';
import { DialogAskChannel } from './dialog.js';
import { QuestionStore, questionsDir } from './store.js';
import type { WaitingQuestions } from './waiting.js';

export interface StoreChannelOptions {
  /** Re-check for an answer at least this often, ms (default 500), besides file-change events. */
  pollMs?: number;
  /** Channel name (default `questions`). */
  name?: string;
}

/**
 * The waiting-question store as an ask channel (files, or PostgreSQL for a team gateway): live only while a watcher
 * holds the lock; a question is stored, its answer awaited (the store's change hints plus polling), and the question
 * removed when answered or withdrawn (signal aborted), so a late `tycli answer` finds nothing waiting.
 */
export class StoreAskChannel implements AskChannel {
  readonly name: string;
  readonly forms = true;
  private readonly pollMs: number;

  constructor(
    readonly store: WaitingQuestions,
    opts: StoreChannelOptions = {},
  ) {
    this.name = opts.name ?? 'questions';
    this.pollMs = opts.pollMs ?? 500;
  }

  live(): Promise<boolean> {
    return this.store.isWatched();
  }

  async whyNot(): Promise<string | undefined> {
    return (await this.store.isWatched()) ? undefined : 'nobody is watching the waiting-question store';
  }

  async ask(q: Question, signal: AbortSignal): Promise<Answer | undefined> {
    if (signal.aborted) return undefined;
    const id = await this.store.put(q);
    try {
      return await new Promise<Answer | undefined>((resolve) => {
        let done = false;
        let stopHints: (() => void) | undefined;
        const finish = (a: Answer | undefined): void => {
          if (done) return;
          done = true;
          clearInterval(poll);
          stopHints?.();
          signal.removeEventListener('abort', onAbort);
          resolve(a);
        };
        const check = (): void => {
          void this.store.readAnswer(id).then(
            (a) => {
              if (a)
                finish({
                  allow: a.allow,
                  scope: a.scope,
                  channel: this.name,
                  ...(a.values ? { values: a.values } : {}),
                });
            },
            () => finish(undefined),
          );
        };
        const onAbort = (): void => finish(undefined);
        signal.addEventListener('abort', onAbort, { once: true });
        const poll = setInterval(check, this.pollMs);
        stopHints = this.store.onChange((changed) => {
          if (changed === undefined || changed === id) check();
        });
        check();
      });
    } finally {
      await this.store.remove(id);
    }
  }
}

/**
 * The command line's asker: an AskRouter over the controlling terminal (when this process has one), the
 * waiting-question store under `home` (live only while `tycli questions --watch` runs) and the desktop dialog
 * (node/ask/dialog.ts; live while a desktop session and a system dialog program are there, unless `dialog` is `off`).
 * `env` is the CLI's environment, read by the dialog channel for the desktop session's variables only.
 * @throws TyError E_INVALID_SETTINGS for an askWaitMs outside 1 ms .. 1 day.
 */
export function createNodeAsker(opts: {
  home: string;
  /** The waiting-question store (default the files under `home`; a team gateway's PostgreSQL store). */
  questions?: WaitingQuestions;
  askWaitMs?: number;
  terminal?: boolean;
  dialog?: 'auto' | 'off';
  env?: NodeJS.ProcessEnv;
}): AskRouter {
  const channels: AskChannel[] = [];
  if (opts.terminal !== false) channels.push(new TerminalAskChannel());
  channels.push(new StoreAskChannel(opts.questions ?? new QuestionStore(questionsDir(opts.home))));
  channels.push(
    new DialogAskChannel({
      mode: opts.dialog ?? 'auto',
      env: opts.env ?? process.env,
      waitMs: opts.askWaitMs ?? DEFAULT_ASK_WAIT_MS,
    }),
  );
  return new AskRouter(opts.askWaitMs === undefined ? { channels } : { channels, askWaitMs: opts.askWaitMs });
}
