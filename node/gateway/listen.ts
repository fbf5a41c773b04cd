// The HTTP(S) front of a gateway instance: where it listens (loopback, or beyond with TLS or behind a proxy), health
// and metrics endpoints, authentication and admission before any route runs; Node host, trusted side.
import { readFile } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { isIP } from 'node:net';
import { TyError } from '../../core/errors.js';
import type { Admission } from './admission.js';
import { PROTECTED_RESOURCE_PATH, type Authenticator } from './auth.js';
import { NO_LOG, type JsonLog } from './log.js';
import type { GatewayMetrics } from './metrics.js';
import type { Tracing } from './tracing.js';

/** `--http [HOST:]PORT`: where to listen. */
export interface ListenAddress {
  host: string;
  port: number;
}

/**
 * Parse `--http PORT`, `--http HOST:PORT` or `--http [IPV6]:PORT` (HOST an IP address or `localhost`; PORT 0 picks a
 * free one). Default host 127.0.0.1. @throws TyError E_USAGE
 */
export function parseListen(value: string): ListenAddress {
  const m = /^(?:(\[[0-9a-fA-F:.]+\]|[0-9.]+|localhost):)?([0-9]{1,5})$/.exec(value.trim());
  const port = m ? Number(m[2]) : Number.NaN;
  if (!m || port > 65535)
    throw new TyError('E_USAGE', '--http takes PORT or HOST:PORT (HOST an IP address), e.g. 8080 or 0.0.0.0:8080');
  let host = m[1] ?? '127.0.0.1';
  if (host.startsWith('[')) host = host.slice(1, -1);
  if (host !== 'localhost' && isIP(host) === 0) throw new TyError('E_USAGE', `--http: "${host}" is not an IP address`);
  return { host, port };
}

/** Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost). */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * Listening beyond loopback needs TLS (`--tls-cert` and `--tls-key`) or an explicit `--behind-proxy` (a TLS-terminating
 * proxy or ingress in front): a bearer token must never cross a network in clear text by accident.
 * @throws TyError E_USAGE
 */
export function checkExposure(host: string, tls: boolean, behindProxy: boolean): void {
  if (isLoopback(host) || tls || behindProxy) return;
  throw new TyError(
    'E_USAGE',
    `listening on ${host} exposes the server beyond this machine: give --tls-cert FILE --tls-key FILE, or --behind-proxy when a TLS-terminating proxy is in front`,
  );
}

export interface GatewayOptions {
  listen: ListenAddress;
  /** PEM certificate chain and key files: serve HTTPS. */
  tls?: { cert: string; key: string };
  /** A proxy is in front: trust its X-Forwarded-For / X-Forwarded-Proto / X-Forwarded-Host. */
  behindProxy?: boolean;
  auth: Authenticator;
  admission: Admission;
  metrics?: GatewayMetrics;
  tracing?: Tracing;
  log?: JsonLog;
  /** One log line per request (default true when `log` is given). */
  logRequests?: boolean;
  /** The readiness check of /readyz. */
  ready?: () => Promise<{ ok: boolean; checks: Record<string, { ok: boolean; reason?: string }> }>;
  /** The application's paths (e.g. `/tysandbox`, `/mcp`): the first is the resource of RFC 9728 metadata. */
  paths: string[];
  /** Handles an authenticated, admitted request to one of `paths`. */
  route: (req: IncomingMessage, res: ServerResponse, ctx: RequestContext) => Promise<void>;
}

/** What the front learned about a request before its route runs. */
export interface RequestContext {
  /** The authenticated principal (`user:NAME`), or undefined for the server's own token. */
  principal: string | undefined;
  via: 'static' | 'token' | 'oidc';
  /** The client's address (X-Forwarded-For's first entry behind a proxy). */
  remote: string;
  /** The base URL clients use (scheme, host and port), for links the route sends back. */
  base: string;
}

export interface Gateway {
  /** The http(s) server requests go through (it does not listen: `listener` hands it each admitted connection). */
  server: Server;
  port: number;
  /** `http(s)://HOST:PORT` as bound. */
  base: string;
  close(): Promise<void>;
}

/** A JSON-RPC error body with the tysandbox code in `data.code`, as both protocols' transports answer. */
function rpcBody(message: string, code: string): string {
  return JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message, data: { code } } });
}
function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) return void res.end();
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/**
 * Start the front: HTTP or HTTPS on `listen` (beyond loopback only with TLS or behindProxy: checkExposure), then per
 * request, in order:
 * 1. a connection beyond the admission limit: its body read, then 429 E_BUSY with Retry-After and Connection: close;
 * 2. `GET /healthz` (alive: 200) and `GET /readyz` (store reachable, sandbox engine usable: 200 or 503),
 *    unauthenticated *    and saying nothing but check names and ok;
 * 3. Host and Origin: on a loopback address not behind a proxy the Host must name it (421: DNS rebinding); an Origin
 *    must be the request's own origin (403);
 * 4. `GET /.well-known/oauth-protected-resource[PATH]`: RFC 9728 metadata when OIDC is configured, else 404;
 * 5. authentication (401 with a Bearer challenge);
 * 6. `GET /metrics` (Prometheus text) for any authenticated client;
 * 7. admission: a POST takes an in-flight place for its principal (429 E_BUSY beyond), released when its response ends;
 * 8. the route, inside a `tysandbox.request` span continuing the caller's W3C traceparent; one JSON log line per
 *    request.
 * @throws TyError E_USAGE (exposure, unreadable TLS files), or the listen error (EADDRINUSE...).
 */
export async function startGateway(o: GatewayOptions): Promise<Gateway> {
  checkExposure(o.listen.host, o.tls !== undefined, o.behindProxy === true);
  const log = o.log ?? NO_LOG;
  const limits = o.admission.limits;
  const retry = { 'retry-after': String(limits.retryAfterSec) };
  let port = o.listen.port;
  const loopback = isLoopback(o.listen.host);
  const scheme = o.tls ? 'https' : 'http';
  const hostText = o.listen.host.includes(':') ? `[${o.listen.host}]` : o.listen.host;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const t0 = performance.now();
    const forwarded = (name: string): string | undefined => {
      const v = req.headers[name];
      return o.behindProxy && typeof v === 'string' ? v.split(',')[0]!.trim() : undefined;
    };
    const remote = forwarded('x-forwarded-for') ?? req.socket.remoteAddress ?? '';
    let principal: string | undefined;
    if (o.logRequests !== false)
      res.once('finish', () =>
        log.log('info', 'request', {
          method: req.method,
          path: (req.url ?? '').split('?')[0]!.slice(0, 200),
          status: res.statusCode,
          ms: Math.round(performance.now() - t0),
          principal,
          remote,
        }),
      );
    if (o.admission.overLimit(req.socket)) {
      // read what the client sent before answering, so closing the connection never resets it
      req.resume();
      await new Promise<void>((r) => {
        req.once('end', r);
        req.once('error', r);
        setTimeout(r, 5000).unref();
      });
      res.shouldKeepAlive = false;
      return send(res, 429, rpcBody(o.admission.message('connections'), 'E_BUSY'), { ...retry, connection: 'close' });
    }
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname;
    if (req.method === 'GET' && path === '/healthz') return send(res, 200, '{"ok":true,"status":"alive"}');
    if (req.method === 'GET' && path === '/readyz') {
      const r = (await o.ready?.().catch(() => undefined)) ?? { ok: false, checks: {} };
      return send(res, r.ok ? 200 : 503, JSON.stringify({ ok: r.ok, checks: r.checks }));
    }
    const host = req.headers.host ?? '';
    // DNS rebinding: a loopback server answers only its own Host (behind a proxy, the proxy names the host)
    if (
      loopback &&
      !o.behindProxy &&
      ![`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `${hostText}:${port}`].includes(host)
    )
      return send(res, 421, '{"error":"wrong Host"}');
    const proto = forwarded('x-forwarded-proto') ?? scheme;
    const publicHost = forwarded('x-forwarded-host') ?? host;
    const base = `${proto}://${publicHost}`;
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== base && !(loopback && origin === `http://localhost:${port}`))
      return send(res, 403, '{"error":"origin not allowed"}');
    const resourcePath = o.paths[0] ?? '/';
    if (path === PROTECTED_RESOURCE_PATH || path === `${PROTECTED_RESOURCE_PATH}${resourcePath}`) {
      const doc = o.auth.metadata(`${base}${resourcePath}`);
      return doc ? send(res, 200, JSON.stringify(doc)) : send(res, 404, '{"error":"not found"}');
    }
    const auth = await o.auth.authenticate(
      req.headers.authorization,
      `${base}${PROTECTED_RESOURCE_PATH}${resourcePath}`,
    );
    if (!auth.ok) return send(res, 401, JSON.stringify({ error: auth.reason }), auth.headers);
    principal = auth.principal;
    if (req.method === 'GET' && path === '/metrics') {
      if (!o.metrics) return send(res, 404, '{"error":"not found"}');
      const m = await o.metrics.expose();
      res.writeHead(200, { 'content-type': m.contentType });
      return void res.end(m.body);
    }
    if (!o.paths.includes(path)) return send(res, 404, '{"error":"not found"}');
    let release: (() => void) | undefined;
    if (req.method === 'POST') {
      const who = principal ?? `static:${remote}`;
      const admitted = o.admission.enter(who);
      if (!admitted.ok) {
        req.resume();
        return send(res, 429, rpcBody(o.admission.message(admitted.reason), 'E_BUSY'), retry);
      }
      release = admitted.release;
      res.once('close', release);
    }
    const ctx: RequestContext = { principal, via: auth.via, remote, base };
    try {
      if (!o.tracing) return await o.route(req, res, ctx);
      const t = o.tracing;
      const { context } = await import('@opentelemetry/api');
      const traceparent = typeof req.headers.traceparent === 'string' ? req.headers.traceparent : undefined;
      await context.with(t.requestContext(traceparent), () =>
        t.callTracer.span(
          'tysandbox.request',
          {
            'http.request.method': req.method ?? '',
            'url.path': path,
            ...(principal ? { 'tysandbox.principal': principal } : {}),
          },
          async (span) => {
            await o.route(req, res, ctx);
            span.set({ 'http.response.status_code': res.statusCode });
          },
        ),
      );
    } finally {
      if (res.writableEnded) release?.();
    }
  };

  let tlsOpts: { cert: Buffer; key: Buffer } | undefined;
  if (o.tls) {
    try {
      tlsOpts = { cert: await readFile(o.tls.cert), key: await readFile(o.tls.key) };
    } catch (e) {
      throw new TyError(
        'E_USAGE',
        `cannot read the TLS certificate or key (${(e as { code?: string }).code ?? 'error'})`,
      );
    }
  }
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 500, rpcBody('internal error', 'E_PROTOCOL'));
      else res.end();
    });
  };
  const server: Server = tlsOpts ? createHttpsServer(tlsOpts, onRequest) : createHttpServer(onRequest);
  server.keepAliveTimeout = 5000;
  server.headersTimeout = 20_000;
  const front = o.admission.listener(server, tlsOpts !== undefined);
  await new Promise<void>((resolve, reject) => {
    front.once('error', reject);
    front.listen({ host: o.listen.host, port: o.listen.port, backlog: limits.backlog }, () => {
      front.off('error', reject);
      resolve();
    });
  });
  port = (front.address() as { port: number }).port;
  return {
    server,
    port,
    base: `${scheme}://${hostText}:${port}`,
    async close() {
      const closed = new Promise<void>((r) => front.close(() => r()));
      (server as Server & { closeAllConnections?: () => void }).closeAllConnections?.();
      await closed;
      await o.admission.close();
    },
  };
}
