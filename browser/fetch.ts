// FetchTransport on the page's own fetch: no credentials, no redirects, timeout, streamed size cap; browser host,
// trusted side.
import { TyError } from '../core/errors.js';
import type { FetchLimits, FetchTransport, TransportRequest } from '../core/capabilities/fetch/mediated.js';
import type { FetchResponse } from '../protocol/wire.js';

function b64ToBytes(b64: string): Uint8Array<ArrayBuffer> {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
function bytesToB64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/**
 * The browser's network stack for core's mediated fetch (core/capabilities/fetch/mediated.ts). Runs in the host page,
 * never in a sandbox: `credentials: 'omit'` (no cookies or HTTP auth of the app), `redirect: 'manual'`
 * (a redirect is refused, E_FETCH_FAILED: browsers hide its target), `cache: 'no-store'`, no referrer.
 * The body is read as a stream and the read is cancelled past `limits.maxBytes` (E_FETCH_TOO_LARGE).
 * Limits of the platform: the request is subject to CORS (the target must allow the app's origin), only
 * CORS-exposed response headers are visible, and the connected address cannot be checked (only the parsed
 * host, by core).
 * @throws TyError E_FETCH_FAILED, E_FETCH_TOO_LARGE, E_TIMEOUT, E_ABORTED.
 */
export class BrowserFetchTransport implements FetchTransport {
  constructor(private readonly fetchFn: typeof fetch = globalThis.fetch.bind(globalThis)) {}

  async request(req: TransportRequest, limits: FetchLimits, signal: AbortSignal): Promise<FetchResponse> {
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), limits.timeoutMs);
    const both = AbortSignal.any([signal, timeout.signal]);
    const fail = (e: unknown): never => {
      if (signal.aborted) throw new TyError('E_ABORTED', 'the request was cancelled');
      if (timeout.signal.aborted) throw new TyError('E_TIMEOUT', `the request took longer than ${limits.timeoutMs} ms`);
      if (e instanceof TyError) throw e;
      throw new TyError('E_FETCH_FAILED', 'network error, or the server does not allow this app (CORS)');
    };
    try {
      let res: Response;
      try {
        res = await this.fetchFn(req.url, {
          method: req.method,
          headers: req.headers,
          ...(req.body !== undefined ? { body: b64ToBytes(req.body) } : {}),
          credentials: 'omit',
          redirect: 'manual',
          cache: 'no-store',
          referrerPolicy: 'no-referrer',
          mode: 'cors',
          signal: both,
        });
      } catch (e) {
        return fail(e);
      }
      if (res.type === 'opaqueredirect' || (res.status >= 300 && res.status < 400)) {
        await res.body?.cancel().catch(() => {});
        throw new TyError('E_FETCH_FAILED', 'the server answered with a redirect; redirects are not followed');
      }
      const chunks: Uint8Array[] = [];
      let total = 0;
      if (res.body) {
        const reader = res.body.getReader();
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            total += value.length;
            if (total > limits.maxBytes) {
              await reader.cancel().catch(() => {});
              throw new TyError('E_FETCH_TOO_LARGE', `the response is larger than ${limits.maxBytes} bytes`);
            }
            chunks.push(value);
          }
        } catch (e) {
          return fail(e);
        }
      }
      const body = new Uint8Array(total);
      let off = 0;
      for (const c of chunks) {
        body.set(c, off);
        off += c.length;
      }
      return {
        status: res.status,
        statusText: res.statusText,
        headers: [...res.headers],
        body: bytesToB64(body),
        url: req.url,
      };
    } finally {
      clearTimeout(timer);
    }
  }
}
