// Per-principal rate of registration requests (sliding window), in memory or shared through the store; core, trusted
// side.
import type { Store } from '../store/contract.js';

/** Counts requests per principal; `take` says whether one more fits (and counts it when it does). */
export interface RateCounter {
  readonly max: number;
  readonly windowMs: number;
  take(principal: string): boolean | Promise<boolean>;
}

/**
 * At most `max` registration requests (tool/add, tool/activate, tool/remove) per principal within any
 * `windowMs` ms (a sliding window over the request times). Memory is bounded: at most `max` times per
 * principal, and principals with no request inside the window are forgotten.
 */
export class RegistrationRate implements RateCounter {
  readonly #times = new Map<string, number[]>();
  readonly #clock: () => number;
  constructor(
    readonly max: number,
    readonly windowMs: number,
    clock?: () => number,
  ) {
    this.#clock = clock ?? (() => Date.now());
  }

  /** Count one request of `principal`; false (and not counted) when it would exceed the rate. */
  take(principal: string): boolean {
    const now = this.#clock();
    const since = now - this.windowMs;
    if (this.#times.size > 1024)
      for (const [k, v] of this.#times) if ((v[v.length - 1] ?? 0) <= since) this.#times.delete(k);
    const list = (this.#times.get(principal) ?? []).filter((t) => t > since && t <= now);
    if (list.length >= this.max) {
      this.#times.set(principal, list);
      return false;
    }
    list.push(now);
    this.#times.set(principal, list);
    return true;
  }
}

/** The store namespace of shared rate counters. */
export const RATE_NS = 'rate';

/**
 * The same sliding window kept in the store, so every instance sharing it (a team gateway's instances on one
 * PostgreSQL database, or several processes on one file store) counts against one budget per principal: each `take`
 * is one read-modify-write under the record's lock (Store.update; one transaction on PostgreSQL), so two instances
 * never both take the last place. The record holds at most `max` times; the key is a SHA-256 of the principal.
 */
export class StoreRate implements RateCounter {
  readonly #clock: () => number;
  constructor(
    readonly store: Store,
    readonly max: number,
    readonly windowMs: number,
    clock?: () => number,
    /** Names this counter's records (`registration` for protocol registrations). */
    readonly kind = 'registration',
  ) {
    this.#clock = clock ?? (() => Date.now());
  }

  async take(principal: string): Promise<boolean> {
    const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(principal));
    const hex = [...new Uint8Array(digest).slice(0, 16)].map((b) => b.toString(16).padStart(2, '0')).join('');
    let ok = false;
    await this.store.update<{ times: number[] }>(RATE_NS, `${this.kind}.${hex}`, (rec) => {
      const now = this.#clock();
      const since = now - this.windowMs;
      const times = (Array.isArray(rec?.times) ? rec.times : []).filter(
        (t) => typeof t === 'number' && t > since && t <= now,
      );
      ok = times.length < this.max;
      if (ok) times.push(now);
      // an empty window leaves no record behind
      return times.length === 0 ? undefined : { times };
    });
    return ok;
  }
}
