// Node transport for mediated fetch on undici: resolve once, judge and pin the connected address, no ambient
// credentials; Node host, trusted side.
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { Agent, buildConnector, errors as undiciErrors, type Dispatcher } from 'undici';
import type { FetchResponse } from '../protocol/wire.js';
import { TyError } from '../core/errors.js';
import { judgeAddress } from '../core/capabilities/fetch/address.js';
import type { FetchLimits, FetchTransport, TransportRequest } from '../core/capabilities/fetch/mediated.js';

/**
 * Test-only hooks. Reachable only through this constructor's JS API: nothing in settings, the environment
 * or the command line sets them, and tool code never holds a transport. Used by the test suite to reach
 * its local HTTPS server on a loopback address.
 */
export interface UnsafeTestHooks {
  /** Replace DNS for names (not for IP literals). */
  resolve?: (hostname: string) => Promise<string[]>;
  /** Addresses (exact text, e.g. "127.0.0.1") let through the connect-time address check. */
  allowAddresses?: string[];
}

export interface NodeFetchTransportOptions {
  /** Extra trusted CA certificates (PEM), in addition to Node's store. */
  ca?: string | string[];
  /** TCP + TLS connect timeout, ms (default 10 000; the request's own timeout still applies). */
  connectTimeoutMs?: number;
  /** Keep-alive connections per origin (default 8). */
  connections?: number;
  /** TEST ONLY; see UnsafeTestHooks. */
  unsafeTestHooks?: UnsafeTestHooks;
}

type Resolved = { address: string };

function targetError(host: string, message: string): TyError {
  return new TyError('E_FETCH_TARGET', `refused target: ${host} ${message}`);
}

/**
 * The Node FetchTransport. Its own undici Agent (never the global dispatcher, never EnvHttpProxyAgent, so
 * HTTP(S)_PROXY and friends are not read), no cookie jar, no redirect handling (undici's `request` does not
 * follow redirects: a 3xx comes back as it is).
 *
 * Connect path (every new connection): the host name is resolved once (or taken as an IP literal); every
 * resolved address is judged with core/capabilities/fetch/address.ts judgeAddress, and if any is refused the connection
 * is refused (E_FETCH_TARGET); the TLS connection is made to the first address (the certificate is still
 * checked against the name, SNI = the name); the socket's remote address is judged again after connect.
 *
 * Body: streamed; a declared Content-Length over the cap is refused before reading; otherwise the request is
 * aborted (socket destroyed) as soon as the running total passes `limits.maxBytes` (E_FETCH_TOO_LARGE).
 */
export class NodeFetchTransport implements FetchTransport {
  readonly #agent: Agent;
  readonly #hooks: UnsafeTestHooks;
  readonly #allowed: Set<string>;

  constructor(opts: NodeFetchTransportOptions = {}) {
    this.#hooks = opts.unsafeTestHooks ?? {};
    this.#allowed = new Set(this.#hooks.allowAddresses ?? []);
    const base = buildConnector({
      ...(opts.ca !== undefined ? { ca: opts.ca } : {}),
      rejectUnauthorized: true,
      timeout: opts.connectTimeoutMs ?? 10_000,
      allowH2: false,
    });
    const connect: buildConnector.connector = (o, cb) => {
      this.#pick(o.hostname).then(
        (ip) => {
          base({ ...o, hostname: ip.address }, (err, socket) => {
            if (err || !socket) return cb(err ?? new TyError('E_FETCH_FAILED', 'connection failed'), null);
            const remote = socket.remoteAddress;
            const v = remote === undefined ? 'no remote address' : this.#judge(remote);
            if (v !== undefined) {
              socket.destroy();
              return cb(targetError(o.hostname, 'was reached at a non-public address'), null);
            }
            cb(null, socket);
          });
        },
        (e: unknown) => cb(e instanceof Error ? e : new TyError('E_FETCH_FAILED', 'name resolution failed'), null),
      );
    };
    this.#agent = new Agent({ connect, connections: opts.connections ?? 8, allowH2: false, pipelining: 1 });
  }

  /** undefined when allowed; else the reason. */
  #judge(address: string): string | undefined {
    const bare = address.replace(/^\[|\]$/g, '');
    if (this.#allowed.has(bare)) return undefined;
    const v = judgeAddress(bare);
    return v.ok ? undefined : `(${v.message})`;
  }

  async #pick(hostname: string): Promise<Resolved> {
    const host = hostname.replace(/^\[|\]$/g, '');
    let addresses: string[];
    if (isIP(host)) addresses = [host];
    else if (this.#hooks.resolve) addresses = await this.#hooks.resolve(host);
    else {
      try {
        addresses = (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address);
      } catch {
        throw new TyError('E_FETCH_FAILED', `could not resolve ${host}`);
      }
    }
    if (addresses.length === 0) throw new TyError('E_FETCH_FAILED', `could not resolve ${host}`);
    for (const a of addresses) {
      const why = this.#judge(a);
      // The address itself is not echoed: tool code must not learn internal DNS answers from refusals.
      if (why !== undefined) throw targetError(host, isIP(host) ? why : 'resolves to a non-public address');
    }
    return { address: addresses[0] as string };
  }

  /**
   * One request, no redirects, body capped while streaming. Dispatched with a plain undici handler (no
   * Readable stream, no extra AbortController): the handler gathers the chunks and aborts the request
   * (socket destroyed) at the cap, on `signal` and at `limits.timeoutMs`.
   * @throws TyError E_FETCH_TARGET, E_FETCH_TOO_LARGE, E_TIMEOUT, E_ABORTED, E_FETCH_FAILED
   */
  request(req: TransportRequest, limits: FetchLimits, signal: AbortSignal): Promise<FetchResponse> {
    const url = new URL(req.url);
    if (url.protocol !== 'https:')
      return Promise.reject(new TyError('E_FETCH_SCHEME', 'only https: URLs may be fetched'));
    if (signal.aborted)
      return Promise.reject(
        signal.reason instanceof TyError ? signal.reason : new TyError('E_ABORTED', 'the call was cancelled'),
      );
    const flat: string[] = [];
    for (const [k, v] of req.headers) flat.push(k, v);
    return new Promise<FetchResponse>((resolve, reject) => {
      let controller: Dispatcher.DispatchController | undefined;
      /** Set once the request is to end with an error (abort, timeout, cap); undici then reports it back. */
      let reason: TyError | undefined;
      let settled = false;
      let chunks: Buffer[] = [];
      let total = 0;
      let status = 0;
      let statusText = '';
      let headers: [string, string][] = [];
      const settle = (): boolean => {
        if (settled) return false;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onParent);
        return true;
      };
      const abort = (e: TyError): void => {
        if (settled || reason !== undefined) return;
        reason = e;
        // Not yet on a connection: end the wait now; onRequestStart aborts the request when it gets one.
        if (controller === undefined) {
          if (settle()) reject(e);
        } else controller.abort(e);
      };
      const onParent = (): void =>
        abort(signal.reason instanceof TyError ? signal.reason : new TyError('E_ABORTED', 'the call was cancelled'));
      const timer = setTimeout(
        () => abort(new TyError('E_TIMEOUT', `fetch took longer than ${limits.timeoutMs} ms`)),
        limits.timeoutMs,
      );
      signal.addEventListener('abort', onParent, { once: true });
      const handler: Dispatcher.DispatchHandler = {
        onRequestStart(c) {
          controller = c;
          chunks = [];
          total = 0;
          if (reason !== undefined) c.abort(reason);
        },
        onResponseStart(_c, statusCode, h, statusMessage) {
          if (statusCode < 200) return; // 1xx informational: the final answer follows
          const declared = Number(h['content-length']);
          if (Number.isFinite(declared) && declared > limits.maxBytes) {
            abort(
              new TyError(
                'E_FETCH_TOO_LARGE',
                `response declares ${declared} bytes, over the ${limits.maxBytes}-byte cap`,
              ),
            );
            return;
          }
          status = statusCode;
          statusText = statusMessage ?? '';
          headers = [];
          for (const k in h) {
            const v = h[k];
            if (v === undefined) continue;
            if (Array.isArray(v)) for (const x of v) headers.push([k, x]);
            else headers.push([k, v]);
          }
        },
        onResponseData(_c, chunk) {
          if (reason !== undefined) return;
          total += chunk.byteLength;
          if (total > limits.maxBytes) {
            abort(
              new TyError(
                'E_FETCH_TOO_LARGE',
                `response is larger than the ${limits.maxBytes}-byte cap; the connection was closed`,
              ),
            );
            return;
          }
          chunks.push(chunk);
        },
        onResponseEnd() {
          if (reason !== undefined) {
            if (settle()) reject(reason);
            return;
          }
          if (!settle()) return;
          const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, total);
          resolve({ status, statusText, headers, body: bytes.toString('base64'), url: url.href });
        },
        onResponseError(_c, err) {
          if (settle()) reject(reason ?? mapError(err));
        },
      };
      try {
        this.#agent.dispatch(
          {
            origin: url.origin,
            path: `${url.pathname}${url.search}`,
            method: req.method as Dispatcher.HttpMethod,
            headers: flat,
            ...(req.body !== undefined ? { body: Buffer.from(req.body, 'base64') } : {}),
            headersTimeout: limits.timeoutMs,
            bodyTimeout: limits.timeoutMs,
          },
          handler,
        );
      } catch (e) {
        if (settle()) reject(mapError(e));
      }
    });
  }

  /** Close every pooled connection now. */
  async close(): Promise<void> {
    await this.#agent.destroy();
  }
}

function mapError(e: unknown): TyError {
  if (e instanceof TyError) return e;
  if (e instanceof undiciErrors.HeadersTimeoutError || e instanceof undiciErrors.BodyTimeoutError)
    return new TyError('E_TIMEOUT', 'the server did not answer in time');
  if (e instanceof undiciErrors.ConnectTimeoutError)
    return new TyError('E_FETCH_FAILED', 'connecting to the server timed out');
  const code = typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
  const cause = typeof e === 'object' && e !== null ? (e as { cause?: unknown }).cause : undefined;
  if (cause instanceof TyError) return cause;
  if (
    typeof code === 'string' &&
    (code.startsWith('ERR_TLS') || code.includes('CERT') || code === 'DEPTH_ZERO_SELF_SIGNED_CERT')
  ) {
    return new TyError('E_FETCH_FAILED', `TLS verification failed (${code})`);
  }
  return new TyError(
    'E_FETCH_FAILED',
    `the request failed${typeof code === 'string' ? ` (${code.slice(0, 40)})` : ''}`,
  );
}
