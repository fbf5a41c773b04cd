// Loopback HTTP request checks shared by `tycli mcp serve --http` and `tycli serve --http`: bearer token, Host (DNS
// rebinding), Origin, bounded bodies; Node host, trusted side.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomBytes, timingSafeEqual } from 'node:crypto';

/** A fresh bearer token: 32 random bytes as hex. */
export function newBearerToken(): string {
  return randomBytes(32).toString('hex');
}

/** Constant-time token comparison. */
export function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Write one JSON body with a status. */
export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/**
 * Why a request was refused before anything read its body: HTTP status, a short reason, the stable error code
 * (`E_CAPABILITY_DENIED` for a missing token or a web page's Origin, `E_PROTOCOL` for a wrong Host), extra headers.
 */
export interface GuardRefusal {
  status: 401 | 403 | 421;
  reason: string;
  code: 'E_CAPABILITY_DENIED' | 'E_PROTOCOL';
  headers?: Record<string, string>;
}

/**
 * A refusal as a JSON-RPC 2.0 error response (id null: no request was read): `error.code` -32000 for a refused caller
 * (E_CAPABILITY_DENIED) and -32600 for a malformed request (E_PROTOCOL), `error.data.code` the stable code, so a
 * JSON-RPC client reads every HTTP refusal the way it reads the protocol's own (docs/protocol.md "HTTP status codes").
 */
export function rpcRefusal(
  code: 'E_CAPABILITY_DENIED' | 'E_PROTOCOL' | 'E_BUSY',
  message: string,
): { jsonrpc: '2.0'; id: null; error: { code: number; message: string; data: { code: string } } } {
  return {
    jsonrpc: '2.0',
    id: null,
    error: { code: code === 'E_PROTOCOL' ? -32600 : -32000, message, data: { code } },
  };
}

/**
 * The checks every loopback endpoint makes, in this order: a Host naming this loopback address and port
 * (421 otherwise: DNS rebinding), no Origin or a loopback Origin on the same port (403: a web page), and
 * `Authorization: Bearer TOKEN` (401, with `WWW-Authenticate: Bearer`). Returns undefined when all pass.
 */
export function checkLoopbackRequest(req: IncomingMessage, port: number, token: string): GuardRefusal | undefined {
  const host = req.headers.host ?? '';
  if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`)
    return { status: 421, reason: `wrong Host: this server answers 127.0.0.1:${port} only`, code: 'E_PROTOCOL' };
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== `http://127.0.0.1:${port}` && origin !== `http://localhost:${port}`)
    return { status: 403, reason: 'a web page (Origin) may not call this server', code: 'E_CAPABILITY_DENIED' };
  const auth = req.headers.authorization ?? '';
  if (!auth.startsWith('Bearer ') || !sameToken(auth.slice(7), token))
    return {
      status: 401,
      reason: 'missing or wrong bearer token',
      code: 'E_CAPABILITY_DENIED',
      headers: { 'www-authenticate': 'Bearer' },
    };
  return undefined;
}

/** Read a body of at most `max` bytes; undefined when it is larger (the rest is not buffered). */
export function readBody(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > max) {
        over = true;
        chunks.length = 0;
        resolve(undefined);
        return;
      }
      chunks.push(c);
    });
    req.once('end', () => {
      if (!over) resolve(Buffer.concat(chunks));
    });
    req.once('error', reject);
  });
}

/**
 * An HTTP server on 127.0.0.1 (`port` 0 picks a free one) running `handle` per request; a handler that throws
 * answers 500 with `internalError` as the JSON body (or ends a response already started).
 * @returns the server and the port it listens on
 * @throws the listen error (e.g. EADDRINUSE)
 */
export async function listenLoopback(
  port: number,
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  internalError: unknown,
): Promise<{ http: Server; port: number }> {
  const http = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) json(res, 500, internalError);
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, '127.0.0.1', () => resolve());
  });
  return { http, port: (http.address() as { port: number }).port };
}
