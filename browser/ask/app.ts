// AskChannel the app renders itself: each question becomes an ApprovalQuestion object the app shows in its own UI (e.g.
// inline in a conversation) and answers; browser host, trusted side.
import type { Answer, AskChannel, Question } from '../../core/exec/runtime.js';
import type { GateRequest } from '../../core/exec/runtime.js';
import { plainQuestion, type PlainQuestion } from './text.js';
import { sanitizeInline } from '../../core/ask/text.js';

/** The choices a person has: allow once, for this session, always (stored per revision), or deny. */
export type ApprovalChoice = 'once' | 'session' | 'always' | 'deny';

const SCOPE_OF: Record<Exclude<ApprovalChoice, 'deny'>, Answer['scope']> = {
  once: 'once',
  session: 'session',
  always: 'permanent',
};
const CHOICE_OF: Record<Answer['scope'], ApprovalChoice> = { once: 'once', session: 'session', permanent: 'always' };

/** One question for the app to render. Every string is sanitized (core/ask/text.ts); set it as text, never as HTML. */
export interface ApprovalQuestion {
  id: string;
  /** Tool name. */
  tool: string;
  /**
   * Full revision id (a CID) and its short id for display (12 digest characters after the CID head, as the CLI prints;
   * an `mcp:SERVER` revision whole).
   */
  revision: string;
  revisionShort: string;
  /** `tool` (run the tool) or the capability asked for: fetch, storage, secret, mcp, popup, ... */
  capability: GateRequest['kind'];
  access?: 'read' | 'write';
  /** e.g. the origin of a fetch (`https://api.example.com`), `SERVER/TOOL` of an MCP call. */
  target?: string;
  /** The call's arguments, at most 6 lines, secret values withheld. */
  argsPreview: string[];
  /** Plain-language title and detail lines (no flags, no internal terms). */
  title: string;
  text: string[];
  /** The choices on offer, in display order: `deny` first, then once, session, always (alwaysAsk rules: once only). */
  choices: ApprovalChoice[];
  /** ms since the epoch. */
  askedAt: number;
  /** Aborted when the question is withdrawn: answered on another channel, no answer in time, or the call cancelled. */
  signal: AbortSignal;
  /** Answer it. Returns false when it was already answered or withdrawn. */
  answer(choice: ApprovalChoice): boolean;
}

export interface ApprovalChannelOptions {
  /** Channel name in answers and the audit trail (default `app`). */
  name?: string;
  /**
   * Whether a person can answer right now (default: while at least one listener is subscribed). The app can say
   * no, e.g. while its conversation view is not mounted; a question is then not presented here.
   */
  live?: () => boolean;
}

/**
 * The asynchronous approval channel: `subscribe(fn)` to receive each question as an ApprovalQuestion; answer it with
 * `q.answer('once' | 'session' | 'always' | 'deny')` (or `answer(id, choice)`); `pending()` lists the open ones (for
 * a view mounted later). The AskRouter (core/ask/router.ts) asks every live channel at once and the first answer wins,
 * so
 * the built-in dialog and this channel can both be on; an app rendering inline turns the dialog off
 * (`createBrowserHost({ dialog: false })`). Listener errors are contained.
 */
export class ApprovalChannel implements AskChannel {
  readonly name: string;
  readonly #listeners = new Set<(q: ApprovalQuestion) => void>();
  readonly #open = new Map<string, ApprovalQuestion>();
  readonly #live: (() => boolean) | undefined;

  constructor(opts: ApprovalChannelOptions = {}) {
    this.name = opts.name ?? 'app';
    this.#live = opts.live;
  }

  /** Receive every question from now on; returns the unsubscribe function. */
  subscribe(fn: (q: ApprovalQuestion) => void): () => void {
    this.#listeners.add(fn);
    return () => {
      this.#listeners.delete(fn);
    };
  }

  live(): boolean {
    if (this.#listeners.size === 0) return false;
    try {
      return this.#live ? this.#live() === true : true;
    } catch {
      return false;
    }
  }

  /** Questions presented here and not yet answered or withdrawn, oldest first. */
  pending(): ApprovalQuestion[] {
    return [...this.#open.values()];
  }

  /** Answer an open question by id. Returns false when there is none. */
  answer(id: string, choice: ApprovalChoice): boolean {
    return this.#open.get(id)?.answer(choice) ?? false;
  }

  ask(question: Question, signal: AbortSignal): Promise<Answer | undefined> {
    if (signal.aborted) return Promise.resolve(undefined);
    return new Promise<Answer | undefined>((resolve) => {
      const text: PlainQuestion = plainQuestion(question);
      const offered: Answer['scope'][] = question.scopes && question.scopes.length > 0 ? question.scopes : ['once'];
      const choices: ApprovalChoice[] = [
        'deny',
        ...(['once', 'session', 'permanent'] as const).filter((s) => offered.includes(s)).map((s) => CHOICE_OF[s]),
      ];
      const withdrawn = new AbortController();
      let done = false;
      const finish = (a: Answer | undefined): boolean => {
        if (done) return false;
        done = true;
        signal.removeEventListener('abort', onAbort);
        this.#open.delete(question.id);
        if (a === undefined) withdrawn.abort();
        resolve(a);
        return true;
      };
      const onAbort = () => finish(undefined);
      const f = question.facts;
      const aq: ApprovalQuestion = {
        id: question.id,
        tool: f ? sanitizeInline(f.tool) : '',
        revision: text.revision?.full ?? '',
        revisionShort: text.revision?.short ?? '',
        capability: f?.capability ?? 'tool',
        ...(f?.access !== undefined ? { access: f.access } : {}),
        ...(f?.target !== undefined ? { target: sanitizeInline(f.target) } : {}),
        argsPreview: text.preview,
        title: text.title,
        text: text.lines,
        choices,
        askedAt: Date.now(),
        signal: withdrawn.signal,
        answer: (choice) => {
          if (!choices.includes(choice)) return false;
          if (choice === 'deny') return finish({ allow: false, scope: 'once', channel: this.name });
          return finish({ allow: true, scope: SCOPE_OF[choice], channel: this.name });
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#open.set(question.id, aq);
      for (const fn of [...this.#listeners]) {
        try {
          fn(aq);
        } catch {
          /* a listener's failure is its own */
        }
      }
    });
  }
}
