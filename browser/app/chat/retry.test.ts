// Retry-After parsing, the automatic retry schedule after HTTP 429, the failure kinds, and the history check that keeps
// a tool call without its result from being sent; test code.
import { describe, expect, it } from 'vitest';
import { ModelError, parseRetryAfter, providerMessage } from '../models/types.js';
import { failureKind, MAX_AUTO_RETRIES, retryDelay } from './retry.js';
import { unansweredToolCall } from './turn.js';

describe('parseRetryAfter (RFC 9110 §10.2.3)', () => {
  const now = Date.parse('2026-12-01T10:00:00Z');
  it('reads delay-seconds and an HTTP-date', () => {
    expect(parseRetryAfter('7', now)).toBe(7000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Tue, 01 Dec 2026 10:00:12 GMT', now)).toBe(12_000);
    expect(parseRetryAfter('Tue, 01 Dec 2026 09:59:00 GMT', now)).toBe(0);
  });
  it('ignores a missing or unreadable value', () => {
    for (const v of [undefined, null, '', 'soon', '-3', '1.5']) expect(parseRetryAfter(v, now)).toBeUndefined();
  });
});

describe('retryDelay', () => {
  it('waits what the server asked, else backs off exponentially, at most 3 times', () => {
    expect(retryDelay(1, 4000, 0)).toBe(4000);
    expect([1, 2, 3].map((a) => retryDelay(a, undefined, 0))).toEqual([1000, 2000, 4000]);
    expect(retryDelay(2, undefined, 0.999)).toBeLessThanOrEqual(2500);
    expect(retryDelay(MAX_AUTO_RETRIES + 1, 1000, 0)).toBeUndefined();
    expect(retryDelay(1, 10 * 60_000, 0)).toBeUndefined();
  });
});

describe('failureKind and providerMessage', () => {
  it('sorts failures by what the person can do', () => {
    expect(failureKind(new ModelError('x', 401))).toBe('key');
    expect(failureKind(new ModelError('x', 403))).toBe('key');
    expect(failureKind(new ModelError('x', 429))).toBe('rate');
    expect(failureKind(new ModelError('x', 503))).toBe('retry');
    expect(failureKind(new ModelError('x', 0, 'E_MODEL_NETWORK'))).toBe('retry');
    expect(failureKind(new ModelError('x', 200, 'E_MODEL_CUT'))).toBe('cut');
  });
  it("takes the message out of both providers' error bodies", () => {
    expect(providerMessage('{"error":{"message":"Rate limit reached","type":"x"}}')).toBe('Rate limit reached');
    expect(providerMessage('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')).toBe(
      'Overloaded',
    );
    expect(providerMessage('Bad gateway')).toBe('Bad gateway');
  });
});

describe('unansweredToolCall', () => {
  const call = (id: string) => ({ id, name: 't', arguments: '{}' });
  it('finds a tool call no tool message answers right after it', () => {
    expect(
      unansweredToolCall([
        { role: 'user', text: 'a' },
        { role: 'assistant', text: '', toolCalls: [call('c1'), call('c2')] },
        { role: 'tool', callId: 'c1', name: 't', content: '{}', isError: false },
        { role: 'user', text: 'b' },
      ]),
    ).toBe('c2');
    expect(
      unansweredToolCall([
        { role: 'assistant', text: '', toolCalls: [call('c1')] },
        { role: 'tool', callId: 'c1', name: 't', content: '{}', isError: false },
      ]),
    ).toBeUndefined();
  });
});
