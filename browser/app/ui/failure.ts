// What a failed model request shows and offers: "Open settings", a 429 countdown that retries by itself, "Retry",
// "Continue"; browser app, trusted side.
import { failureKind, MAX_AUTO_RETRIES, retryDelay } from '../chat/retry.js';
import type { ModelError } from '../models/types.js';
import type { ConversationView } from './conversation.js';

export interface FailureWays {
  /** Send the same request again (the next attempt). */
  retry(): void;
  openSettings(): void;
  /** Continue the answer that was cut off, when its text was kept. */
  continueCut?: () => void;
}

/**
 * Show `e` (attempt `attempt`, 0 for the first request) in `view` with the way on (docs/app.md "When a request fails"):
 * 401/403 "Open settings"; 429 a countdown of Retry-After or the backoff, then `retry()` by itself at most
 * MAX_AUTO_RETRIES times, "Cancel" stops it; a cut stream "Continue" (or "Retry" when nothing was kept); anything else
 * "Retry". Returns a function that stops a running countdown (a no-op otherwise).
 */
export function showFailure(view: ConversationView, e: ModelError, attempt: number, ways: FailureWays): () => void {
  const kind = failureKind(e);
  if (kind === 'key') {
    view.notice(`The endpoint refused the key: ${e.message}.`, 'error', [
      { label: 'Open settings', run: ways.openSettings },
    ]);
    return () => {};
  }
  if (kind === 'cut') {
    const kept = ways.continueCut;
    view.notice(
      `The answer stopped mid-way (${e.message}).${kept ? ' The text received so far is kept.' : ''}`,
      'error',
      [kept ? { label: 'Continue', run: kept } : { label: 'Retry', run: ways.retry }],
    );
    return () => {};
  }
  const wait = kind === 'rate' ? retryDelay(attempt + 1, e.retryAfterMs) : undefined;
  if (wait === undefined) {
    view.notice(`The request failed: ${e.message}.`, 'error', [{ label: 'Retry', run: ways.retry }]);
    return () => {};
  }
  const until = Date.now() + wait;
  let timer: ReturnType<typeof setInterval> | undefined;
  const stop = () => {
    clearInterval(timer);
    timer = undefined;
  };
  const note = view.notice('', 'error', [
    {
      label: 'Cancel',
      run: () => {
        stop();
        note.remove();
        view.notice('Retry cancelled.', 'info', [{ label: 'Retry', run: ways.retry }]);
      },
    },
  ]);
  const text = note.querySelector('.notice-text')!;
  const tick = () => {
    const left = Math.max(0, Math.ceil((until - Date.now()) / 1000));
    text.textContent =
      `The endpoint is rate limiting requests (HTTP 429). Retrying in ${left} s ` +
      `(attempt ${attempt + 1} of ${MAX_AUTO_RETRIES}).`;
    if (Date.now() < until) return;
    stop();
    note.remove();
    ways.retry();
  };
  tick();
  timer = setInterval(tick, 250);
  return stop;
}
