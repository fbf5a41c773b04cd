// Per-principal rate of registration requests (sliding window); core, trusted side.

/**
 * At most `max` registration requests (tool/add, tool/activate, tool/remove) per principal within any
 * `windowMs` ms (a sliding window over the request times). Memory is bounded: at most `max` times per
 * principal, and principals with no request inside the window are forgotten.
 */
export class RegistrationRate {
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
