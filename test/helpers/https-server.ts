// Local HTTPS test server with a throwaway certificate (selfsigned) that records connections and requests; test side.
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import selfsigned from 'selfsigned';

/** Names the certificate covers; tests map them to 127.0.0.1 through NodeFetchTransport's test hooks. */
export const TEST_HOST = 'fetch-test.example';
export const OTHER_TEST_HOST = 'other-test.example';

export type Handler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void | Promise<void>;

export interface RecordedRequest {
  method: string;
  path: string;
  host: string | undefined;
  headers: Record<string, string | string[] | undefined>;
}

export interface TestHttpsServer {
  port: number;
  /** PEM of the self-signed certificate (trusted by passing it as `ca`). */
  ca: string;
  /** `https://fetch-test.example:PORT` */
  origin: string;
  url(path: string, host?: string): string;
  /** TCP connections accepted so far. */
  connections(): number;
  requests: RecordedRequest[];
  route(path: string, handler: Handler): void;
  /** Resolves when a socket the server accepted has closed. */
  nextSocketClose(): Promise<void>;
  close(): Promise<void>;
}

let certCache: Promise<{ key: string; cert: string }> | undefined;

function cert(): Promise<{ key: string; cert: string }> {
  certCache ??= selfsigned
    .generate([{ name: 'commonName', value: TEST_HOST }], {
      keyType: 'ec',
      curve: 'P-256',
      algorithm: 'sha256',
      extensions: [
        { name: 'basicConstraints', cA: true },
        { name: 'keyUsage', digitalSignature: true, keyCertSign: true },
        { name: 'extKeyUsage', serverAuth: true },
        {
          name: 'subjectAltName',
          altNames: [
            { type: 2, value: TEST_HOST },
            { type: 2, value: OTHER_TEST_HOST },
            { type: 2, value: 'localhost' },
            { type: 7, ip: '127.0.0.1' },
            { type: 7, ip: '::1' },
          ],
        },
      ],
    })
    .then((r) => ({ key: r.private, cert: r.cert }));
  return certCache;
}

/** Start a server on 127.0.0.1 (or `host`) at a free port. Unrouted paths answer 200 "ok". */
export async function startHttpsServer(opts: { host?: string } = {}): Promise<TestHttpsServer> {
  const { key, cert: pem } = await cert();
  const routes = new Map<string, Handler>();
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  let closeWaiters: (() => void)[] = [];
  const server: Server = createServer({ key, cert: pem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      requests.push({ method: req.method ?? '', path, host: req.headers.host, headers: { ...req.headers } });
      const h = routes.get(path.split('?')[0] ?? path);
      if (!h) {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('ok');
        return;
      }
      Promise.resolve(h(req, res, Buffer.concat(chunks))).catch(() => res.destroy());
    });
  });
  server.on('connection', (s: Socket) => {
    connections++;
    sockets.add(s);
    s.on('close', () => {
      sockets.delete(s);
      const w = closeWaiters;
      closeWaiters = [];
      for (const f of w) f();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, opts.host ?? '127.0.0.1', resolve));
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  const port = addr.port;
  return {
    port,
    ca: pem,
    origin: `https://${TEST_HOST}:${port}`,
    url: (path, host = TEST_HOST) => `https://${host}:${port}${path}`,
    connections: () => connections,
    requests,
    route: (path, handler) => void routes.set(path, handler),
    nextSocketClose: () => new Promise<void>((r) => closeWaiters.push(r)),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Write `total` bytes in `chunk`-sized pieces honouring backpressure; reports how it ended. */
export function streamBytes(
  res: ServerResponse,
  total: number,
  chunk = 64 * 1024,
): Promise<{ finished: boolean; written: number }> {
  return new Promise((resolve) => {
    let written = 0;
    let done = false;
    const buf = Buffer.alloc(chunk, 0x61);
    const end = (finished: boolean): void => {
      if (done) return;
      done = true;
      resolve({ finished, written });
    };
    res.on('close', () => end(res.writableFinished));
    const pump = (): void => {
      while (!done && written < total) {
        if (res.destroyed) return end(false);
        const n = Math.min(chunk, total - written);
        written += n;
        if (!res.write(n === chunk ? buf : buf.subarray(0, n))) {
          res.once('drain', pump);
          return;
        }
      }
      if (!done && written >= total) res.end(() => end(true));
    };
    pump();
  });
}
