// Admission before exhaustion: connections, calls in flight and sessions bounded per server and per principal; refusals
// counted and audited in aggregate; Node host, trusted side.
import { readFileSync, readSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import type { AuditRecord } from '../../core/audit/trail.js';

/** Why a request was refused before it ran. */
export type RefusalReason = 'connections' | 'calls' | 'principal-calls' | 'sessions' | 'principal-sessions';

export interface AdmissionLimits {
  /** Sockets open at once on this server; a connection beyond is answered 429 at once and closed. */
  maxConnections: number;
  /** Refused sockets held open at once while their requests are read (the oldest is closed when more come). */
  refusedHeld: number;
  /** Requests being handled at once on this server. */
  maxInFlight: number;
  /** Requests being handled at once for one principal. */
  maxInFlightPerPrincipal: number;
  /** Sessions open at once on this server. */
  maxSessions: number;
  /** Sessions open at once for one principal (so one client cannot take every place). */
  maxSessionsPerPrincipal: number;
  /** The listen backlog: connections the kernel holds while the server is at its limit. */
  backlog: number;
  /** Seconds a refused client is told to wait (Retry-After). */
  retryAfterSec: number;
  /**
   * Event-loop delay, ms, beyond which new connections are refused cheaply (the raw 429) until it is back under it: a
   * flood must not starve the work already admitted, nor the accepting of connections the kernel holds (it resets
   * those that wait too long). 0: never.
   */
  maxLagMs: number;
}

/** The soft limit on open files of this process (RLIMIT_NOFILE, from /proc/self/limits), or undefined where unknown. */
export function openFileLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (!m) return undefined;
    return m[1] === 'unlimited' ? undefined : Number(m[1]);
  } catch {
    return undefined;
  }
}

/**
 * Limits that keep this process under its descriptor limit `nofile` whatever arrives. Every accepted connection is
 * either admitted (at most maxConnections) or refused at once and held only while its request is read (at most
 * refusedHeld: the oldest is closed when another comes), so sockets never take more than maxConnections + refusedHeld
 * descriptors however fast the event loop accepts (it takes the kernel's whole queue at once). A refused socket's
 * request is read as it is refused (drainNow) and the socket closed at once, so a refusal usually holds nothing; only
 * a client slow to send waits, bounded. The kernel's accept backlog (4096, clamped by net.core.somaxconn) holds what
 * waits without any descriptor; a long queue also keeps a flood from overflowing into SYN cookies. An eighth of the
 * limit (at least 256) stays free for the store, sandboxes and their pipes. Calls in flight: half the connections; per
 * principal: a quarter of that.
 */
export function defaultLimits(nofile = openFileLimit() ?? 65_536): AdmissionLimits {
  const reserve = Math.max(256, Math.floor(nofile / 8));
  const refusedHeld = Math.max(64, Math.min(4096, Math.floor(nofile / 2)));
  const maxConnections = Math.max(16, Math.min(10_000, nofile - refusedHeld - reserve));
  const maxInFlight = Math.max(8, Math.floor(maxConnections / 2));
  return {
    maxConnections,
    refusedHeld,
    maxInFlight,
    maxInFlightPerPrincipal: Math.max(4, Math.floor(maxInFlight / 4)),
    maxSessions: Math.max(16, Math.min(4096, Math.floor(maxConnections / 2))),
    maxSessionsPerPrincipal: 16,
    backlog: 4096,
    retryAfterSec: 1,
    maxLagMs: 250,
  };
}

/** Where refusals are counted (metrics) and where their aggregate records go (the audit). */
export interface AdmissionSinks {
  /** One refused request (a Prometheus counter). */
  refused?: (reason: RefusalReason) => void;
  /** One aggregate record per principal per interval. */
  audit?: (rec: AuditRecord) => Promise<void>;
  clock?: () => number;
  /** Aggregate interval, ms (default 60 000). */
  intervalMs?: number;
}

/**
 * Whether `buf` holds one whole HTTP/1.x request: the head, then `content-length` bytes or a chunked body's last chunk.
 * A request too large to buffer (over 64 KiB seen) counts as complete once its head is (the socket then closes).
 */
export function requestComplete(buf: Buffer): boolean {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return buf.length >= 65_536;
  const head = buf.subarray(0, end).toString('latin1').toLowerCase();
  const body = buf.length - end - 4;
  if (/\ntransfer-encoding:[^\n]*chunked/.test(head)) return buf.includes('0\r\n\r\n', end + 4) || buf.length >= 65_536;
  const len = /\ncontent-length:\s*(\d+)/.exec(head);
  return !len || body >= Number(len[1]) || buf.length >= 65_536;
}

/**
 * Read what the kernel holds for `socket` now, synchronously (read(2) on its non-blocking descriptor until EAGAIN, at
 * most 64 KiB), so that closing it right after never resets it (a close with unread data sends RST and drops the
 * answer already written). Empty where the descriptor is not reachable.
 */
export function drainNow(socket: Socket): Buffer {
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let total = 0;
  const buf = Buffer.allocUnsafe(16_384);
  while (total < 65_536) {
    let n: number;
    try {
      n = readSync(fd, buf, 0, buf.length, null);
    } catch {
      break; // EAGAIN: nothing more now
    }
    if (n <= 0) break;
    chunks.push(Buffer.from(buf.subarray(0, n)));
    total += n;
    // a short read took everything there was: no second read (its EAGAIN would cost an exception)
    if (n < buf.length) break;
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/** The principal named on refusals that happen before a request is authenticated (connection limit). */
export const UNAUTHENTICATED = 'unauthenticated';

/**
 * One server's admission control. Connections are counted as they are accepted (listener): beyond maxConnections a
 * connection is answered 429 with Retry-After and `Connection: close` at once (see listener: an answer, never a
 * reset). Requests hold
 * an in-flight place per server and per principal (enter), sessions one per principal (openSession). Every refusal is
 * counted at once and written to the audit as one record per principal per interval (`kind: admission`, the counts by
 * reason in `target`), never one per request (a flood must not become a flood of records) and never none.
 */
export class Admission {
  readonly limits: AdmissionLimits;
  #connections = 0;
  #inFlight = 0;
  #sessions = 0;
  readonly #perPrincipal = new Map<string, number>();
  readonly #sessionsOf = new Map<string, number>();
  readonly #over = new WeakSet<object>();
  /** Refused plain-HTTP sockets still open, oldest first. */
  readonly #refused = new Set<Socket>();
  readonly #pending = new Map<string, Map<RefusalReason, number>>();
  readonly #sinks: AdmissionSinks;
  #timer: ReturnType<typeof setInterval> | undefined;
  #windowStart: number;

  constructor(limits: Partial<AdmissionLimits> = {}, sinks: AdmissionSinks = {}) {
    this.limits = { ...defaultLimits(), ...limits };
    this.#sinks = sinks;
    this.#windowStart = (sinks.clock ?? Date.now)();
    if (sinks.audit) {
      this.#timer = setInterval(() => void this.flush(), sinks.intervalMs ?? 60_000);
      this.#timer.unref();
    }
  }

  get connections(): number {
    return this.#connections;
  }
  get inFlight(): number {
    return this.#inFlight;
  }
  get sessions(): number {
    return this.#sessions;
  }

  /**
   * The listening socket in front of `server`: it counts connections and hands each to `server` (an http or https
   * Server that does not listen itself). A plain-HTTP connection beyond maxConnections never reaches it: it is answered
   * at once with a fixed 429 (E_BUSY, Retry-After, Connection: close) written straight to the socket, whose request is
   * then read and dropped until the client closes (closing with unread data would reset it). So a flood costs one
   * short-lived descriptor per refused connection and no parsing, and the process stays under its descriptor limit
   * (the kernel's accept queue, `backlog`, holds the rest). With `tls` the handshake must happen first: such a
   * connection is marked (overLimit) at `secureConnection` and its request answered 429 by the front.
   */
  listener(server: Server, tls = false): Server {
    // (idle keep-alive connections are not closed to make room: Node's closeIdleConnections also closes connections
    // whose first request has not arrived yet, which the client sees as a reset; keepAliveTimeout bounds them instead)
    const over = (): boolean => this.#connections > this.limits.maxConnections || this.#lagging();
    if (tls) server.on('secureConnection', (socket: object) => over() && this.#over.add(socket));
    return createServer({ noDelay: true }, (socket) => {
      this.#connections++;
      socket.once('close', () => this.#connections--);
      socket.on('error', () => socket.destroy());
      if (!tls && over()) {
        this.refuse('connections', UNAUTHENTICATED);
        // the answer and our FIN first; the request is then read whole and the socket closed (nothing unread is left:
        // closing with unread data would reset the connection). Refused sockets held at once are bounded: beyond
        // refusedHeld the oldest is closed without waiting for its request (it has its answer and our FIN already).
        socket.end((this.#busyAnswer ??= this.#connectionsAnswer()));
        // usually the request is there already (the connection waited in the kernel's queue): read it now and close
        let seen: Buffer = drainNow(socket);
        const done = (): void => {
          this.#refused.delete(socket);
          socket.destroy();
        };
        if (requestComplete(seen)) return done();
        this.#hold(socket);
        socket.on('data', (d: Buffer) => {
          seen = seen.length + d.length > 65_536 ? d : Buffer.concat([seen, d]);
          if (requestComplete(seen)) done();
        });
        socket.once('end', done);
        socket.once('close', () => this.#refused.delete(socket));
        socket.setTimeout(2000, done);
        return;
      }
      if (tls && over()) {
        // TLS: the handshake comes first (the front then answers 429), bounded like the plain refusals: the oldest one
        // still open is closed when more come (a client of in-process TLS may then see its connection closed)
        this.#hold(socket);
        socket.once('close', () => this.#refused.delete(socket));
      }
      server.emit('connection', socket);
    });
  }

  /** The fixed answer to a connection beyond the limit, made once (a flood must cost as little as possible). */
  #busyAnswer: Buffer | undefined;
  #connectionsAnswer(): Buffer {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, message: this.message('connections'), data: { code: 'E_BUSY' } },
    });
    return Buffer.from(
      `HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: ${this.limits.retryAfterSec}\r\n` +
        `connection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }

  /** When the event loop last ran late (ms since the epoch), measured by a 20 ms tick. */
  #lateAt = 0;
  #lastTick = 0;
  #tick: ReturnType<typeof setInterval> | undefined;
  /** Whether the event loop ran later than maxLagMs within the last second. */
  #lagging(): boolean {
    if (this.limits.maxLagMs <= 0) return false;
    if (!this.#tick) {
      this.#lastTick = performance.now();
      this.#tick = setInterval(() => {
        const now = performance.now();
        if (now - this.#lastTick - 20 > this.limits.maxLagMs) this.#lateAt = Date.now();
        this.#lastTick = now;
      }, 20);
      this.#tick.unref();
    }
    // the tick itself may be the one that is late: count the time since it last ran too
    return Date.now() - this.#lateAt < 1000 || performance.now() - this.#lastTick - 20 > this.limits.maxLagMs;
  }

  /** Keep a refused socket open while its request is read; beyond refusedHeld the oldest is closed now. */
  #hold(socket: Socket): void {
    this.#refused.add(socket);
    if (this.#refused.size <= this.limits.refusedHeld) return;
    const oldest = this.#refused.values().next().value as Socket;
    this.#refused.delete(oldest);
    // whatever it sent so far is read first: closing with unread data would reset it, its answer lost
    drainNow(oldest);
    oldest.destroy();
  }

  /** Whether the request's socket came in beyond the connection limit. */
  overLimit(socket: object): boolean {
    return this.#over.has(socket);
  }

  /**
   * Take an in-flight place for `principal`; returns its release, or the reason of the refusal (counted and audited).
   */
  enter(principal: string): { ok: true; release: () => void } | { ok: false; reason: RefusalReason } {
    if (this.#inFlight >= this.limits.maxInFlight) return { ok: false, reason: this.refuse('calls', principal) };
    const mine = this.#perPrincipal.get(principal) ?? 0;
    if (mine >= this.limits.maxInFlightPerPrincipal)
      return { ok: false, reason: this.refuse('principal-calls', principal) };
    this.#inFlight++;
    this.#perPrincipal.set(principal, mine + 1);
    let done = false;
    return {
      ok: true,
      release: () => {
        if (done) return;
        done = true;
        this.#inFlight--;
        const n = (this.#perPrincipal.get(principal) ?? 1) - 1;
        if (n <= 0) this.#perPrincipal.delete(principal);
        else this.#perPrincipal.set(principal, n);
      },
    };
  }

  /** Take a session place for `principal`; returns its release, or the refusal's reason. */
  openSession(principal: string): { ok: true; release: () => void } | { ok: false; reason: RefusalReason } {
    if (this.#sessions >= this.limits.maxSessions) return { ok: false, reason: this.refuse('sessions', principal) };
    const mine = this.#sessionsOf.get(principal) ?? 0;
    if (mine >= this.limits.maxSessionsPerPrincipal)
      return { ok: false, reason: this.refuse('principal-sessions', principal) };
    this.#sessions++;
    this.#sessionsOf.set(principal, mine + 1);
    let done = false;
    return {
      ok: true,
      release: () => {
        if (done) return;
        done = true;
        this.#sessions--;
        const n = (this.#sessionsOf.get(principal) ?? 1) - 1;
        if (n <= 0) this.#sessionsOf.delete(principal);
        else this.#sessionsOf.set(principal, n);
      },
    };
  }

  /** Sessions `principal` holds now. */
  sessionsOf(principal: string): number {
    return this.#sessionsOf.get(principal) ?? 0;
  }

  /** Count one refusal (metrics at once, the audit at the next flush); returns `reason`. */
  refuse(reason: RefusalReason, principal: string): RefusalReason {
    this.#sinks.refused?.(reason);
    let m = this.#pending.get(principal);
    if (!m) {
      // bounded: a flood of distinct principals folds into one line
      if (this.#pending.size >= 1000) principal = '*';
      m = this.#pending.get(principal) ?? new Map();
      this.#pending.set(principal, m);
    }
    m.set(reason, (m.get(reason) ?? 0) + 1);
    return reason;
  }

  /** The message of a refusal, for the E_BUSY answer. */
  message(reason: RefusalReason): string {
    const l = this.limits;
    switch (reason) {
      case 'connections':
        return `the server is at its limit of connections (${l.maxConnections} open at most, or too busy to take more now); retry after ${l.retryAfterSec} s`;
      case 'calls':
        return `the server is handling ${l.maxInFlight} requests (its limit); retry after ${l.retryAfterSec} s`;
      case 'principal-calls':
        return `you have ${l.maxInFlightPerPrincipal} requests in flight on this server (the limit per principal); retry after ${l.retryAfterSec} s`;
      case 'sessions':
        return `the server has ${l.maxSessions} sessions open (its limit); end one or retry later`;
      case 'principal-sessions':
        return `you have ${l.maxSessionsPerPrincipal} sessions open on this server (the limit per principal); end one (DELETE) before opening another`;
    }
  }

  /** Write the aggregate records of the refusals counted since the last flush (one per principal). */
  async flush(): Promise<void> {
    const clock = this.#sinks.clock ?? Date.now;
    const now = clock();
    const since = this.#windowStart;
    this.#windowStart = now;
    if (this.#pending.size === 0 || !this.#sinks.audit) return;
    const batch = [...this.#pending];
    this.#pending.clear();
    for (const [principal, counts] of batch) {
      const total = [...counts.values()].reduce((a, b) => a + b, 0);
      const detail = [...counts].map(([r, n]) => `${r} ${n}`).join(', ');
      const rec: AuditRecord = {
        v: 1,
        time: new Date(now).toISOString(),
        principal: principal.slice(0, 2048),
        tool: '*',
        revision: '-',
        kind: 'admission',
        target: `${total} request(s) refused in ${Math.max(1, Math.round((now - since) / 1000))} s: ${detail}`,
        decision: 'deny',
        rule: 'admission limits',
        list: 'limit',
        scope: 'server',
        durationMs: Math.max(0, now - since),
        outcome: 'denied',
        code: 'E_BUSY',
      };
      await this.#sinks.audit(rec).catch(() => undefined);
    }
  }

  /** Stop the flush timer and write what is pending. */
  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    if (this.#tick) clearInterval(this.#tick);
    this.#timer = undefined;
    await this.flush();
  }
}
