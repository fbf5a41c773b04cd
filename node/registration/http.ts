// `tycli serve --http`: the registration protocol over HTTP, as a route behind the gateway front
// (node/gateway/listen.ts) or on loopback with the server's own token; sessions kept in the store can move between
// instances; Node host, trusted side.
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { ProtocolSession, RegistrationServer } from '../../core/registration/server.js';
import { classifyInbound, rpcFailure, RPC_CODES, type RpcMessage } from '../../core/registration/rpc.js';
import type { Store } from '../../core/store/contract.js';
import { checkLoopbackRequest, json, listenLoopback, newBearerToken, readBody } from '../http/guard.js';
import { cliPrincipal } from './stdio.js';

export interface ProtocolHttpOptions {
  /** TCP port on 127.0.0.1 (0: any free port). */
  port: number;
  /** The bearer token; default a fresh random one. */
  token?: string;
  /** Sessions open at once (default 16); an initialize beyond is answered 429 with E_BUSY. */
  maxSessions?: number;
  /** A session unused this long is ended, ms (default 30 min). */
  idleMs?: number;
}

export interface ProtocolHttpHandle {
  url: string;
  token: string;
  readonly sessions: number;
  close(): Promise<void>;
}

/** The session header: sent by the server on `initialize`, by the client on every later request. */
export const SESSION_HEADER = 'tysandbox-session';

/** The store namespace of sessions any instance may take over (ProtocolRouteOptions.shared). */
export const SESSIONS_NS = 'protocol-sessions';
/** A stored session older than this is not taken over (ms). */
const SESSION_RECORD_MAX_AGE = 24 * 3_600_000;

/** A place for one more session of a principal, or why there is none (node/gateway/admission.ts openSession). */
export type SessionPlace = { ok: true; release(): void } | { ok: false; message: string };

export interface ProtocolRouteOptions {
  /** A session unused this long is ended here, ms (default 30 min). */
  idleMs?: number;
  /** A place for each new session of a principal (default: at most 16 sessions at once on this server). */
  place?: (principal: string) => SessionPlace;
  /**
   * The store of a team gateway: each session's initialize is kept there, so that a request naming a session another
   * instance opened (that instance stopped, or a load balancer moved the client) resumes it here, for the same
   * authenticated principal only.
   */
  shared?: Store;
}

/** What the route learns from the front: the authenticated principal (`user:NAME`), if any. */
export interface ProtocolRequestContext {
  principal?: string | undefined;
}

export interface ProtocolRoute {
  /**
   * Handle one request to `/tysandbox` (already authenticated and admitted by the caller); `place`, when given, decides
   * a new session's place instead of the route's own (the gateway's admission: sessions per principal).
   */
  handle(
    req: IncomingMessage,
    res: ServerResponse,
    ctx: ProtocolRequestContext,
    place?: (principal: string) => SessionPlace,
  ): Promise<void>;
  readonly sessions: number;
  close(): void;
}

interface Entry {
  session: ProtocolSession;
  used: number;
  /** Who opened it: the authenticated principal, or null for the server's own token. */
  owner: string | null;
  release(): void;
  /** Requests of this session being handled now. */
  busy: number;
}

interface SessionRecord {
  v: 1;
  owner: string | null;
  /** The initialize request's text, replayed to resume the session. */
  init: string;
  at: number;
}

/**
 * The protocol's HTTP route. POST carries one JSON-RPC message of at most maxMessageBytes (413 beyond). A request is
 * answered 200 with NDJSON: the run's `$/progress` and `$/log` notifications as they happen, then its response;
 * `$/cancel` gets 202. `initialize` opens a session (its id in the `tysandbox-session` response header), every other
 * message names it; DELETE with the header ends it. A client authenticated as a principal acts as it (`user:NAME`);
 * with the server's own token it acts as `protocol:<client name>`. A session belongs to who opened it: another
 * principal naming its id gets 404.
 */
export function protocolRoute(server: RegistrationServer, opts: ProtocolRouteOptions = {}): ProtocolRoute {
  const idleMs = opts.idleMs ?? 30 * 60_000;
  const sessions = new Map<string, Entry>();
  let open = 0;
  const ownPlace =
    opts.place ??
    ((): SessionPlace => {
      if (open >= 16) return { ok: false, message: 'at most 16 sessions at once; end one (DELETE) or try again later' };
      open++;
      let done = false;
      return {
        ok: true,
        release: () => {
          if (!done) open--;
          done = true;
        },
      };
    });
  const end = (id: string, e: Entry): void => {
    e.session.close();
    e.release();
    sessions.delete(id);
  };
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, e] of sessions) if (now - e.used > idleMs) end(id, e);
    },
    Math.min(idleMs, 60_000),
  );
  sweep.unref();

  /** Open a session for `owner`: a place, then initialize; the entry when it succeeded, with the answers. */
  const start = async (
    owner: string | null,
    init: string,
    place: (principal: string) => SessionPlace,
  ): Promise<{ entry?: Entry; answers: RpcMessage[]; refused?: string }> => {
    const who = owner ?? 'static';
    const p = place(who);
    if (!p.ok) {
      // an admission refusal, audited in aggregate with the rest (core/audit/refusals.ts); a gateway's own place
      // function (node/gateway/admission.ts) audits its refusals itself
      if (place === ownPlace) {
        let name = '?';
        try {
          const c = (JSON.parse(init) as { params?: { client?: { name?: unknown } } }).params?.client;
          if (typeof c?.name === 'string') name = c.name.slice(0, 64);
        } catch {
          /* the initialize is answered as malformed elsewhere */
        }
        server.opts.refusals?.refused({
          principal: owner ?? cliPrincipal({ name }),
          reason: p.message,
          tool: 'initialize',
        });
      }
      return { answers: [], refused: p.message };
    }
    const session = server.connect({ principal: (c) => owner ?? cliPrincipal(c), send: () => undefined });
    const answers: RpcMessage[] = [];
    await session.receive(init, (msg) => void answers.push(msg));
    const ok = answers.length > 0 && answers.every((a) => !('error' in a));
    if (!ok) {
      session.close();
      p.release();
      return { answers };
    }
    return { entry: { session, used: Date.now(), owner, release: p.release, busy: 0 }, answers };
  };

  /** A session another instance opened, resumed here from its stored initialize (same owner only). */
  const resume = async (
    id: string,
    owner: string | null,
    place: (principal: string) => SessionPlace,
  ): Promise<Entry | { refused: string } | undefined> => {
    if (!opts.shared || !/^[0-9a-f-]{36}$/.test(id)) return undefined;
    const rec = await opts.shared.getJson<SessionRecord>(SESSIONS_NS, id).catch(() => undefined);
    if (rec?.v !== 1 || rec.owner !== owner || Date.now() - rec.at > SESSION_RECORD_MAX_AGE) return undefined;
    let r = await start(owner, rec.init, place);
    // Refused a place here (the owner's sessions on this instance are at their limit): this instance's least recently
    // used idle copy of one of the owner's stored sessions makes room. Its record stays in the shared store, so that
    // session resumes again (here or elsewhere) at its next request; nothing of it is lost.
    if (r.refused !== undefined && makeRoom(owner)) r = await start(owner, rec.init, place);
    if (r.entry) sessions.set(id, r.entry);
    return r.entry ?? (r.refused !== undefined ? { refused: r.refused } : undefined);
  };

  /** End this instance's least recently used idle session of `owner` (shared store only); false when there is none. */
  const makeRoom = (owner: string | null): boolean => {
    if (!opts.shared) return false;
    let lru: [string, Entry] | undefined;
    for (const [id, e] of sessions)
      if (e.owner === owner && e.busy === 0 && (lru === undefined || e.used < lru[1].used)) lru = [id, e];
    if (lru === undefined) return false;
    end(lru[0], lru[1]);
    return true;
  };

  const handle = async (
    req: IncomingMessage,
    res: ServerResponse,
    ctx: ProtocolRequestContext,
    place: (principal: string) => SessionPlace = ownPlace,
  ): Promise<void> => {
    const owner = ctx.principal ?? null;
    const sid = req.headers[SESSION_HEADER];
    let existing = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (existing && existing.owner !== owner) existing = undefined;
    if (!existing && typeof sid === 'string') {
      const r = await resume(sid, owner, place);
      // the session exists, but this instance has no place for it now: busy, not gone
      if (r !== undefined && 'refused' in r)
        return json(res, 429, rpcFailure(null, RPC_CODES.SERVER_ERROR, r.refused, 'E_BUSY'), { 'retry-after': '5' });
      existing = r;
    }
    if (req.method === 'DELETE') {
      if (!existing || typeof sid !== 'string')
        return json(res, 404, rpcFailure(null, RPC_CODES.INVALID_REQUEST, 'unknown or ended session', 'E_PROTOCOL'));
      end(sid, existing);
      await opts.shared?.backend.delete(SESSIONS_NS, sid).catch(() => undefined);
      res.writeHead(204).end();
      return;
    }
    if (req.method !== 'POST') return json(res, 405, { error: 'method not allowed' });
    const body = await readBody(req, server.limits.maxMessageBytes);
    if (body === undefined)
      return json(
        res,
        413,
        rpcFailure(
          null,
          RPC_CODES.INVALID_REQUEST,
          `message over ${server.limits.maxMessageBytes} bytes refused`,
          'E_PROTOCOL',
        ),
      );
    const text = body.toString('utf8');
    const m = classifyInbound(text, server.limits.maxMessageBytes);
    if (m.kind === 'invalid') return json(res, m.reply.error.code === RPC_CODES.PARSE_ERROR ? 400 : 200, m.reply);
    if (!existing) {
      if (typeof sid === 'string')
        return json(
          res,
          404,
          rpcFailure(
            null,
            RPC_CODES.INVALID_REQUEST,
            'this session is gone; start a new one with initialize',
            'E_PROTOCOL',
          ),
        );
      if (m.kind !== 'request' || m.method !== 'initialize')
        return json(
          res,
          400,
          rpcFailure(
            m.kind === 'request' ? m.id : null,
            RPC_CODES.NOT_INITIALIZED,
            'start a session with initialize',
            'E_PROTOCOL',
          ),
        );
      // initialize: answered whole; the session header only when it succeeded (a failed one opens no session)
      const r = await start(owner, text, place);
      if (r.refused !== undefined)
        return json(res, 429, rpcFailure(m.id, RPC_CODES.SERVER_ERROR, r.refused, 'E_BUSY'), { 'retry-after': '5' });
      const id = r.entry ? randomUUID() : undefined;
      if (id && r.entry) {
        sessions.set(id, r.entry);
        const rec: SessionRecord = { v: 1, owner, init: text, at: Date.now() };
        await opts.shared?.putJson(SESSIONS_NS, id, rec).catch(() => undefined);
      }
      res.writeHead(200, {
        'content-type': 'application/x-ndjson',
        'cache-control': 'no-store',
        ...(id ? { [SESSION_HEADER]: id } : {}),
      });
      res.end(r.answers.map((a) => `${JSON.stringify(a)}\n`).join(''));
      return;
    }
    const entry = existing;
    entry.used = Date.now();
    entry.busy++;
    try {
      await answer(entry, m, text, res);
    } finally {
      entry.busy--;
      entry.used = Date.now();
    }
  };

  /** Answer one message of an open session: 202 for a notification, else the run's NDJSON stream. */
  const answer = async (
    entry: Entry,
    m: ReturnType<typeof classifyInbound>,
    text: string,
    res: ServerResponse,
  ): Promise<void> => {
    if (m.kind !== 'request') {
      await entry.session.receive(text);
      res.writeHead(202).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
    const sink = (msg: RpcMessage): void => {
      if (!res.writableEnded) res.write(`${JSON.stringify(msg)}\n`);
    };
    // a client that goes away cancels its run
    const onGone = (): void => {
      if (!res.writableEnded && m.kind === 'request')
        void entry.session.receive({ jsonrpc: '2.0', method: '$/cancel', params: { id: m.id } });
    };
    res.once('close', onGone);
    await entry.session.receive(text, sink);
    res.off('close', onGone);
    res.end();
  };

  return {
    handle,
    get sessions() {
      return sessions.size;
    },
    close() {
      clearInterval(sweep);
      for (const [id, e] of sessions) end(id, e);
    },
  };
}

/**
 * Serve the route at `http://127.0.0.1:PORT/tysandbox` with the server's own token: every request passes
 * node/http/guard.ts checkLoopbackRequest (421 wrong Host, 403 foreign Origin, 401 no or wrong token) before its body
 * is read; at most `maxSessions` sessions (429 E_BUSY beyond). `tycli serve --http` uses the gateway front instead
 * (node/gateway/listen.ts), with per-client tokens, OIDC, admission and health; this is the embedders' loopback form.
 */
export async function serveProtocolHttp(
  server: RegistrationServer,
  opts: ProtocolHttpOptions,
): Promise<ProtocolHttpHandle> {
  const token = opts.token ?? newBearerToken();
  const maxSessions = opts.maxSessions ?? 16;
  let open = 0;
  const route = protocolRoute(server, {
    ...(opts.idleMs !== undefined ? { idleMs: opts.idleMs } : {}),
    place: () => {
      if (open >= maxSessions)
        return { ok: false, message: `at most ${maxSessions} sessions at once; end one (DELETE) or try again later` };
      open++;
      let done = false;
      return {
        ok: true,
        release: () => {
          if (!done) open--;
          done = true;
        },
      };
    },
  });
  let port = opts.port;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/tysandbox') return json(res, 404, { error: 'not found' });
    const refused = checkLoopbackRequest(req, port, token);
    if (refused) return json(res, refused.status, { error: refused.reason }, refused.headers);
    await route.handle(req, res, {});
  };
  const listening = await listenLoopback(
    opts.port,
    handle,
    rpcFailure(null, RPC_CODES.INTERNAL_ERROR, 'internal error', 'E_PROTOCOL'),
  );
  const http: HttpServer = listening.http;
  port = listening.port;
  return {
    url: `http://127.0.0.1:${port}/tysandbox`,
    token,
    get sessions() {
      return route.sessions;
    },
    async close() {
      route.close();
      http.closeAllConnections?.();
      await new Promise((r) => http.close(() => r(undefined)));
    },
  };
}
