// Transports toward an upstream MCP server usable on every host: the server-message rules over any SDK transport, a
// size-capped fetch, the fetch-based Streamable HTTP connector; core, trusted side.
import {
  StreamableHTTPClientTransport,
  type JSONRPCMessage,
  type Transport,
  type TransportSendOptions,
} from '@modelcontextprotocol/client';
import { TyError } from '../../errors.js';
import { MAX_MESSAGE_BYTES, classify, serverMessageRule } from '../wire/messages.js';
import {
  headersFromEnv,
  type ConnectContext,
  type UpstreamConnector,
  type UpstreamTransport,
} from '../server-definition.js';

/**
 * Applies the server-message rules to any SDK transport (used for streamable HTTP; the process
 * transport applies them itself).
 */
export class RuledTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  constructor(
    private readonly inner: Transport,
    private readonly onFiltered?: ConnectContext['onFiltered'],
    pass?: ReadonlySet<string>,
  ) {
    inner.onclose = () => this.onclose?.();
    inner.onerror = (e) => this.onerror?.(e);
    inner.onmessage = (msg, extra) => {
      const m = classify(msg);
      const rule = serverMessageRule(m, pass);
      const method = m.kind === 'request' || m.kind === 'notification' ? m.method : undefined;
      if (rule.action === 'pass' && m.kind !== 'invalid') return this.onmessage?.(msg, extra);
      this.onFiltered?.({ action: rule.action === 'answer' ? 'answer' : 'drop', method });
      if (rule.action === 'answer') void inner.send(rule.reply as JSONRPCMessage).catch(() => undefined);
    };
  }
  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }
  /** 2026-07-28 over HTTP: one HTTP request per message, so a cancelled request closes its own stream. */
  get hasPerRequestStream(): boolean | undefined {
    return this.inner.hasPerRequestStream;
  }
  start(): Promise<void> {
    return this.inner.start();
  }
  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    return this.inner.send(message, options);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
  setProtocolVersion(v: string): void {
    this.inner.setProtocolVersion?.(v);
  }
  setSupportedProtocolVersions(versions: string[]): void {
    this.inner.setSupportedProtocolVersions?.(versions);
  }
}

/**
 * A fetch whose response bodies fail once one message passes `max` bytes: a JSON body as a whole, an SSE
 * stream per event (bytes between blank lines), so memory stays bounded whatever a remote server sends. The body
 * fails with TyError E_MCP_OVERSIZE.
 */
export function cappedFetch(max: number = MAX_MESSAGE_BYTES, base: typeof fetch = fetch): typeof fetch {
  return (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const res = await base(input, init);
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
          ctl.error(
            new TyError('E_MCP_OVERSIZE', `the server sent a message over ${Math.round(max / 1048576)} MiB; refused`),
          );
          return;
        }
        ctl.enqueue(chunk);
      },
    });
    return new Response(res.body.pipeThrough(cap), {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
  }) as typeof fetch;
}

export interface StreamableHttpConnectorOptions {
  /** The fetch to use (default globalThis.fetch); wrapped by cappedFetch. */
  fetch?: typeof fetch;
  /** The fetch for one definition (e.g. one that names the server in its errors); wins over `fetch`. */
  fetchFor?: (def: { name: string }) => typeof fetch;
  /** Headers sent with every request besides the definition's own (`TYMCP_HEADER_<n>`). */
  headers?: (def: { name: string }) => Record<string, string> | Promise<Record<string, string>>;
  /** Largest message taken from the server, bytes (default MAX_MESSAGE_BYTES, 8 MiB). */
  maxBytes?: number;
  /**
   * How the era is chosen (UpstreamTransport.negotiation): `auto` (default) or `legacy` (the 2025 handshake at once).
   */
  negotiation?: 'auto' | 'legacy';
}

/**
 * `capped` with every response body watched: when the cap fails a body (a JSON body or one SSE event over it),
 * `onOversize` runs with the error. The SDK reports a broken SSE stream only as a wrapped transport error and
 * keeps the request waiting, so the connector ends the session itself and names the reason (`endReason`).
 */
function watchedFetch(capped: typeof fetch, onOversize: (e: TyError) => void): typeof fetch {
  return (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const res = await capped(input, init);
    if (!res.body) return res;
    const reader = res.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(ctl) {
        try {
          const { done, value } = await reader.read();
          if (done) ctl.close();
          else ctl.enqueue(value);
        } catch (e) {
          if (e instanceof TyError && e.code === 'E_MCP_OVERSIZE') onOversize(e);
          ctl.error(e);
        }
      },
      cancel: (r) => reader.cancel(r),
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  }) as typeof fetch;
}

/**
 * The connector for `url` definitions on any host with fetch (Node 18+, browsers, workers): the SDK's
 * StreamableHTTPClientTransport (MCP "Streamable HTTP"), redirects refused, every message capped while it
 * streams, the server-message rules applied before the SDK Client sees anything. A message over the cap ends
 * the session at once with E_MCP_OVERSIZE as its `endReason` (the waiting request fails with it, never at its timeout).
 * A `command` definition is refused: starting processes belongs to a host that can (the command line's connector).
 * @throws TyError E_MCP for a definition with no url.
 */
export function streamableHttpConnector(opts: StreamableHttpConnectorOptions = {}): UpstreamConnector {
  return async (def, ctx) => {
    if (def.url === undefined)
      throw new TyError(
        'E_MCP',
        `server "${def.name}" is started by a command, which this host cannot do; only url servers are reached here`,
      );
    const headers = { ...headersFromEnv(def.env), ...((await opts.headers?.(def)) ?? {}) };
    const max = opts.maxBytes ?? MAX_MESSAGE_BYTES;
    let endReason: TyError | undefined;
    let ruled: RuledTransport | undefined;
    const base =
      opts.fetchFor?.(def) ??
      opts.fetch ??
      ((i: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => globalThis.fetch(i, init));
    const fetchFn = watchedFetch(cappedFetch(max, base), () => {
      if (endReason !== undefined) return;
      endReason = new TyError(
        'E_MCP_OVERSIZE',
        `server "${def.name}" sent a message over ${Math.round(max / 1048576)} MiB (the message limit); refused, nothing of it was delivered, and its session was ended`,
      );
      void ruled?.close().catch(() => undefined);
    });
    const inner = new StreamableHTTPClientTransport(new URL(def.url), {
      requestInit: { headers, redirect: 'error' },
      fetch: fetchFn,
    });
    ruled = new RuledTransport(inner, ctx.onFiltered, ctx.passRequests);
    Object.defineProperty(ruled, 'endReason', { get: () => endReason });
    return Object.defineProperty(ruled, 'negotiation', {
      value: ctx.negotiation ?? opts.negotiation ?? 'auto',
    }) as UpstreamTransport;
  };
}
