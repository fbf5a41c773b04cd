// `tycli mcp serve --http`: the bridge over streamable HTTP on loopback, with a bearer token, Host/Origin checks and
// the client-message rules; Node host, trusted side.
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import {
  WebStandardStreamableHTTPServerTransport,
  createMcpHandler,
  type McpHttpHandler,
  type Server,
} from '@modelcontextprotocol/server';
import { checkParamHeaders, checkStandardHeaders, modernVersion } from '../../core/mcp/wire/http-headers.js';
import { MAX_MESSAGE_BYTES, RPC, clientMessageRule, parseMessage, rpcError } from '../../core/mcp/wire/messages.js';
import { checkRequestParams } from '../../core/mcp/wire/params.js';
import { DEFAULT_SESSION_IDLE_MS, SessionClock } from '../../core/mcp/wire/session-clock.js';
import type { McpBridge } from './bridge.js';
import { checkLoopbackRequest, json, listenLoopback, newBearerToken, readBody } from '../http/guard.js';
import { serveWeb } from './web-http.js';
import type { RefusalCounter } from '../../core/audit/refusals.js';

/** Requests 2026-07-28 removed (MCP 2026-07-28 changelog): answered 404 / -32601 to a stateless request. */
const REMOVED_IN_2026: ReadonlySet<string> = new Set([
  'initialize',
  'ping',
  'logging/setLevel',
  'resources/subscribe',
  'resources/unsubscribe',
]);

export interface HttpServeOptions {
  /** TCP port on 127.0.0.1 (0: any free port). */
  port: number;
  /** The bearer token clients must send; default a fresh 32-byte random hex string. */
  token?: string;
  /** Client sessions open at once for this sandbox (default 8); one more waits for a place. */
  maxSessions?: number;
  /** How long a new session waits for a place before it is answered 429, ms (default 60 000). */
  waitMs?: number;
  /** A client session with no request for this long ends (setting `session_idle`), ms (default 300 000). */
  idleMs?: number;
  onDropped?: (reason: string) => void;
  /**
   * Counts a session refused for want of a place (429, E_BUSY) under `principal`, for the audit in aggregate
   * (core/audit/refusals.ts RefusalTally).
   */
  refusals?: { counter: RefusalCounter; principal: string };
}

export interface HttpServeHandle {
  url: string;
  token: string;
  /** Open client sessions. */
  readonly sessions: number;
  close(): Promise<void>;
}

/**
 * Serve the bridge at `http://127.0.0.1:PORT/mcp`. Every request needs `Authorization: Bearer TOKEN`
 * (401 otherwise), a Host naming this loopback address (421 otherwise: DNS rebinding), and no Origin or a
 * loopback Origin on the same port (403 otherwise). POST bodies are one JSON-RPC message of at most 8 MiB
 * (413 beyond), passed through the same client-message rules as stdio before the SDK transport sees them.
 * Each `initialize` starts a client session with its own server sessions. A session with no request for
 * `idleMs` ends (with its server sessions); past `maxSessions` the least recently used session with no
 * request in flight is ended at once to make room (core/mcp/wire/session-clock.ts). Only when every session
 * has a request in flight does a new one wait for a place; one still waiting after `waitMs` is answered
 * 429 (a client that leaves while waiting holds none).
 * Follows the MCP streamable HTTP transport (spec 2025-06-18+) via the SDK's WebStandardStreamableHTTPServerTransport
 * (node/mcp/web-http.ts carries Node's requests and responses to it); 2026-07-28 requests via its createMcpHandler.
 */
export async function serveHttp(bridge: McpBridge, opts: HttpServeOptions): Promise<HttpServeHandle> {
  const token = opts.token ?? newBearerToken();
  let port = opts.port;
  const route = mcpRoute({ ...opts, bridgeFor: () => bridge, endpoint: () => `http://127.0.0.1:${port}/mcp` });
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/mcp') return json(res, 404, { error: 'not found' });
    const refused = checkLoopbackRequest(req, port, token);
    if (refused) return json(res, refused.status, { error: refused.reason }, refused.headers);
    await route.handle(req, res, {});
  };
  const listening = await listenLoopback(
    opts.port,
    handle,
    rpcError(null, RPC.INTERNAL_ERROR, 'internal error', 'E_MCP'),
  );
  const http: HttpServer = listening.http;
  port = listening.port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    token,
    get sessions() {
      return route.sessions;
    },
    async close() {
      await route.close();
      http.closeAllConnections?.();
      await new Promise((r) => http.close(() => r(undefined)));
    },
  };
}

/** A place for one more session of a principal, or why there is none (node/gateway/admission.ts openSession). */
export type McpSessionPlace = { ok: true; release(): void } | { ok: false; message: string };

export interface McpRouteOptions extends Omit<HttpServeOptions, 'port' | 'token'> {
  /** The bridge requests of a principal go to (undefined: the server's own token): a bridge per principal. */
  bridgeFor(principal: string | undefined): McpBridge;
  /** The URL requests are rebuilt against for the SDK's transports (`http(s)://HOST:PORT/mcp`). */
  endpoint(): string;
}

/** What the route learns from the front: the authenticated principal (`user:NAME`), if any. */
export interface McpRequestContext {
  principal?: string | undefined;
}

export interface McpRoute {
  /**
   * Handle one request to `/mcp` (already authenticated by the caller). `place`, when given, decides a new session's
   * place (a team gateway's admission: sessions per principal) instead of the route's own bound with waiting.
   */
  handle(
    req: IncomingMessage,
    res: ServerResponse,
    ctx: McpRequestContext,
    place?: (principal: string) => McpSessionPlace,
  ): Promise<void>;
  readonly sessions: number;
  /** Tell every client of every bridge that the lists changed (a registration on another instance). */
  listsChanged(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The MCP streamable HTTP route (see serveHttp for the rules every request passes), with a session belonging to who
 * opened it (another principal naming its id gets 404) and each principal's requests on its own bridge (`bridgeFor`).
 */
export function mcpRoute(opts: McpRouteOptions): McpRoute {
  const maxSessions = opts.maxSessions ?? 8;
  const waitMs = opts.waitMs ?? 60_000;
  const waiters = new Set<() => void>();
  const freed = (): void => {
    for (const w of [...waiters]) w();
  };
  type Live = {
    transport: WebStandardStreamableHTTPServerTransport;
    server: Server;
    bridgeSession: string;
    bridge: McpBridge;
    owner: string | null;
  };
  const sessions = new SessionClock<Live>(opts.idleMs ?? DEFAULT_SESSION_IDLE_MS);
  let closing = false;
  let sweep: ReturnType<typeof setTimeout> | undefined;
  /** End a session: its transport closes, which ends its bridge session and frees its place. */
  const endSession = (id: string, why: string): void => {
    const s = sessions.get(id);
    sessions.remove(id);
    opts.onDropped?.(`session ended: ${why}`);
    void s?.transport.close().catch(() => undefined);
    freed();
  };
  /** One timer for every session's idle expiry, armed for the earliest one. */
  const armSweep = (): void => {
    if (sweep !== undefined) clearTimeout(sweep);
    sweep = undefined;
    const ms = sessions.nextCheckMs();
    if (ms === undefined || closing) return;
    sweep = setTimeout(
      () => {
        sweep = undefined;
        for (const id of sessions.expired()) endSession(id, 'idle');
        armSweep();
      },
      Math.max(10, ms),
    );
    sweep.unref();
  };
  /** Make room for one more session: the least recently used one with nothing in flight ends. */
  const makeRoom = (): boolean => {
    const id = sessions.evictable();
    if (id === undefined) return false;
    endSession(id, 'least recently used, to make room');
    return true;
  };
  /** Wait for a free place; false when the wait ran out or the client went away. */
  const waitPlace = (res: ServerResponse): Promise<boolean> =>
    new Promise((resolve) => {
      const finish = (ok: boolean): void => {
        clearTimeout(timer);
        waiters.delete(check);
        res.off('close', onClose);
        resolve(ok);
      };
      const check = (): void => {
        if (sessions.size + starting < maxSessions || (sessions.size > 0 && makeRoom())) finish(true);
      };
      const onClose = (): void => finish(false);
      const timer = setTimeout(() => finish(false), waitMs);
      waiters.add(check);
      // the response closing before it was written means the client went away (a request's own 'close' only says its
      // body was read)
      res.once('close', onClose);
    });
  let starting = 0;

  // 2026-07-28 is stateless: no session, every request on its own. Such requests share one bridge session per bridge
  // (its upstream sessions pooled and bounded like any other) and are served by the SDK's per-request entry.
  const moderns = new Map<McpBridge, { handler: McpHttpHandler; session: string }>();
  const modernOf = (bridge: McpBridge): { handler: McpHttpHandler; session: string } => {
    let modern = moderns.get(bridge);
    if (modern === undefined) {
      const session = bridge.newSessionId();
      modern = {
        session,
        handler: createMcpHandler(() => bridge.createServer(session), { legacy: 'reject', onerror: () => undefined }),
      };
      moderns.set(bridge, modern);
      // upstream list changes reach stateless clients on their subscriptions/listen streams
      bridge.setListenNotifier(session, modern.handler.notify);
    }
    return modern;
  };
  // a tools/call's Mcp-Param-* headers against its arguments, for the tool's x-mcp-header declarations (SEP-2243)
  const paramMismatch = async (
    bridge: McpBridge,
    m: Record<string, unknown>,
    header: (name: string) => string | undefined,
  ): Promise<ReturnType<typeof checkParamHeaders>> => {
    const p = m.params as { name?: unknown; arguments?: unknown } | undefined;
    if (m.method !== 'tools/call' || typeof p?.name !== 'string') return undefined;
    const declared = await bridge.paramHeadersOf(modernOf(bridge).session, p.name);
    return declared.length === 0
      ? undefined
      : checkParamHeaders(
          declared,
          p.arguments,
          header,
          typeof m.id === 'string' || typeof m.id === 'number' ? m.id : null,
        );
  };
  const serveModern = async (
    bridge: McpBridge,
    req: IncomingMessage,
    res: ServerResponse,
    message: Record<string, unknown>,
  ): Promise<void> => {
    const entry = modernOf(bridge);
    // the client closing its request before the answer is its cancellation (MCP 2026-07-28): serveWeb's signal
    await serveWeb(
      req,
      res,
      endpoint(),
      (request) => entry.handler.fetch(request, { parsedBody: message }),
      JSON.stringify(message),
    );
  };
  /** One request of a 2025-era session through its SDK transport (`parsedBody`: the POST's message, checked). */
  const viaTransport = (
    transport: WebStandardStreamableHTTPServerTransport,
    req: IncomingMessage,
    res: ServerResponse,
    parsedBody?: unknown,
  ): Promise<void> =>
    serveWeb(req, res, endpoint(), (request) =>
      transport.handleRequest(request, parsedBody === undefined ? undefined : { parsedBody }),
    );
  const endpoint = opts.endpoint;

  const handle = async (
    req: IncomingMessage,
    res: ServerResponse,
    ctx: McpRequestContext,
    place?: (principal: string) => McpSessionPlace,
  ): Promise<void> => {
    const owner = ctx.principal ?? null;
    const bridge = opts.bridgeFor(ctx.principal);
    const sid = req.headers['mcp-session-id'];
    let existing = typeof sid === 'string' ? sessions.get(sid) : undefined;
    // a session is its opener's: another principal naming its id finds nothing
    if (existing && existing.owner !== owner) existing = undefined;
    if (req.method === 'GET' || req.method === 'DELETE') {
      if (!existing) return json(res, 404, rpcError(null, RPC.INVALID_REQUEST, 'unknown or ended session', 'E_MCP'));
      return viaTransport(existing.transport, req, res);
    }
    if (req.method !== 'POST') return json(res, 405, { error: 'method not allowed' });
    const body = await readBody(req, MAX_MESSAGE_BYTES);
    if (body === undefined)
      return json(
        res,
        413,
        rpcError(null, RPC.INVALID_REQUEST, `message over ${MAX_MESSAGE_BYTES / 1048576} MiB refused`, 'E_MCP'),
      );
    const rule = clientMessageRule(parseMessage(body.toString('utf8')));
    const versionHeader =
      typeof req.headers['mcp-protocol-version'] === 'string' ? req.headers['mcp-protocol-version'] : undefined;
    // 2026-07-28 over HTTP: a method the server does not offer is HTTP 404 (MCP 2026-07-28 "Transports")
    const modernHeader = versionHeader !== undefined && versionHeader >= '2026-07-28';
    if (rule.action === 'reply')
      return json(
        res,
        rule.reply.error.code === RPC.PARSE_ERROR
          ? 400
          : modernHeader && rule.reply.error.code === RPC.METHOD_NOT_FOUND
            ? 404
            : 200,
        rule.reply,
      );
    if (rule.action === 'drop') {
      opts.onDropped?.(rule.reason);
      res.writeHead(202).end();
      return;
    }
    const m = rule.message;
    const claimed = modernVersion(m, versionHeader);
    // methods 2026-07-28 removed (the handshake, the session-scoped logging level and subscriptions): HTTP 404, -32601
    if (
      claimed !== undefined &&
      typeof sid !== 'string' &&
      typeof m.method === 'string' &&
      REMOVED_IN_2026.has(m.method) &&
      m.id !== undefined
    ) {
      return json(
        res,
        404,
        rpcError(
          typeof m.id === 'string' || typeof m.id === 'number' ? m.id : null,
          RPC.METHOD_NOT_FOUND,
          `method "${m.method}" is not part of protocol revision 2026-07-28`,
          'E_MCP',
        ),
      );
    }
    if (typeof m.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number')) {
      const bad = checkRequestParams(m.id, m.method, m.params);
      if (bad !== undefined) return json(res, 200, bad);
    }
    // 2026-07-28: the standard headers must say what the body says (an intermediary routes by them)
    if (claimed !== undefined && typeof sid !== 'string') {
      const header = (name: string): string | undefined => {
        const v = req.headers[name];
        return Array.isArray(v) ? v.join(', ') : v;
      };
      const mismatch = checkStandardHeaders(header, m) ?? (await paramMismatch(bridge, m, header));
      if (mismatch !== undefined) {
        opts.onDropped?.(`header mismatch: ${m.method ?? ''}`);
        return json(res, 400, mismatch);
      }
      return serveModern(bridge, req, res, rule.message);
    }
    if (existing) {
      // a request counts as activity until its response ends; a session with one in flight is never ended
      if (typeof sid === 'string' && m.id !== undefined) {
        const done = sessions.begin(sid);
        res.once('close', () => {
          done();
          armSweep();
          freed(); // a session with nothing in flight now can make room for one waiting
        });
      }
      return viaTransport(existing.transport, req, res, rule.message);
    }
    if (typeof sid === 'string')
      return json(res, 404, rpcError(null, RPC.INVALID_REQUEST, 'this session is gone; start a new one', 'E_MCP'));
    if (rule.message.method !== 'initialize')
      return json(res, 400, rpcError(null, RPC.INVALID_REQUEST, 'start a session with initialize', 'E_MCP'));
    let release: (() => void) | undefined;
    if (place) {
      // a team gateway: places per principal; the principal's own least recently used idle session makes room. Its
      // bridge also holds at most `maxSessions` client sessions (their upstream sessions count per client context):
      // beyond that its own least recently used idle one ends first, as on one machine.
      const mine = (): number => [...sessions.values()].filter((l) => l.owner === owner).length;
      while (mine() >= maxSessions) {
        const id = sessions.evictable((l) => l.owner === owner);
        if (id === undefined) break;
        endSession(id, 'least recently used of its principal, to make room');
      }
      if (mine() >= maxSessions)
        return json(
          res,
          429,
          rpcError(null, -32003, `at most ${maxSessions} sessions per principal, each with a call in flight`, 'E_BUSY'),
          { 'retry-after': '5' },
        );
      let p = place(owner ?? 'static');
      if (!p.ok) {
        const id = sessions.evictable((l) => l.owner === owner);
        if (id !== undefined) {
          endSession(id, 'least recently used of its principal, to make room');
          p = place(owner ?? 'static');
        }
      }
      if (!p.ok) return json(res, 429, rpcError(null, -32003, p.message, 'E_BUSY'), { 'retry-after': '5' });
      release = p.release;
    } else {
      while (sessions.size + starting >= maxSessions && sessions.size > 0 && makeRoom()) {
        /* each pass ended one idle session */
      }
      if (sessions.size + starting >= maxSessions && !(await waitPlace(res))) {
        // the client went away while waiting: it holds no place
        if (res.destroyed || res.socket?.destroyed !== false) return;
        opts.refusals?.counter.refused({
          principal: opts.refusals.principal,
          reason: `${maxSessions} MCP client sessions per sandbox`,
          tool: 'initialize',
        });
        return json(
          res,
          429,
          rpcError(
            null,
            -32003,
            `at most ${maxSessions} sessions per sandbox, none freed within ${Math.round(waitMs / 1000)} s; try again later`,
            'E_BUSY',
          ),
          { 'retry-after': '5' },
        );
      }
    }
    starting++;
    const bridgeSession = bridge.newSessionId();
    const server = bridge.createServer(bridgeSession);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.add(id, { transport, server, bridgeSession, bridge, owner });
        armSweep();
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.remove(transport.sessionId);
      release?.();
      void bridge.closeSession(bridgeSession);
      freed();
    };
    try {
      await server.connect(transport);
      await viaTransport(transport, req, res, rule.message);
    } finally {
      starting--;
      // an initialize that opened no session holds no place
      if (transport.sessionId === undefined || sessions.get(transport.sessionId) === undefined) release?.();
      freed();
    }
  };

  return {
    handle,
    get sessions() {
      return sessions.size;
    },
    async listsChanged() {
      const bridges = new Set<McpBridge>([...sessions.values()].map((l) => l.bridge));
      for (const b of moderns.keys()) bridges.add(b);
      for (const b of bridges) await b.listsChanged().catch(() => undefined);
    },
    async close() {
      closing = true;
      for (const [b, m] of moderns) {
        await m.handler.close().catch(() => undefined);
        await b.closeSession(m.session);
      }
      if (sweep !== undefined) clearTimeout(sweep);
      for (const s of sessions.values()) await s.transport.close().catch(() => undefined);
    },
  };
}
