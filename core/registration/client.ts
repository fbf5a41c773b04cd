// The typed client of the registration protocol (tysandbox/1) over any transport (stdio, HTTP, postMessage); core, runs
// on the client's side.
import type { ErrorCode } from '../../protocol/errors.js';
import {
  CANCEL_METHOD,
  LOG_METHOD,
  PARENT_CALL_METHOD,
  PROGRESS_METHOD,
  REGISTRATION_PROTOCOL,
  type InitializeResult,
  type LogParams,
  type ParentCallParams,
  type ProgressParams,
  type RegistrationResults,
  type RpcId,
  type ToolRunResult,
} from '../../protocol/registration.js';

/** A message pipe to a server: `send` one JSON-RPC message; the transport calls `onmessage` / `onclose`. */
export interface ClientTransport {
  send(message: Record<string, unknown>): void | Promise<void>;
  onmessage?: (message: unknown) => void;
  onclose?: (reason?: string) => void;
  close(): Promise<void>;
}

/** A refusal or failure from the server: `code` the stable E_ code (error.data.code), `rpcCode` the JSON-RPC code. */
export class ProtocolError extends Error {
  override name = 'ProtocolError';
  constructor(
    readonly code: ErrorCode | string,
    message: string,
    readonly rpcCode: number,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export interface RunOptions {
  timeoutMs?: number;
  disposable?: boolean;
  /**
   * Aborting sends `$/cancel` for this run; the run then fails with E_ABORTED. Already aborted: nothing is sent,
   * E_ABORTED at once.
   */
  signal?: AbortSignal;
  onProgress?: (p: ProgressParams) => void;
  onLog?: (l: LogParams) => void;
}

export interface ClientOptions {
  /** Client name (its principal on the command line is `protocol:<name>`) and version. */
  name: string;
  version?: string;
  /**
   * Runs a tool the embedding page executes itself (`execution.transport: "parent"`): the browser host sends
   * `tool/call`; the value returned is the tool's result (the host checks it against the tool's outputSchema).
   */
  onToolCall?: (call: ParentCallParams) => unknown | Promise<unknown>;
}

type Waiter = { resolve: (v: unknown) => void; reject: (e: ProtocolError) => void; run?: RunOptions };

/**
 * A connected client. Method names follow the protocol: `client.tool.add(...)` sends `tool/add`, and
 * `client.request(method, params)` sends any method. Every method throws ProtocolError on a refusal.
 */
export class ProtocolClient {
  #seq = 0;
  readonly #waiting = new Map<string, Waiter>();
  #closed: string | undefined;
  info: InitializeResult | undefined;

  constructor(
    readonly transport: ClientTransport,
    readonly options: ClientOptions,
  ) {
    transport.onmessage = (m) => this.#onMessage(m);
    transport.onclose = (reason) => this.#onClose(reason ?? 'the connection closed');
  }

  /** Send `initialize` (done by the connect functions). */
  async initialize(): Promise<InitializeResult> {
    this.info = await this.request('initialize', {
      protocolVersion: REGISTRATION_PROTOCOL,
      client: { name: this.options.name, version: this.options.version ?? '0' },
    });
    return this.info;
  }

  /**
   * `initialize` for a peer that may not listen yet (an iframe still loading): sent again every `everyMs`
   * until the first answer, at most `timeoutMs`. The first success wins; the later attempts' "already
   * initialized" errors are ignored. Rejects with the first error when no attempt succeeds.
   */
  async initializeWhenReady(everyMs = 250, timeoutMs = 10_000): Promise<InitializeResult> {
    const attempts: Promise<InitializeResult>[] = [];
    let answered = false;
    const started = Date.now();
    const one = (): void => {
      const p = this.request('initialize', {
        protocolVersion: REGISTRATION_PROTOCOL,
        client: { name: this.options.name, version: this.options.version ?? '0' },
      });
      attempts.push(p);
      p.then(
        () => (answered = true),
        () => (answered = true),
      );
    };
    one();
    await new Promise<void>((resolve) => {
      const tick = (): void => {
        if (answered || Date.now() - started > timeoutMs) return resolve();
        one();
        setTimeout(tick, everyMs);
      };
      setTimeout(tick, everyMs);
    });
    if (!answered)
      throw new ProtocolError(
        'E_PROTOCOL',
        `no answer to initialize within ${timeoutMs} ms (is the origin allowed?)`,
        0,
      );
    try {
      this.info = await Promise.any(
        attempts.map((p) =>
          p.then(
            (v) => v,
            (e: unknown) => Promise.reject(e),
          ),
        ),
      );
    } catch (e) {
      const errs = (e as AggregateError).errors ?? [e];
      throw errs.find((x: unknown) => x instanceof ProtocolError && !/already initialized/.test(x.message)) ?? errs[0];
    }
    return this.info;
  }

  /** The protocol's methods by name. */
  readonly tool = {
    add: (manifest: unknown, expectRevision?: string) =>
      this.request('tool/add', expectRevision === undefined ? { manifest } : { manifest, expectRevision }),
    list: () => this.request('tool/list', {}),
    show: (ref: string) => this.request('tool/show', { ref }),
    activate: (name: string, revision: string) => this.request('tool/activate', { name, revision }),
    remove: (name: string) => this.request('tool/remove', { name }),
    run: (ref: string, args: unknown = {}, o: RunOptions = {}): Promise<ToolRunResult> => {
      const params: Record<string, unknown> = { ref, arguments: args };
      if (o.timeoutMs !== undefined) params.timeoutMs = o.timeoutMs;
      if (o.disposable !== undefined) params.disposable = o.disposable;
      return this.request('tool/run', params, o);
    },
  };

  /** Send one request and wait for its response. */
  request<M extends keyof RegistrationResults>(
    method: M,
    params: Record<string, unknown>,
    run?: RunOptions,
  ): Promise<RegistrationResults[M]>;
  request(method: string, params: Record<string, unknown>, run?: RunOptions): Promise<unknown>;
  request(method: string, params: Record<string, unknown>, run?: RunOptions): Promise<unknown> {
    if (this.#closed !== undefined) return Promise.reject(new ProtocolError('E_PROTOCOL', this.#closed, 0));
    // an already aborted signal: nothing is sent (as fetch does), the same error a cancelled run gets
    if (run?.signal?.aborted)
      return Promise.reject(
        new ProtocolError('E_ABORTED', 'the call was cancelled before it was sent', -32000 /* SERVER_ERROR */, {
          code: 'E_ABORTED',
        }),
      );
    const id = ++this.#seq;
    const key = JSON.stringify(id);
    return new Promise((resolve, reject) => {
      const w: Waiter = { resolve, reject };
      if (run) w.run = run;
      this.#waiting.set(key, w);
      const onAbort = (): void => void this.#send({ jsonrpc: '2.0', method: CANCEL_METHOD, params: { id } });
      if (run?.signal) {
        run.signal.addEventListener('abort', onAbort, { once: true });
        const off = (): void => run.signal!.removeEventListener('abort', onAbort);
        w.resolve = (v) => (off(), resolve(v));
        w.reject = (e) => (off(), reject(e));
      }
      this.#send({ jsonrpc: '2.0', id, method, params }).catch((e: unknown) => {
        this.#waiting.delete(key);
        w.reject(new ProtocolError('E_PROTOCOL', `could not send: ${e instanceof Error ? e.message : String(e)}`, 0));
      });
    });
  }

  /** Close the connection; waiting requests fail with E_PROTOCOL. */
  async close(): Promise<void> {
    this.#onClose('the client closed the connection');
    await this.transport.close();
  }

  async #send(m: Record<string, unknown>): Promise<void> {
    await this.transport.send(m);
  }

  #onClose(reason: string): void {
    if (this.#closed !== undefined) return;
    this.#closed = reason;
    for (const w of this.#waiting.values()) w.reject(new ProtocolError('E_PROTOCOL', reason, 0));
    this.#waiting.clear();
  }

  #onMessage(raw: unknown): void {
    let m = raw;
    if (typeof raw === 'string') {
      try {
        m = JSON.parse(raw);
      } catch {
        return;
      }
    }
    if (typeof m !== 'object' || m === null || Array.isArray(m)) return;
    const msg = m as Record<string, unknown>;
    if (typeof msg.method === 'string') {
      const params = (msg.params ?? {}) as Record<string, unknown>;
      if (msg.id === undefined) {
        const w = this.#waiting.get(JSON.stringify(params.id));
        if (msg.method === PROGRESS_METHOD) w?.run?.onProgress?.(params as ProgressParams);
        else if (msg.method === LOG_METHOD) w?.run?.onLog?.(params as LogParams);
        return;
      }
      void this.#answer(msg.id as RpcId, msg.method, params);
      return;
    }
    const key = JSON.stringify(msg.id);
    const w = this.#waiting.get(key);
    if (!w) return;
    this.#waiting.delete(key);
    if (msg.error !== undefined) {
      const e = (msg.error ?? {}) as { code?: unknown; message?: unknown; data?: Record<string, unknown> };
      const code = typeof e.data?.code === 'string' ? e.data.code : 'E_PROTOCOL';
      w.reject(
        new ProtocolError(
          code,
          typeof e.message === 'string' ? e.message : 'error',
          typeof e.code === 'number' ? e.code : 0,
          e.data,
        ),
      );
    } else w.resolve(msg.result);
  }

  /** Answer a server-to-client request: only `tool/call`, and only with an onToolCall handler. */
  async #answer(id: RpcId, method: string, params: Record<string, unknown>): Promise<void> {
    if (method !== PARENT_CALL_METHOD || !this.options.onToolCall) {
      await this.#send({
        jsonrpc: '2.0',
        id,
        error: {
          code: -32601,
          message: `this client does not answer ${method.slice(0, 80)}`,
          data: { code: 'E_PROTOCOL' },
        },
      }).catch(() => undefined);
      return;
    }
    try {
      const result = await this.options.onToolCall(params as unknown as ParentCallParams);
      await this.#send({ jsonrpc: '2.0', id, result: { result: result === undefined ? null : result } });
    } catch (e) {
      await this.#send({
        jsonrpc: '2.0',
        id,
        error: { code: -32000, message: e instanceof Error ? e.message : String(e), data: { code: 'E_TOOL_FAILED' } },
      }).catch(() => undefined);
    }
  }
}

/**
 * A transport over HTTP: each message is one POST of `application/json` with `Authorization: Bearer TOKEN`;
 * the answer is NDJSON (a run's notifications, then its response); the session id from `initialize`'s
 * `tysandbox-session` header is sent back on every later request. `fetchImpl` is the host's fetch.
 */
export function httpTransport(url: string, token: string, fetchImpl: typeof fetch): ClientTransport {
  let session: string | undefined;
  const t: ClientTransport = {
    async send(message) {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'application/x-ndjson',
        authorization: `Bearer ${token}`,
      };
      if (session !== undefined) headers['tysandbox-session'] = session;
      const res = await fetchImpl(url, { method: 'POST', headers, body: JSON.stringify(message) });
      const sid = res.headers.get('tysandbox-session');
      if (sid) session = sid;
      if (res.status === 202) return;
      if (res.status >= 400 || !res.body) {
        const text = await res.text().catch(() => '');
        let body: { id?: unknown; error?: { message?: unknown }; jsonrpc?: unknown } | undefined;
        try {
          body = JSON.parse(text) as typeof body;
        } catch {
          body = undefined;
        }
        if (body?.jsonrpc === '2.0' && body.id !== null && body.id !== undefined) return t.onmessage?.(body);
        throw new Error(
          `HTTP ${res.status}${typeof body?.error?.message === 'string' ? `: ${body.error.message}` : ''}`,
        );
      }
      // a request's answer comes last on its stream; a stream that ends (or breaks: the server stopped, a proxy cut
      // it) without one fails the request instead of leaving it waiting forever
      const id = (message as { id?: unknown }).id;
      let answered = id === undefined;
      const deliver = (line: string): void => {
        if (!answered) {
          try {
            const m = JSON.parse(line) as { id?: unknown; result?: unknown; error?: unknown };
            if (m.id === id && ('result' in m || 'error' in m)) answered = true;
          } catch {
            /* the client rejects what does not parse */
          }
        }
        t.onmessage?.(line);
      };
      void (async () => {
        const reader = res.body!.getReader();
        const dec = new TextDecoder();
        let buf = '';
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (value) buf += dec.decode(value, { stream: true });
            let nl: number;
            while ((nl = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, nl).trim();
              buf = buf.slice(nl + 1);
              if (line) deliver(line);
            }
            if (done) break;
          }
          if (buf.trim()) deliver(buf.trim());
        } catch {
          /* the stream broke: answered below */
        }
        if (!answered)
          t.onmessage?.({
            jsonrpc: '2.0',
            id,
            error: {
              code: -32000,
              message:
                'the connection ended before the answer (the server stopped or the link was cut); the call may have run',
              data: { code: 'E_PROTOCOL', reason: 'connection-lost' },
            },
          });
      })().catch(() => undefined);
    },
    async close() {
      if (session === undefined) return;
      await fetchImpl(url, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${token}`, 'tysandbox-session': session },
      }).catch(() => undefined);
      session = undefined;
    },
  };
  return t;
}
