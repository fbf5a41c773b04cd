// Idle expiry and least-recently-used eviction of client sessions (the policy; the host owns timers and transports);
// core, trusted side.

/** A client session as the clock sees it. */
interface Tracked<T> {
  value: T;
  /** When its last request arrived or ended (clock ms). */
  lastActive: number;
  /** Requests still waiting for their response; a session with any is never expired or evicted. */
  inFlight: number;
}

/** Default `session_idle`: a client session with no request for this long ends, ms. */
export const DEFAULT_SESSION_IDLE_MS = 300_000;

/**
 * Client sessions with their last activity and calls in flight. A session with no request for `idleMs`
 * and none in flight is expired; when every place is taken, the least recently used session with no call
 * in flight is the one to end for a new session (`evictable`). Clients that never send DELETE (MCP
 * streamable HTTP makes it optional: the SDK's `Client.close()` and the conformance suite send none)
 * thus never use up the places.
 */
export class SessionClock<T> {
  private readonly sessions = new Map<string, Tracked<T>>();
  constructor(
    readonly idleMs: number = DEFAULT_SESSION_IDLE_MS,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  get(id: string): T | undefined {
    return this.sessions.get(id)?.value;
  }

  values(): T[] {
    return [...this.sessions.values()].map((s) => s.value);
  }

  add(id: string, value: T): void {
    this.sessions.set(id, { value, lastActive: this.now(), inFlight: 0 });
  }

  /** Forget a session (it ended). */
  remove(id: string): void {
    this.sessions.delete(id);
  }

  /** A request of session `id` arrived: it counts as activity until the returned function says it ended. */
  begin(id: string): () => void {
    const s = this.sessions.get(id);
    if (s === undefined) return () => undefined;
    s.inFlight++;
    s.lastActive = this.now();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      s.inFlight--;
      s.lastActive = this.now();
    };
  }

  /** Ids of sessions idle for `idleMs` or longer with nothing in flight. */
  expired(): string[] {
    const t = this.now();
    return [...this.sessions].filter(([, s]) => s.inFlight === 0 && t - s.lastActive >= this.idleMs).map(([id]) => id);
  }

  /**
   * The least recently used session with nothing in flight (the one to end to make room), if any; with `which`, among
   * the sessions it accepts (e.g. one principal's own).
   */
  evictable(which?: (value: T) => boolean): string | undefined {
    let best: [string, Tracked<T>] | undefined;
    for (const e of this.sessions)
      if (
        e[1].inFlight === 0 &&
        (which === undefined || which(e[1].value)) &&
        (best === undefined || e[1].lastActive < best[1].lastActive)
      )
        best = e;
    return best?.[0];
  }

  /**
   * ms until the earliest idle session may expire (undefined: none tracked); busy sessions are checked again after
   * idleMs.
   */
  nextCheckMs(): number | undefined {
    if (this.sessions.size === 0) return undefined;
    const t = this.now();
    let next = this.idleMs;
    for (const s of this.sessions.values())
      if (s.inFlight === 0) next = Math.min(next, Math.max(0, s.lastActive + this.idleMs - t));
    return next;
  }
}
