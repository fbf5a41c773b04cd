// A tool's progress reports (`ctx.progress(fraction, message)`) on their way to a caller: coalesced to at most one per
// interval, the latest kept; core, trusted side.

/** One progress report: `fraction` 0..1 (how far the tool says it is), `message` its own words (raw text). */
export interface ProgressReport {
  fraction: number;
  message?: string;
}

/** What a caller hears about a run: the tool's code started, or it reported progress. */
export type RunProgress = { stage: 'started' } | ({ stage: 'progress' } & ProgressReport);

/**
 * Coalesces reports for one call: the first goes out at once, later ones at most one per `intervalMs` (ms); a report
 * that arrives inside the interval waits for its end and is replaced by any newer one (the latest wins), so a tool
 * reporting in a tight loop costs its caller at most 1000 / intervalMs messages a second. `close()` delivers the report
 * that waits, if any (the call ended: its last word comes before its result), then nothing more. Timers are the host's
 * setTimeout.
 */
export class ProgressThrottle {
  #last = -Infinity;
  #pending: ProgressReport | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(
    readonly deliver: (r: ProgressReport) => void,
    readonly intervalMs = 100,
    readonly now: () => number = Date.now,
  ) {}

  /** Offer one report; it is delivered now, later (coalesced) or, after close(), never. */
  push(r: ProgressReport): void {
    if (this.#closed) return;
    const wait = this.#last + this.intervalMs - this.now();
    if (wait <= 0 && this.#timer === undefined) return this.#send(r);
    this.#pending = r;
    if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.#flush(), Math.max(0, wait));
      (this.#timer as unknown as { unref?: () => void }).unref?.();
    }
  }

  /** Deliver the report that waits, if any, then nothing more. Idempotent. */
  close(): void {
    if (this.#closed) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const r = this.#pending;
    this.#pending = undefined;
    if (r) this.#send(r);
    this.#closed = true;
  }

  #flush(): void {
    this.#timer = undefined;
    const r = this.#pending;
    this.#pending = undefined;
    if (r && !this.#closed) this.#send(r);
  }

  #send(r: ProgressReport): void {
    this.#last = this.now();
    try {
      this.deliver(r);
    } catch {
      /* a listener's failure is its own */
    }
  }
}
