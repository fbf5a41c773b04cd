// Connecting the typed client of the registration protocol to a server over HTTP or to an app in
// a frame over postMessage; core, runs on the client's side (Node, Deno and browsers: no Node built-in, no zod).
import { ProtocolClient, ProtocolError, httpTransport, type ClientOptions, type ClientTransport } from './client.js';

const defaults = (o: Partial<ClientOptions> | undefined): ClientOptions => ({ name: 'client', ...o });

/** A client over `t`, initialized (`patient`: repeated until the peer answers); closed again when that fails. */
export async function connected(
  t: ClientTransport,
  o: Partial<ClientOptions> | undefined,
  patient = false,
  readyTimeoutMs = 10_000,
): Promise<ProtocolClient> {
  const c = new ProtocolClient(t, defaults(o));
  try {
    if (patient) await c.initializeWhenReady(250, readyTimeoutMs);
    else await c.initialize();
  } catch (e) {
    await c.close().catch(() => undefined);
    throw e;
  }
  return c;
}

/** Connect to a protocol server over HTTP at `url` (http://127.0.0.1:PORT/tysandbox) with its bearer token. */
export async function connectHttp(
  url: string,
  token: string,
  opts: Partial<ClientOptions> & { fetch?: typeof fetch } = {},
): Promise<ProtocolClient> {
  const f = opts.fetch ?? globalThis.fetch.bind(globalThis);
  return connected(httpTransport(url, token, f), opts);
}

/** What connectWindow listens on: the window the client runs in (default globalThis). */
export interface MessageSource {
  addEventListener(type: 'message', fn: (ev: { data: unknown; origin: string; source: unknown }) => void): void;
  removeEventListener(type: 'message', fn: (ev: { data: unknown; origin: string; source: unknown }) => void): void;
}

/**
 * Speak the protocol to the app in `targetWindow` (e.g. an iframe's contentWindow) whose origin is exactly
 * `origin`: messages are posted to that origin only, and only messages from that window and origin are read.
 * Browser (or any host with window messaging). initialize is repeated every 250 ms until the app answers (it may
 * still be loading, or asking the person in it whether this page may use it), for at most `readyTimeoutMs` (default
 * 10 000 ms); an app that does not allow this page's origin never answers.
 * @throws ProtocolError E_USAGE (no window messaging, an inexact origin), E_PROTOCOL (no answer in time)
 */
export async function connectWindow(
  targetWindow: { postMessage(message: unknown, targetOrigin: string): void },
  origin: string,
  opts: Partial<ClientOptions> & { listenOn?: MessageSource; readyTimeoutMs?: number } = {},
): Promise<ProtocolClient> {
  const on = opts.listenOn ?? (globalThis as unknown as MessageSource);
  if (typeof on.addEventListener !== 'function')
    throw new ProtocolError('E_USAGE', 'connectWindow needs window messaging (a browser)', 0);
  if (origin === '*' || !/^https?:\/\/[^/]+$/.test(origin))
    throw new ProtocolError(
      'E_USAGE',
      'connectWindow needs the exact origin of the app (scheme://host[:port]), never "*"',
      0,
    );
  const listener = (ev: { data: unknown; origin: string; source: unknown }): void => {
    if (ev.source !== targetWindow || ev.origin !== origin) return;
    t.onmessage?.(ev.data);
  };
  const t: ClientTransport = {
    send(m) {
      targetWindow.postMessage(m, origin);
    },
    async close() {
      on.removeEventListener('message', listener);
    },
  };
  on.addEventListener('message', listener);
  return connected(t, opts, true, opts.readyTimeoutMs ?? 10_000);
}
