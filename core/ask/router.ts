// The ask router: one question at a time, asked on every live channel at once, first answer wins; core, trusted side.
import { TyError } from '../errors.js';
import type { Answer, AskChannel, FormValues, Question } from '../exec/runtime.js';
import { sanitizeInline } from './text.js';

/** Default wait for an answer (`ask_wait`), ms: 2 minutes. */
export const DEFAULT_ASK_WAIT_MS = 120_000;
/** Longest allowed `ask_wait`, ms: 1 day. */
export const MAX_ASK_WAIT_MS = 86_400_000;

export type AskScope = Answer['scope'];
export type AskRefusalReason = 'no-channel' | 'timeout' | 'refused' | 'aborted';

/** The outcome of one question. `channel` names the channel that answered (absent when none did). */
export type AskOutcome =
  | { allow: true; scope: AskScope; channel: string; values?: FormValues }
  | {
      allow: false;
      reason: AskRefusalReason;
      channel?: string;
      suggestedRule?: string;
      channels?: ChannelStatus[];
      dismissed?: boolean;
    };

/** Whether one channel can present a question now; `detail` says why not (from the channel's `whyNot`). */
export interface ChannelStatus {
  name: string;
  live: boolean;
  detail?: string;
}

/**
 * One line naming each channel and why it cannot ask, e.g. `terminal (no controlling terminal); dialog (no desktop
 * session)`.
 */
export function describeChannels(list: readonly ChannelStatus[]): string {
  if (list.length === 0) return 'no ask channel is configured';
  return list
    .map(
      (c) =>
        `${sanitizeInline(c.name)}${c.live ? ' (live)' : c.detail ? ` (${sanitizeInline(c.detail)})` : ' (not available)'}`,
    )
    .join('; ');
}

/** What the gate calls to ask a person. */
export interface Asker {
  ask(q: Question, signal?: AbortSignal): Promise<AskOutcome>;
}

export interface AskRouterOptions {
  channels?: AskChannel[];
  /** How long a presented question waits for an answer, ms (default 120 000, 1..86 400 000). */
  askWaitMs?: number;
}

/** Validate an `ask_wait` value in ms. @throws TyError E_INVALID_SETTINGS outside 1..MAX_ASK_WAIT_MS. */
export function checkAskWait(ms: unknown): number {
  if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 1 || ms > MAX_ASK_WAIT_MS) {
    throw new TyError(
      'E_INVALID_SETTINGS',
      `ask_wait must be a whole number of ms from 1 to ${MAX_ASK_WAIT_MS} (1 day)`,
    );
  }
  return ms;
}

interface Pending {
  q: Question;
  signal: AbortSignal | undefined;
  resolve: (o: AskOutcome) => void;
  onAbort?: () => void;
}

async function isLive(ch: AskChannel): Promise<boolean> {
  try {
    return (await ch.live()) === true;
  } catch {
    return false;
  }
}

async function statusOf(ch: AskChannel, q?: Question): Promise<ChannelStatus> {
  // a form question goes only to channels that can show a form and return its values
  if (q?.form !== undefined && ch.forms !== true) return { name: ch.name, live: false, detail: 'cannot show a form' };
  if (await isLive(ch)) return { name: ch.name, live: true };
  const s: ChannelStatus = { name: ch.name, live: false };
  try {
    const why = ch.whyNot ? await ch.whyNot() : undefined;
    if (typeof why === 'string' && why.length > 0) s.detail = why.slice(0, 300);
  } catch {
    /* no detail */
  }
  return s;
}

function refusal(q: Question, reason: AskRefusalReason, channel?: string, channels?: ChannelStatus[]): AskOutcome {
  const o: Extract<AskOutcome, { allow: false }> = { allow: false, reason };
  if (channel !== undefined) o.channel = channel;
  if (channels !== undefined) o.channels = channels;
  if (typeof q.suggestedRule === 'string' && q.suggestedRule.length > 0) o.suggestedRule = q.suggestedRule;
  return o;
}

/**
 * Routes questions to channels. One question at a time per router; the rest wait in FIFO order.
 * A question is asked on every channel whose `live()` is true at that moment, all at once; the first
 * answer (from any channel) decides and every other channel's signal is aborted (withdraw the question).
 * No answer within `askWaitMs` (counted from presentation) is a refusal (`timeout`); no live channel, or
 * every channel giving up without an answer, is a refusal at once (`no-channel`); the caller's signal
 * aborting is `aborted`. A channel that throws or answers malformed data counts as giving up, never as yes.
 * An allowed scope not offered by the question (`q.scopes`, default `['once']`) is narrowed to `once`.
 */
export class AskRouter implements Asker {
  private readonly channels: AskChannel[];
  private readonly askWaitMs: number;
  private readonly queue: Pending[] = [];
  private busy = false;

  /** @throws TyError E_INVALID_SETTINGS for an out-of-range askWaitMs. */
  constructor(opts: AskRouterOptions = {}) {
    this.channels = [...(opts.channels ?? [])];
    this.askWaitMs = checkAskWait(opts.askWaitMs ?? DEFAULT_ASK_WAIT_MS);
  }

  addChannel(ch: AskChannel): void {
    if (!this.channels.includes(ch)) this.channels.push(ch);
  }

  removeChannel(ch: AskChannel): void {
    const i = this.channels.indexOf(ch);
    if (i >= 0) this.channels.splice(i, 1);
  }

  /** Whether any channel could present a question now. */
  async anyLive(): Promise<boolean> {
    for (const ch of [...this.channels]) if (await isLive(ch)) return true;
    return false;
  }

  /** Every channel, in order, with whether it can present a question now and, when not, why. */
  async status(): Promise<ChannelStatus[]> {
    const out: ChannelStatus[] = [];
    for (const ch of [...this.channels]) out.push(await statusOf(ch));
    return out;
  }

  /** Questions waiting behind the one being asked. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Questions not yet answered: the one being asked and those waiting behind it. */
  get pending(): number {
    return this.queue.length + (this.busy ? 1 : 0);
  }

  ask(q: Question, signal?: AbortSignal): Promise<AskOutcome> {
    if (signal?.aborted) return Promise.resolve(refusal(q, 'aborted'));
    return new Promise<AskOutcome>((resolve) => {
      const p: Pending = { q, signal, resolve };
      if (signal) {
        p.onAbort = () => {
          const i = this.queue.indexOf(p);
          if (i >= 0) {
            this.queue.splice(i, 1);
            resolve(refusal(q, 'aborted'));
          }
        };
        signal.addEventListener('abort', p.onAbort, { once: true });
      }
      this.queue.push(p);
      if (this.busy) {
        // Refuse at once when nobody could see it, rather than after the question ahead of it.
        void Promise.all(this.channels.map((ch) => statusOf(ch, q))).then((all) => {
          const i = this.queue.indexOf(p);
          if (!all.some((c) => c.live) && i >= 0) {
            this.queue.splice(i, 1);
            if (p.onAbort) signal?.removeEventListener('abort', p.onAbort);
            resolve(refusal(q, 'no-channel', undefined, all));
          }
        });
      }
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      for (let p = this.queue.shift(); p !== undefined; p = this.queue.shift()) {
        if (p.onAbort) p.signal?.removeEventListener('abort', p.onAbort);
        let outcome: AskOutcome;
        try {
          outcome = await this.present(p.q, p.signal);
        } catch {
          outcome = refusal(p.q, 'refused');
        }
        p.resolve(outcome);
      }
    } finally {
      this.busy = false;
    }
  }

  private async present(q: Question, outer: AbortSignal | undefined): Promise<AskOutcome> {
    if (outer?.aborted) return refusal(q, 'aborted');
    const live: AskChannel[] = [];
    const all: ChannelStatus[] = [];
    for (const ch of [...this.channels]) {
      const st = await statusOf(ch, q);
      all.push(st);
      if (st.live) live.push(ch);
    }
    if (live.length === 0) return refusal(q, 'no-channel', undefined, all);
    if (outer?.aborted) return refusal(q, 'aborted');

    const offered = q.scopes && q.scopes.length > 0 ? q.scopes : ['once'];
    const withdraw = new AbortController();
    return await new Promise<AskOutcome>((resolve) => {
      let done = false;
      let remaining = live.length;
      const finish = (o: AskOutcome): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        outer?.removeEventListener('abort', onOuterAbort);
        withdraw.abort(new TyError('E_ABORTED', 'question withdrawn'));
        resolve(o);
      };
      // No answer in time: a timeout, unless no channel ever showed it to a person (then nobody could answer).
      const seen = (): boolean =>
        live.some((ch) => {
          try {
            return typeof ch.presented !== 'function' || ch.presented(q.id) === true;
          } catch {
            return true;
          }
        });
      const timer = setTimeout(() => finish(refusal(q, seen() ? 'timeout' : 'no-channel')), this.askWaitMs);
      const onOuterAbort = (): void => finish(refusal(q, 'aborted'));
      outer?.addEventListener('abort', onOuterAbort, { once: true });
      for (const ch of live) {
        let answer: Promise<Answer | undefined>;
        try {
          answer = Promise.resolve(ch.ask(q, withdraw.signal));
        } catch {
          answer = Promise.resolve(undefined);
        }
        answer.then(
          (a) => {
            if (done) return;
            if (a && typeof a === 'object' && a.allow === true) {
              const scope = typeof a.scope === 'string' && (offered as string[]).includes(a.scope) ? a.scope : 'once';
              const values =
                q.form !== undefined && a.values !== null && typeof a.values === 'object'
                  ? { values: { ...a.values } }
                  : {};
              finish({ allow: true, scope, channel: ch.name, ...values });
            } else if (a && typeof a === 'object' && a.allow === false) {
              const o = refusal(q, 'refused', ch.name);
              if (q.form !== undefined && a.dismissed === true && !o.allow) o.dismissed = true;
              finish(o);
            } else if (--remaining === 0) {
              finish(refusal(q, 'no-channel'));
            }
          },
          () => {
            if (!done && --remaining === 0) finish(refusal(q, 'no-channel'));
          },
        );
      }
    });
  }
}

/**
 * The error a gate throws for a refused question: E_CAPABILITY_DENIED, its message saying why and naming the rule
 * that would let the call through without asking (from `q.suggestedRule`). Host-neutral: `data` carries `reason`
 * and `suggestedRule`; each host renders its own hint (the CLI names `--allow`, the browser `rules`).
 */
export function askRefusalError(what: string, outcome: Extract<AskOutcome, { allow: false }>): TyError {
  const why: Record<AskRefusalReason, string> = {
    'no-channel': 'nobody can answer a question here (no channel that can show it is live)',
    timeout: 'no answer came in time',
    refused: `refused${outcome.channel ? ` on ${outcome.channel}` : ''}`,
    aborted: 'the call was cancelled while asking',
  };
  const channels =
    outcome.reason === 'no-channel' && outcome.channels ? `; channels: ${describeChannels(outcome.channels)}` : '';
  const rule = outcome.suggestedRule
    ? `; the rule that allows it without asking: ${sanitizeInline(outcome.suggestedRule)}`
    : '';
  return new TyError(
    'E_CAPABILITY_DENIED',
    `${sanitizeInline(what)} was not allowed: ${why[outcome.reason]}${channels}${rule}`,
    {
      reason: outcome.reason,
      ...(outcome.suggestedRule ? { suggestedRule: outcome.suggestedRule, allowRule: outcome.suggestedRule } : {}),
    },
  );
}
