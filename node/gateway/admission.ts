// Admission before exhaustion: connections, calls in flight and sessions bounded per server and per principal; refusals
// counted and audited in aggregate; Node host, trusted side.
import { readFileSync } from 'node:fs';
import type { Server } from 'node:net';
import type { AuditRecord } from '../../core/audit/trail.js';

/** Why a request was refused before it ran. */
export type RefusalReason = 'connections' | 'calls' | 'principal-calls' | 'sessions' | 'principal-sessions';

export interface AdmissionLimits {
  /** Sockets open at once on this server; a connection beyond is answered 429 at once and closed. */
  maxConnections: number;
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
 * Limits that keep this process under its descriptor limit `nofile` whatever arrives: a quarter of it (at most 511)
 * for the kernel's accept backlog, which the server drains in bursts; 192 kept for the store, sandboxes and their
 * pipes; the rest for connections. Calls in flight: half the connections; per principal: a quarter.
 */
export function defaultLimits(nofile = openFileLimit() ?? 65_536): AdmissionLimits {
  const backlog = Math.max(16, Math.min(511, Math.floor(nofile / 4)));
  const maxConnections = Math.max(16, Math.min(10_000, nofile - backlog - 192));
  const maxInFlight = Math.max(8, Math.floor(maxConnections / 2));
  return {
    maxConnections,
    maxInFlight,
    maxInFlightPerPrincipal: Math.max(4, Math.floor(maxInFlight / 4)),
    maxSessions: Math.max(16, Math.min(4096, Math.floor(maxConnections / 2))),
    maxSessionsPerPrincipal: 16,
    backlog,
    retryAfterSec: 1,
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

/** The principal named on refusals that happen before a request is authenticated (connection limit). */
export const UNAUTHENTICATED = 'unauthenticated';

/**
 * One server's admission control. Connections are counted as they are accepted (attach): beyond maxConnections a
 * socket is marked and its request answered 429 with Retry-After and `Connection: close`, after its body is read (so
 * the client gets an answer, not a reset); idle keep-alive connections are closed first to make room. Requests hold
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
   * Count `server`'s connections; those beyond the limit are marked (overLimit) for a 429. With `tls`, the socket a
   * request arrives on is the TLS socket of the accepted one (marked at `secureConnection`).
   */
  attach(server: Server & { closeIdleConnections?: () => void }, tls = false): void {
    let lastIdleSweep = 0;
    const over = (): boolean => {
      if (this.#connections <= this.limits.maxConnections) return false;
      const now = Date.now();
      if (now - lastIdleSweep > 100) {
        lastIdleSweep = now;
        server.closeIdleConnections?.();
      }
      return true;
    };
    server.on('connection', (socket) => {
      this.#connections++;
      socket.once('close', () => this.#connections--);
      if (!tls && over()) this.#over.add(socket);
    });
    if (tls) server.on('secureConnection', (socket: object) => over() && this.#over.add(socket));
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
        return `the server has ${l.maxConnections} connections open (its limit); retry after ${l.retryAfterSec} s`;
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
    this.#timer = undefined;
    await this.flush();
  }
}
