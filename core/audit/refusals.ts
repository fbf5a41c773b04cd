// Admission refusals (E_BUSY: a host or a connection at its limit) audited in aggregate, one record per principal,
// reason and second; core, trusted side.
import { AUDIT_FIELD_MAX, type AuditRecord } from './record.js';
import type { AuditSink } from './trail.js';

/** One admission refusal: who was refused, why (the limit, in words), and for which tool when there is one. */
export interface AdmissionRefusal {
  principal: string;
  /** The limit that refused, e.g. `1024 calls in flight on this host`; the audit record's `rule`. */
  reason: string;
  /** The tool (or method) refused, when known; records of several tools say `*`. */
  tool?: string;
}

/** Where admission refusals are counted (the Invoker, the registration handler and the HTTP listeners take one). */
export interface RefusalCounter {
  /** Count one refusal. Never throws and never waits: refusing stays as cheap as it must be under a flood. */
  refused(r: AdmissionRefusal): void;
}

export interface RefusalTallyOptions {
  /** ms since the epoch; injected for tests. */
  clock?: () => number;
  /** The window one record covers, ms (default 1000). */
  windowMs?: number;
  /** Told when a record could not be written (a full disk): the refusals it stood for are lost, nothing else. */
  onError?: (e: unknown) => void;
}

interface Open {
  principal: string;
  reason: string;
  tool: string | undefined;
  several: boolean;
  window: number;
  count: number;
}

const cut = (v: string): string => (v.length > AUDIT_FIELD_MAX ? `${v.slice(0, AUDIT_FIELD_MAX - 7)}…[cut]` : v);

/**
 * Counts admission refusals and writes one audit record per principal, reason and window (one second by default):
 * kind `admission`, decision `deny`, outcome `denied`, code `E_BUSY`, rule = the reason, `count` = how many, `time` =
 * the start of the window, tool = the one tool refused or `*` for several, revision `*`. 9 982 refusals of one client
 * in a burst are a handful of records, not 9 982 lines, and not none. A window's record is written when the window ends
 * (a timer) or at `flush()`; the host flushes on close. Memory is bounded: at most `maxOpen` (principal, reason)
 * pairs are counted at once; past it the oldest window is written early.
 */
export class RefusalTally implements RefusalCounter {
  readonly #open = new Map<string, Open>();
  readonly #clock: () => number;
  readonly #windowMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #writing: Promise<void> = Promise.resolve();

  constructor(
    readonly sink: AuditSink,
    readonly opts: RefusalTallyOptions & { maxOpen?: number } = {},
  ) {
    this.#clock = opts.clock ?? (() => Date.now());
    this.#windowMs = opts.windowMs ?? 1000;
  }

  refused(r: AdmissionRefusal): void {
    const now = this.#clock();
    const window = now - (now % this.#windowMs);
    const key = `${r.principal}\u0000${r.reason}`;
    const open = this.#open.get(key);
    if (open && open.window !== window) {
      this.#open.delete(key);
      this.#write([open]);
    }
    const cur = this.#open.get(key);
    if (cur) {
      cur.count++;
      if (r.tool !== cur.tool) cur.several = true;
    } else {
      if (this.#open.size >= (this.opts.maxOpen ?? 1024)) {
        const oldest = this.#open.entries().next().value as [string, Open];
        this.#open.delete(oldest[0]);
        this.#write([oldest[1]]);
      }
      this.#open.set(key, {
        principal: r.principal,
        reason: r.reason,
        tool: r.tool,
        several: false,
        window,
        count: 1,
      });
    }
    this.#arm(window);
  }

  /** Write every open window's record now. Resolves once they are written (or failed, told to onError). */
  async flush(): Promise<void> {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const all = [...this.#open.values()];
    this.#open.clear();
    if (all.length > 0) this.#write(all);
    await this.#writing;
  }

  /** A timer at the end of the current window writes what it counted (unref'd where the runtime has that). */
  #arm(window: number): void {
    if (this.#timer !== undefined) return;
    const wait = Math.max(1, window + this.#windowMs - this.#clock());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      const now = this.#clock();
      const due: Open[] = [];
      for (const [k, o] of this.#open)
        if (o.window + this.#windowMs <= now) {
          due.push(o);
          this.#open.delete(k);
        }
      if (due.length > 0) this.#write(due);
      const next = this.#open.values().next().value as Open | undefined;
      if (next) this.#arm(next.window);
    }, wait);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  #write(list: Open[]): void {
    const recs = list.map(
      (o): AuditRecord => ({
        v: 1,
        time: new Date(o.window).toISOString(),
        principal: cut(o.principal),
        tool: o.several || o.tool === undefined ? '*' : cut(o.tool),
        revision: '*',
        kind: 'admission',
        decision: 'deny',
        rule: cut(o.reason),
        list: 'admission',
        scope: 'host',
        durationMs: 0,
        outcome: 'denied',
        code: 'E_BUSY',
        count: o.count,
      }),
    );
    this.#writing = this.#writing.then(async () => {
      for (const r of recs)
        await this.sink.append(r).catch((e: unknown) => {
          this.opts.onError?.(e);
        });
    });
  }
}
