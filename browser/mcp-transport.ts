// The browser's Streamable HTTP client transport to remote MCP servers: the SDK's fetch-based transport with the server-message rules, the 8 MiB cap and CORS diagnosis; browser host, trusted side.
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { TyError } from '../core/errors.js';
import { MAX_MESSAGE_BYTES, classify, serverMessageRule } from '../core/mcp/messages.js';

/** What the transport reports about messages the rules dropped or answered (method only, never content). */
export type FilteredListener = (what: { action: 'drop' | 'answer'; method?: string | undefined }) => void;

/**
 * Applies core's server-message rules (core/mcp/messages.ts serverMessageRule) to a transport: a server's
 * `ping` is answered `{}`, every other server request (sampling, elicitation, roots/list...) is answered with an
 * error and never reaches anyone, only MCP's own notifications pass.
 */
export class RuledTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;
  constructor(private readonly inner: Transport, private readonly onFiltered?: FilteredListener) {
    inner.onclose = () => this.onclose?.();
    inner.onerror = (e) => this.onerror?.(e);
    inner.onmessage = (msg) => {
      const m = classify(msg);
      const rule = serverMessageRule(m);
      const method = m.kind === 'request' || m.kind === 'notification' ? m.method : undefined;
      if (rule.action === 'pass' && m.kind !== 'invalid') return this.onmessage?.(msg);
      this.onFiltered?.({ action: rule.action === 'answer' ? 'answer' : 'drop', method });
      if (rule.action === 'answer') void inner.send(rule.reply as JSONRPCMessage).catch(() => undefined);
    };
  }
  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }
  start(): Promise<void> {
    return this.inner.start();
  }
  send(message: JSONRPCMessage): Promise<void> {
    return this.inner.send(message);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
  setProtocolVersion(v: string): void {
    this.inner.setProtocolVersion?.(v);
  }
}

/** The page's origin, for messages (`null` for an opaque one). */
function pageOrigin(): string {
  return (globalThis as { location?: { origin?: string } }).location?.origin ?? 'this page';
}

/**
 * Why a cross-origin fetch failed with a TypeError. A page is never told why (the Fetch standard hides it on
 * purpose); what it can learn: a `no-cors` GET to the same URL resolves (an opaque response) when something
 * answers HTTP there, and rejects when nothing does (refused connection, unknown host, TLS failure). So:
 * probe resolves → the server is up and its CORS did not allow this origin (E_MCP_CORS); probe rejects → the
 * server cannot be reached (E_MCP_UNREACHABLE). Limits: a page cannot tell which CORS check failed (the preflight,
 * a missing Access-Control-Allow-Origin, a header not in Access-Control-Allow-Headers), nor a CORS refusal from a
 * mixed-content, CSP `connect-src` or Private Network Access block (those are reported in the console only).
 */
export async function diagnoseFetchFailure(server: string, url: string, base: typeof fetch): Promise<TyError> {
  const origin = new URL(url).origin;
  let up = false;
  try {
    // no-cors allows only redirect 'follow'; an opaque answer of any status (even a redirect's target) counts as up
    await base(url, { method: 'GET', mode: 'no-cors', credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer' });
    up = true;
  } catch {
    up = false;
  }
  if (up) {
    return new TyError(
      'E_MCP_CORS',
      `MCP server "${server}" at ${origin} answers, but its CORS does not allow this page's origin ${pageOrigin()}: the server must answer with Access-Control-Allow-Origin: ${pageOrigin()} (or *), allow the methods POST, GET, DELETE and the request headers content-type, accept, mcp-session-id, mcp-protocol-version, last-event-id and any header configured for it, and expose mcp-session-id and mcp-protocol-version`,
      { server, origin, pageOrigin: pageOrigin() },
    );
  }
  return new TyError('E_MCP_UNREACHABLE', `MCP server "${server}" at ${origin} cannot be reached from this page (nothing answered: the server is down, the address is wrong, or the browser blocked it; a CORS refusal would have been reported as E_MCP_CORS)`, { server, origin });
}

/**
 * The fetch the transport uses: no cookies or other ambient credentials, no referrer, redirects refused; a
 * network TypeError is diagnosed (diagnoseFetchFailure); response bodies fail once one message passes `max`
 * bytes (a JSON body as a whole, an SSE stream per event), so memory stays bounded and nothing partial is
 * delivered (E_MCP). `headers` (the server's configured headers, secret values) are added to every request.
 */
export function mcpFetch(server: string, headers: Record<string, string>, opts: { max?: number; base?: typeof fetch; onOversize?: (e: TyError) => void } = {}): typeof fetch {
  const max = opts.max ?? MAX_MESSAGE_BYTES;
  const base = opts.base ?? globalThis.fetch.bind(globalThis);
  return (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const h = new Headers(init?.headers);
    for (const [k, v] of Object.entries(headers)) h.set(k, v);
    let res: Response;
    try {
      res = await base(input, { ...init, headers: h, credentials: 'omit', referrerPolicy: 'no-referrer', redirect: 'error', cache: 'no-store', mode: 'cors' });
    } catch (e) {
      if (init?.signal?.aborted) throw e;
      if (e instanceof TypeError) throw await diagnoseFetchFailure(server, url, base);
      throw e;
    }
    if (!res.body) return res;
    const sse = (res.headers.get('content-type') ?? '').includes('text/event-stream');
    let count = 0;
    let lastNl = false;
    const cap = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, ctl) {
        let over = false;
        if (!sse) over = (count += chunk.length) > max;
        else {
          for (let i = 0; i < chunk.length && !over; i++) {
            const b = chunk[i];
            if (b === 10) {
              if (lastNl) count = 0;
              lastNl = true;
            } else if (b !== 13) {
              lastNl = false;
              over = ++count > max;
            }
          }
        }
        if (over) {
          const e = new TyError('E_MCP', `MCP server "${server}" sent a message over ${Math.round(max / 1048576)} MiB (the bridge's message limit); refused, nothing of it was delivered`);
          // the SDK reports a broken SSE stream only as a wrapped error: the session ends the waiting request itself
          opts.onOversize?.(e);
          ctl.error(e);
          return;
        }
        ctl.enqueue(chunk);
      },
    });
    return new Response(res.body.pipeThrough(cap), { status: res.status, statusText: res.statusText, headers: res.headers });
  }) as typeof fetch;
}

/** The SDK's Streamable HTTP client transport to `url` over mcpFetch, under the server-message rules. */
export function httpTransport(server: string, url: string, headers: Record<string, string>, opts: { max?: number; base?: typeof fetch; onFiltered?: FilteredListener; onOversize?: (e: TyError) => void } = {}): Transport {
  const inner = new StreamableHTTPClientTransport(new URL(url), { fetch: mcpFetch(server, headers, opts), reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 } });
  return new RuledTransport(inner, opts.onFiltered);
}
