// Bounded pool of bridged MCP server sessions for one sandbox (limits, start queue, idle end, a session that ended
// replaced on the next call); core, trusted side.
import { TyError } from '../../errors.js';

/**
 * Something the pool can end: a running server session. `alive` false says the session ended on its own (its server
 * timed out, crashed, sent too much or garbage): the pool never hands it out again.
 */
export interface Closable {
  close(): Promise<void>;
  readonly alive?: boolean;
}

export interface PoolLimits {
  /** Live server sessions per sandbox (default 8). */
  maxSessions: number;
  /** Sessions starting at once (default 2). */
  maxStarting: number;
  /** A session with no call for this long ends with its server, ms (default 300 000). */
  idleMs: number;
  /** How long a session may wait for a place or a start slot before E_BUSY, ms (default 60 000). */
  waitMs: number;
}
export const DEFAULT_POOL_LIMITS: PoolLimits = { maxSessions: 8, maxStarting: 2, idleMs: 300_000, waitMs: 60_000 };

interface Entry<S> {
  key: string;
  fingerprint: string;
  state: 'starting' | 'ready';
  session?: S;
  ready: Promise<S>;
  abort: AbortController;
  inFlight: number;
  /** When the last call ended (Date.now() ms). */
  lastUsed: number;
  idleTimer?: ReturnType<typeof setTimeout>;
}

interface Waiter {
  resolve: () => void;
  reject: (e: Error) => void;
  timer: ReturnType<typeof setTimeout>;
  onAbort?: () => void;
  signal?: AbortSignal;
}

function unref(t: ReturnType<typeof setTimeout>): void {
  (t as unknown as { unref?: () => void }).unref?.();
}

/**
 * Server sessions keyed by `key` (client session + server name). At most `maxSessions` places (starting or
 * ready) and `maxStarting` starts at once; the rest wait in order, and one still waiting after `waitMs`
 * gets E_BUSY. A start whose caller went away keeps running and the session is kept for the next call,
 * unless `cancel(key)` says the client closed first, which stops it and frees its place.
 * A session whose definition fingerprint changed ends; the request that finds it gets E_MCP_REDEFINED.
 *
 * Each place's life, as a state machine (every order of these is tested: test/mcp/session-renewal.test.ts):
 * - (none) -> starting: a call finds no place; `start` runs.
 * - starting -> ready: the start succeeded. starting -> (none): it failed, or `cancel`/`end` stopped it.
 * - ready -> ready: a call; a call the client cancelled (the server is told, the session stays).
 * - ready -> ended: the session ended on its own (`alive` false: timed out, crashed, oversize, garbage). The place is
 *   freed at once (never only when the session's own close has finished: a server's process group may take its kill
 *   grace to go), and the next call starts a fresh session.
 * - ready -> (none): idle, `end`, `cancel`, a redefinition, the bridge closing.
 * A session that ended tells the pool with `retire(key, session)`, which frees the place only if it is still that
 * session's: a late word from an ended session never ends the fresh one that took its place.
 */
export class SessionPool<S extends Closable> {
  private readonly entries = new Map<string, Entry<S>>();
  private starting = 0;
  private readonly waiters: Waiter[] = [];
  readonly limits: PoolLimits;
  private closed = false;

  constructor(limits: Partial<PoolLimits> = {}) {
    this.limits = { ...DEFAULT_POOL_LIMITS, ...limits };
  }

  /** Places taken (starting + ready). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Run `fn` with the session for `key`, starting it with `start` if needed. While `fn` runs the session
   * cannot idle out.
   * @throws TyError E_BUSY (no place or start slot within waitMs), E_MCP (session gone after a definition
   *   change, or the start failed), E_ABORTED (signal).
   */
  async use<T>(
    key: string,
    fingerprint: string,
    start: (signal: AbortSignal) => Promise<S>,
    fn: (s: S) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    const s = await this.acquire(key, fingerprint, start, signal);
    const e = this.entries.get(key);
    if (e !== undefined) this.busy(e, +1);
    try {
      return await fn(s);
    } finally {
      const now = this.entries.get(key);
      if (now !== undefined && now === e) this.busy(now, -1);
    }
  }

  /**
   * The ready session for `key`, if its fingerprint is `fingerprint`, held busy (it cannot idle out) until
   * `release` is called; undefined when none is ready or the fingerprint differs, and then `use` is the way
   * (it starts, waits, or ends a session whose server was defined again).
   */
  tryHold(key: string, fingerprint: string): { session: S; release: () => void } | undefined {
    const e = this.entries.get(key);
    if (
      this.closed ||
      e === undefined ||
      e.state !== 'ready' ||
      e.session === undefined ||
      e.session.alive === false ||
      e.fingerprint !== fingerprint
    )
      return undefined;
    this.busy(e, +1);
    let released = false;
    return {
      session: e.session,
      release: () => {
        if (released) return;
        released = true;
        if (this.entries.get(key) === e) this.busy(e, -1);
      },
    };
  }

  private async acquire(
    key: string,
    fingerprint: string,
    start: (signal: AbortSignal) => Promise<S>,
    signal?: AbortSignal,
  ): Promise<S> {
    if (this.closed) throw new TyError('E_MCP', 'the bridge is closing');
    let e = this.entries.get(key);
    if (e !== undefined && e.fingerprint !== fingerprint) {
      await this.end(key);
      throw new TyError(
        'E_MCP_REDEFINED',
        'this session is gone: its server was defined again; the next request starts a new one',
      );
    }
    // a session that ended on its own is never handed out: its place is freed and a fresh one starts
    if (e !== undefined && e.state === 'ready' && e.session?.alive === false) {
      this.free(e);
      e = undefined;
    }
    // a ready session needs no wait (and no abort listener): the common case of every call after the first
    if (e !== undefined && e.state === 'ready' && e.session !== undefined) {
      if (signal?.aborted) throw new TyError('E_ABORTED', 'the client went away');
      return e.session;
    }
    if (e === undefined) e = await this.create(key, fingerprint, start, signal);
    return await waitWithSignal(e.ready, signal);
  }

  private async create(
    key: string,
    fingerprint: string,
    start: (signal: AbortSignal) => Promise<S>,
    signal?: AbortSignal,
  ): Promise<Entry<S>> {
    // wait for a place and a start slot, in order
    while (this.entries.size >= this.limits.maxSessions || this.starting >= this.limits.maxStarting) {
      await this.waitTurn(signal);
      const raced = this.entries.get(key);
      if (raced !== undefined) return raced;
    }
    const abort = new AbortController();
    this.starting++;
    const entry: Entry<S> = {
      key,
      fingerprint,
      state: 'starting',
      ready: Promise.resolve(undefined as unknown as S),
      abort,
      inFlight: 0,
      lastUsed: Date.now(),
    };
    entry.ready = (async () => {
      try {
        const s = await start(abort.signal);
        if (abort.signal.aborted || this.entries.get(key) !== entry) {
          await s.close().catch(() => undefined);
          throw new TyError('E_ABORTED', 'the session was cancelled before it started');
        }
        entry.session = s;
        entry.state = 'ready';
        entry.lastUsed = Date.now();
        this.armIdle(entry, this.limits.idleMs);
        return s;
      } catch (err) {
        if (this.entries.get(key) === entry) this.entries.delete(key);
        if (err instanceof TyError) throw err;
        throw new TyError('E_MCP', `the server did not start: ${String((err as Error)?.message ?? err).slice(0, 300)}`);
      } finally {
        this.starting--;
        this.wake();
      }
    })();
    entry.ready.catch(() => undefined);
    this.entries.set(key, entry);
    return entry;
  }

  /** The client closed: a session still starting is stopped and frees its place; a ready one ends too. */
  async cancel(key: string): Promise<void> {
    await this.end(key);
  }

  /** End one session (its server stopped). */
  async end(key: string): Promise<void> {
    const e = this.entries.get(key);
    if (e === undefined) return;
    await this.free(e);
  }

  /**
   * `session` ended on its own (its server timed out, crashed, sent too much or garbage): its place is freed now, if it
   * is still the one at `key` (a session that ended late never ends the one that replaced it); its close goes on.
   */
  retire(key: string, session: S): void {
    const e = this.entries.get(key);
    if (e !== undefined && e.session === session) void this.free(e);
  }

  /** Take `e` out of the pool at once (its place is free for the next call), then close its session. */
  private async free(e: Entry<S>): Promise<void> {
    if (this.entries.get(e.key) === e) this.entries.delete(e.key);
    if (e.idleTimer !== undefined) clearTimeout(e.idleTimer);
    e.idleTimer = undefined;
    e.abort.abort();
    this.wake();
    if (e.session !== undefined) await e.session.close().catch(() => undefined);
  }

  /** End every session whose key starts with `prefix` (a client session closing). */
  async endPrefix(prefix: string): Promise<void> {
    await Promise.all([...this.entries.keys()].filter((k) => k.startsWith(prefix)).map((k) => this.end(k)));
  }

  /** End everything; waiting callers get E_MCP. */
  async closeAll(): Promise<void> {
    this.closed = true;
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
      w.reject(new TyError('E_MCP', 'the bridge is closing'));
    }
    await Promise.all([...this.entries.keys()].map((k) => this.end(k)));
  }

  // the idle timer is not reset per call (a timer per call is a measurable part of a call's cost): when it
  // fires it ends the session only if no call ran for idleMs, and otherwise waits out the rest
  private busy(e: Entry<S>, d: number): void {
    e.inFlight += d;
    if (e.inFlight === 0 && e.state === 'ready') {
      e.lastUsed = Date.now();
      if (e.idleTimer === undefined) this.armIdle(e, this.limits.idleMs);
    }
  }

  private armIdle(e: Entry<S>, ms: number): void {
    if (e.idleTimer !== undefined) clearTimeout(e.idleTimer);
    e.idleTimer = setTimeout(() => {
      e.idleTimer = undefined;
      // a call in flight re-arms it when it ends
      if (this.entries.get(e.key) !== e || e.inFlight > 0) return;
      const left = e.lastUsed + this.limits.idleMs - Date.now();
      if (left > 0) this.armIdle(e, left);
      else void this.end(e.key);
    }, ms);
    unref(e.idleTimer);
  }

  private waitTurn(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(new TyError('E_ABORTED', 'the client went away while waiting'));
      const w: Waiter = {
        resolve: () => {
          clearTimeout(w.timer);
          if (w.onAbort) signal?.removeEventListener('abort', w.onAbort);
          resolve();
        },
        reject,
        timer: setTimeout(() => {
          this.drop(w);
          reject(
            new TyError(
              'E_BUSY',
              `no MCP session place free within ${Math.round(this.limits.waitMs / 1000)} s (at most ${this.limits.maxSessions} sessions, ${this.limits.maxStarting} starting at once); try again later`,
            ),
          );
        }, this.limits.waitMs),
      };
      if (signal !== undefined) {
        w.signal = signal;
        w.onAbort = () => {
          this.drop(w);
          clearTimeout(w.timer);
          reject(new TyError('E_ABORTED', 'the client went away while waiting'));
        };
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      this.waiters.push(w);
    });
  }

  private drop(w: Waiter): void {
    const i = this.waiters.indexOf(w);
    if (i >= 0) this.waiters.splice(i, 1);
  }

  private wake(): void {
    // each waiter re-checks the limits; wake all and let them re-queue in order
    for (const w of this.waiters.splice(0)) w.resolve();
  }
}

function waitWithSignal<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (signal === undefined) return p;
  if (signal.aborted) return Promise.reject(new TyError('E_ABORTED', 'the client went away'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new TyError('E_ABORTED', 'the client went away'));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
