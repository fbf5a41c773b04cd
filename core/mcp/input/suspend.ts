// A 2025-era server's call held open while its elicitation requests are relayed to a 2026-07-28 client as
// input_required results and answered on the client's retries; core, trusted side.
//
// A 2025-era server asks during a call (`elicitation/create`, a server-to-client request) and waits; a 2026-07-28
// client is stateless and can only be asked through the call's result. The bridge keeps the server's call in flight,
// answers the client with `input_required` (one input request per server request), and on the retry (the bridge's
// requestState names the suspension) sends the client's answer to the server and waits again: for the result, or the
// server's next request. A client that does not come back within STATE_TTL_MS gets the server a `cancel`.
import type { CallToolResult } from '@modelcontextprotocol/server';
import { TyError } from '../../errors.js';
import type { RelayedInput } from './relay.js';
import { STATE_TTL_MS } from './required.js';

interface Ask {
  key: string;
  method: string;
  params: Record<string, unknown>;
  answer: (v: unknown) => void;
  fail: (e: unknown) => void;
}

/** One suspended call: the server's call in flight and its pending requests for input. */
export class Suspension {
  private readonly asks: Ask[] = [];
  private waiting: ((a: Ask) => void) | undefined;
  private pending: Ask | undefined;
  private seq = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Aborts the server's call when the suspension is given up (client gone, bridge closed). */
  readonly controller = new AbortController();
  private done = false;
  private call: Promise<CallToolResult> | undefined;

  constructor(
    readonly id: string,
    private readonly onEnd: () => void,
    private readonly ttlMs = STATE_TTL_MS,
  ) {}

  /** The server's request for input (PendingCall.input): answered when the client's retry brings the answer. */
  ask(method: string, params: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
    return new Promise((answer, fail) => {
      const a: Ask = {
        key: `${method === 'elicitation/create' ? 'elicitation' : 'input'}-${++this.seq}`,
        method,
        params,
        answer,
        fail,
      };
      signal.addEventListener('abort', () => fail(new TyError('E_ABORTED', 'the server cancelled its request')), {
        once: true,
      });
      const w = this.waiting;
      this.waiting = undefined;
      if (w !== undefined) w(a);
      else this.asks.push(a);
    });
  }

  /** Start with the server's call; resolves with its result or its first request for input. */
  start(call: Promise<CallToolResult>): Promise<CallToolResult | RelayedInput> {
    this.call = call;
    call.catch(() => undefined).finally(() => this.end());
    return this.next();
  }

  /** The server's next event: the call's result (the suspension ends) or a request for input (relayed). */
  private async next(): Promise<CallToolResult | RelayedInput> {
    const call = this.call!;
    const queued = this.asks.shift();
    const ask = queued !== undefined ? Promise.resolve(queued) : new Promise<Ask>((r) => (this.waiting = r));
    const first = await Promise.race([call.then((result) => ({ result })), ask.then((a) => ({ a }))]);
    if ('result' in first) {
      this.waiting = undefined;
      return first.result;
    }
    this.pending = first.a;
    this.arm();
    return {
      resultType: 'input_required',
      inputRequests: { [first.a.key]: { method: first.a.method, params: first.a.params } },
    };
  }

  /** The keys of the request waiting for the client's answer. */
  get waitingKey(): { key: string; method: string } | undefined {
    return this.pending === undefined ? undefined : { key: this.pending.key, method: this.pending.method };
  }

  /** The client's answer to the waiting request (checked by the caller); then the server's next event. */
  resume(answer: unknown): Promise<CallToolResult | RelayedInput> {
    const a = this.pending;
    if (a === undefined || this.done) return Promise.reject(new TyError('E_MCP', 'the suspended call has ended'));
    this.pending = undefined;
    if (this.timer !== undefined) clearTimeout(this.timer);
    a.answer(answer);
    return this.next();
  }

  /** No answer within the time a state is valid: the server gets `cancel` and the call's result is discarded. */
  private arm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      const a = this.pending;
      this.pending = undefined;
      a?.answer({ action: 'cancel' });
    }, this.ttlMs);
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** End it: a request still waiting is cancelled toward the server, the call aborted if it still runs. */
  end(): void {
    if (this.done) return;
    this.done = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.pending?.answer({ action: 'cancel' });
    for (const a of this.asks.splice(0)) a.answer({ action: 'cancel' });
    this.onEnd();
  }
}
