// `tycli serve --http`: the registration protocol over loopback HTTP (bearer token, Host and Origin checks as `mcp
// serve --http`); Node host, trusted side.
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { ProtocolSession, RegistrationServer } from '../../core/registration/server.js';
import { classifyInbound, rpcFailure, RPC_CODES, type RpcMessage } from '../../core/registration/rpc.js';
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

/**
 * Serve at `http://127.0.0.1:PORT/tysandbox`. Every request passes node/http/guard.ts checkLoopbackRequest
 * (421 wrong Host, 403 foreign Origin, 401 no or wrong token) before its body is read. POST carries one
 * JSON-RPC message of at most maxMessageBytes (413 beyond). A request is answered 200 with NDJSON: the
 * run's `$/progress` and `$/log` notifications as they happen, then its response; `$/cancel` gets 202.
 * `initialize` opens a session (its id in the `tysandbox-session` response header), every other message
 * names it; DELETE with the header ends it.
 */
export async function serveProtocolHttp(
  server: RegistrationServer,
  opts: ProtocolHttpOptions,
): Promise<ProtocolHttpHandle> {
  const token = opts.token ?? newBearerToken();
  const maxSessions = opts.maxSessions ?? 16;
  const idleMs = opts.idleMs ?? 30 * 60_000;
  const sessions = new Map<string, { session: ProtocolSession; used: number }>();
  let port = opts.port;
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [id, s] of sessions)
        if (now - s.used > idleMs) {
          s.session.close();
          sessions.delete(id);
        }
    },
    Math.min(idleMs, 60_000),
  );
  sweep.unref();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/tysandbox') return json(res, 404, { error: 'not found' });
    const refused = checkLoopbackRequest(req, port, token);
    if (refused) return json(res, refused.status, { error: refused.reason }, refused.headers);
    const sid = req.headers[SESSION_HEADER];
    const existing = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (req.method === 'DELETE') {
      if (!existing || typeof sid !== 'string')
        return json(res, 404, rpcFailure(null, RPC_CODES.INVALID_REQUEST, 'unknown or ended session', 'E_PROTOCOL'));
      existing.session.close();
      sessions.delete(sid);
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
    let entry = existing;
    let newId: string | undefined;
    if (!entry) {
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
      if (sessions.size >= maxSessions) {
        // an admission refusal: audited in aggregate with the rest (core/audit/refusals.ts)
        const client = (m.params as { client?: { name?: unknown } } | undefined)?.client;
        server.opts.refusals?.refused({
          principal: cliPrincipal({ name: typeof client?.name === 'string' ? client.name.slice(0, 64) : '?' }),
          reason: `${maxSessions} protocol sessions at once`,
          tool: 'initialize',
        });
        return json(
          res,
          429,
          rpcFailure(
            m.id,
            RPC_CODES.SERVER_ERROR,
            `at most ${maxSessions} sessions at once; end one (DELETE) or try again later`,
            'E_BUSY',
          ),
          { 'retry-after': '5' },
        );
      }
      newId = randomUUID();
      const session = server.connect({ principal: cliPrincipal, send: () => undefined });
      entry = { session, used: Date.now() };
    }
    entry.used = Date.now();
    if (m.kind !== 'request') {
      await entry.session.receive(text);
      res.writeHead(202).end();
      return;
    }
    if (newId) {
      // initialize: answered whole; the session header only when it succeeded (a failed one opens no session)
      const answers: RpcMessage[] = [];
      await entry.session.receive(text, (msg) => void answers.push(msg));
      const ok = answers.length > 0 && answers.every((a) => !('error' in a));
      if (ok) sessions.set(newId, entry);
      else entry.session.close();
      res.writeHead(200, {
        'content-type': 'application/x-ndjson',
        'cache-control': 'no-store',
        ...(ok ? { [SESSION_HEADER]: newId } : {}),
      });
      res.end(answers.map((a) => `${JSON.stringify(a)}\n`).join(''));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
    const sink = (msg: RpcMessage): void => {
      if (!res.writableEnded) res.write(`${JSON.stringify(msg)}\n`);
    };
    // a client that goes away cancels its run
    const onGone = (): void => {
      if (!res.writableEnded && m.kind === 'request')
        void entry!.session.receive({ jsonrpc: '2.0', method: '$/cancel', params: { id: m.id } });
    };
    res.once('close', onGone);
    await entry.session.receive(text, sink);
    res.off('close', onGone);
    res.end();
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
      return sessions.size;
    },
    async close() {
      clearInterval(sweep);
      for (const s of sessions.values()) s.session.close();
      sessions.clear();
      http.closeAllConnections?.();
      await new Promise((r) => http.close(() => r(undefined)));
    },
  };
}
