// What a failed model request offers: the kind of failure, and the waits of automatic retries after HTTP 429; browser
// app, trusted side.
import type { ModelError } from '../models/types.js';

/** Automatic retries after HTTP 429 before the app stops and offers "Retry". */
export const MAX_AUTO_RETRIES = 3;
/** Longest wait retried automatically (ms); a longer Retry-After is shown and left to the person. */
export const MAX_AUTO_WAIT_MS = 5 * 60_000;

export type FailureKind = 'key' | 'rate' | 'retry' | 'cut';

/**
 * How the app answers a failed request: `key` (HTTP 401/403: the endpoint refused the key; "Open settings"), `rate`
 * (HTTP 429: wait and retry by itself), `cut` (the stream stopped mid-way: "Continue"), `retry` (5xx, network, any
 * other: "Retry").
 */
export function failureKind(e: ModelError): FailureKind {
  if (e.code === 'E_MODEL_CUT') return 'cut';
  if (e.status === 401 || e.status === 403) return 'key';
  if (e.status === 429) return 'rate';
  return 'retry';
}

/**
 * The wait before automatic retry number `attempt` (1-based), ms: the server's Retry-After when it gave one, else
 * exponential backoff from 1 s (1, 2, 4 s, ...) with up to 25% jitter (`random` in [0, 1)). Undefined when no more
 * automatic retries are due (more than MAX_AUTO_RETRIES, or a wait longer than MAX_AUTO_WAIT_MS).
 */
export function retryDelay(
  attempt: number,
  retryAfterMs: number | undefined,
  random = Math.random(),
): number | undefined {
  if (attempt > MAX_AUTO_RETRIES) return undefined;
  const base = retryAfterMs ?? 1000 * 2 ** (attempt - 1) * (1 + 0.25 * random);
  return base > MAX_AUTO_WAIT_MS ? undefined : Math.round(base);
}
