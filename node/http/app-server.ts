// Loopback static server for the built web chat app (dist/browser) with a strict CSP header; Node host, trusted side.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { existsSync } from 'node:fs';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { packageRoot } from '../sandbox/engines.js';
import { TyError } from '../../core/errors.js';

/** Port `tycli app` tries first: a stable port keeps the app's origin, and so its IndexedDB data, across runs. */
export const DEFAULT_APP_PORT = 8765;

/** The page's entry, relative to the build folder (vite keeps the source path of an HTML entry). */
export const APP_ENTRY = 'browser/app/index.html';

/** The app's one Trusted Types policy name (browser/trusted-html.ts TRUSTED_TYPES_POLICY_NAME). */
export const APP_TRUSTED_TYPES_POLICY = 'tysandbox';

/**
 * The app's Content-Security-Policy (CSP Level 3). No 'unsafe-eval' and no inline script: scripts come only from
 * the app's own origin (argument validation generates no code, the host injects no script). Trusted Types are
 * required for every script sink (`require-trusted-types-for 'script'`) with one named policy (`trusted-types
 * tysandbox`): rendered markdown reaches the DOM only through DOMPurify under it. The sandbox frames are
 * `sandbox-frame.html` from this server (`frame-src 'self'`), a separate document whose own policy (its meta
 * element) allows its Blob worker and WebAssembly; see docs/browser.md. `connect-src` is the app's own origin plus
 * `connect`: the model endpoints, MCP servers and tool fetch origins the app was configured with (connectOrigin
 * checks each), never any address. Images: the app's own, `data:`, and https: ones the person chose to show.
 * `frame-ancestors` is `'none'` unless embedding origins are given.
 * Source: https://www.w3.org/TR/CSP3/ (§6.1 fetch directives, §6.4.2 frame-ancestors),
 * https://w3c.github.io/trusted-types/dist/spec/ (§4 integrations: require-trusted-types-for, trusted-types).
 */
export function appCsp(opts: { frameAncestors?: string[]; connect?: readonly string[] } = {}): string {
  const ancestors = opts.frameAncestors && opts.frameAncestors.length > 0 ? opts.frameAncestors.join(' ') : "'none'";
  const connect = (opts.connect ?? []).filter((o) => connectOrigin(o) === o);
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data: https:",
    `connect-src 'self'${connect.length ? ` ${connect.join(' ')}` : ''}`,
    "frame-src 'self'",
    "manifest-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${ancestors}`,
    "require-trusted-types-for 'script'",
    `trusted-types ${APP_TRUSTED_TYPES_POLICY}`,
  ].join('; ');
}

/** Most origins `connect-src` lists (model endpoints, MCP servers, tool fetch origins). */
export const MAX_CONNECT_ORIGINS = 200;

/**
 * `text` as a CSP source for `connect-src`, or undefined when it is not one this server lists: an http(s) origin
 * (`scheme://host[:port]`, as the URL parser serializes it) or an https wildcard origin `https://*.domain[:port]`
 * (a tool manifest's fetch pattern). Nothing else: no paths, no `*` alone, no schemes alone, no keywords.
 */
export function connectOrigin(text: string): string | undefined {
  if (typeof text !== 'string' || text.length > 300) return undefined;
  const wild = text.startsWith('https://*.');
  try {
    const u = new URL(wild ? text.replace('https://*.', 'https://wildcard-label.') : text);
    if (u.protocol !== 'https:' && (wild || u.protocol !== 'http:')) return undefined;
    if (u.username || u.password) return undefined;
    const origin = wild ? u.origin.replace('https://wildcard-label.', 'https://*.') : u.origin;
    return origin === text ? origin : undefined;
  } catch {
    return undefined;
  }
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.zip': 'application/zip',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** Folders of the build the app needs; everything else (e.g. the diagnostics page) is not served. */
const SERVED_PREFIXES = ['/browser/app/', '/assets/', '/pyodide/', '/quickjs/'];
/** The app's entry script (vite names entries at the top of the build). */
const SERVED_FILES = ['/app.js'];
/**
 * The sandbox frame document and its bootstrap (browser/sandbox-frame.*): served without the page's policy,
 * since the frame's own policy is its meta element (a header would be combined with it and forbid its worker).
 */
const FRAME_FILES = ['/sandbox-frame.html', '/sandbox-frame.js'];
/** The app's connect-origin configuration (GET / PUT). */
export const CONNECT_PATH = '/app/connect';

function readBody(req: IncomingMessage, max: number): Promise<string> {
  return new Promise((res, rej) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        rej(new Error(`larger than ${max} bytes`));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => res(Buffer.concat(chunks).toString('utf8')));
    req.on('error', rej);
  });
}

/** The built app folder: the package's `dist/browser` (from the compiled code, the bundle and the sources alike). */
export function defaultAppDir(): string {
  const dir = join(packageRoot(), 'dist', 'browser');
  if (existsSync(join(dir, APP_ENTRY))) return resolve(dir);
  throw new TyError('E_USAGE', 'the web app is not built; run `npm run build` in the tysandbox folder first');
}

export interface AppServer {
  /** `http://127.0.0.1:PORT/` */
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface AppServerOptions {
  /** Built folder (default: defaultAppDir()). */
  dir?: string;
  /** Port; 0 picks a free one. Default DEFAULT_APP_PORT, falling back to a free port when it is taken. */
  port?: number;
  /** Origins allowed to embed the app in a frame (CSP frame-ancestors); default none. */
  frameAncestors?: string[];
  /**
   * Where the connect origins the app asked for (`PUT /app/connect`) are kept across restarts (a JSON file, written
   * whole then renamed into place); default: in memory only.
   */
  connectFile?: string | ((port: number) => string);
}

function listen(server: Server, port: number): Promise<number> {
  return new Promise((res, rej) => {
    const onError = (e: Error) => {
      server.off('listening', onListening);
      rej(e);
    };
    const onListening = () => {
      server.off('error', onError);
      const a = server.address();
      res(typeof a === 'object' && a ? a.port : port);
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, '127.0.0.1');
  });
}

/**
 * Serve the built app on 127.0.0.1 only. GET/HEAD only (and PUT of /app/connect); the Host header must name this
 * loopback server
 * (127.0.0.1, localhost or [::1] with the port), which refuses DNS-rebinding pages. Every response carries the
 * CSP of `appCsp` (except the sandbox frame's two files), `X-Content-Type-Options: nosniff`, `Referrer-Policy:
 * no-referrer` and
 * `Cross-Origin-Resource-Policy: same-origin` (the sandbox frame's two files get neither the page policy nor CORP:
 * the frame has an opaque origin); `/` serves the app's page.
 *
 * `GET /app/connect` answers `{"origins": [...]}`, the origins `connect-src` lists now; `PUT /app/connect` with
 * `{"origins": [...]}` (each a connectOrigin, at most MAX_CONNECT_ORIGINS) replaces them, so an endpoint the person
 * configured works after the page reloads, without editing anything by hand. A PUT is taken only from the app's own
 * page: its `Origin` must be this server's origin as addressed (a cross-site page's request carries its own origin),
 * `Sec-Fetch-Site`, when sent, `same-origin`, and the body JSON (`content-type: application/json`, which a cross-site
 * form cannot send without a CORS preflight, never answered here). Bad input: 400 with `{"error": ...}`.
 * @throws TyError E_USAGE when the app is not built or the port cannot be bound.
 */
export async function startAppServer(opts: AppServerOptions = {}): Promise<AppServer> {
  const root = resolve(opts.dir ?? defaultAppDir());
  let connect: string[] = [];
  let connectFile: string | undefined;
  const csp = () => appCsp({ connect, ...(opts.frameAncestors ? { frameAncestors: opts.frameAncestors } : {}) });
  let port = 0;
  const headers = () => ({
    'content-security-policy': csp(),
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cross-origin-resource-policy': 'same-origin',
  });
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const security = headers();
    const host = (req.headers.host ?? '').toLowerCase();
    if (![`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`].includes(host)) {
      res
        .writeHead(421, { ...security, 'content-type': 'text/plain' })
        .end('misdirected request: this server answers only to its loopback address\n');
      return;
    }
    if ((req.url ?? '').split('?')[0] === CONNECT_PATH) {
      const json = (status: number, body: unknown) =>
        void res
          .writeHead(status, { ...security, 'content-type': 'application/json', 'cache-control': 'no-store' })
          .end(JSON.stringify(body));
      if (req.method === 'GET') return json(200, { origins: connect });
      if (req.method !== 'PUT') return json(405, { error: 'GET or PUT' });
      const site = req.headers['sec-fetch-site'];
      if (req.headers.origin !== `http://${host}` || (site !== undefined && site !== 'same-origin'))
        return json(403, { error: "only the app's own page may change its connect origins" });
      if (!/^application\/json\b/i.test(String(req.headers['content-type'] ?? '')))
        return json(415, { error: 'the body must be application/json' });
      let body: { origins?: unknown };
      try {
        body = JSON.parse(await readBody(req, 64 * 1024)) as { origins?: unknown };
      } catch (e) {
        return json(400, { error: `the body is not JSON: ${(e as Error).message.slice(0, 100)}` });
      }
      const list = body?.origins;
      if (!Array.isArray(list) || list.length > MAX_CONNECT_ORIGINS)
        return json(400, { error: `origins must be an array of at most ${MAX_CONNECT_ORIGINS} origins` });
      const bad = list.find((o) => typeof o !== 'string' || connectOrigin(o) !== o);
      if (bad !== undefined)
        return json(400, { error: `not an origin: ${JSON.stringify(bad).slice(0, 100)} (scheme://host[:port])` });
      const next = [...new Set(list as string[])].sort();
      if (connectFile) {
        await mkdir(dirname(connectFile), { recursive: true, mode: 0o700 });
        const tmp = `${connectFile}.${process.pid}.tmp`;
        await writeFile(tmp, `${JSON.stringify({ origins: next })}\n`, { mode: 0o600 });
        await rename(tmp, connectFile);
      }
      connect = next;
      return json(200, { origins: connect });
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { ...security, allow: 'GET, HEAD' }).end();
      return;
    }
    let path: string;
    try {
      path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    } catch {
      res.writeHead(400, security).end();
      return;
    }
    if (path === '/' || path === '/index.html') path = `/${APP_ENTRY}`;
    const file = normalize(join(root, path));
    const frame = FRAME_FILES.includes(path);
    if (
      !(frame || SERVED_FILES.includes(path) || SERVED_PREFIXES.some((p) => path.startsWith(p))) ||
      !file.startsWith(root + sep) ||
      path.includes('\0')
    ) {
      res.writeHead(404, { ...security, 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    try {
      const s = await stat(file);
      if (!s.isFile()) throw new Error('not a file');
      const body = await readFile(file);
      const cache =
        path.startsWith('/assets/') || path.startsWith('/pyodide/') || path.startsWith('/quickjs/')
          ? 'public, max-age=31536000, immutable'
          : 'no-cache';
      // The frame is an opaque origin: a same-origin CORP header would block its own bootstrap script.
      const { 'content-security-policy': _page, 'cross-origin-resource-policy': _corp, ...frameHeaders } = security;
      void _page;
      void _corp;
      res.writeHead(200, {
        ...(frame ? frameHeaders : security),
        'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
        'content-length': body.length,
        'cache-control': cache,
      });
      res.end(req.method === 'HEAD' ? undefined : body);
    } catch {
      res.writeHead(404, { ...security, 'content-type': 'text/plain' }).end('not found\n');
    }
  };
  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500, headers());
      res.end();
    });
  });
  const wanted = opts.port ?? DEFAULT_APP_PORT;
  try {
    port = await listen(server, wanted);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (opts.port === undefined && code === 'EADDRINUSE') port = await listen(server, 0);
    else throw new TyError('E_USAGE', `cannot listen on 127.0.0.1:${wanted}: ${code ?? (e as Error).message}`);
  }
  connectFile = typeof opts.connectFile === 'function' ? opts.connectFile(port) : opts.connectFile;
  if (connectFile) {
    try {
      const saved = JSON.parse(await readFile(connectFile, 'utf8')) as { origins?: unknown };
      if (Array.isArray(saved.origins))
        connect = saved.origins.filter((o): o is string => typeof o === 'string' && connectOrigin(o) === o);
    } catch {
      /* none saved yet, or unreadable: start with none */
    }
  }
  return {
    url: `http://127.0.0.1:${port}/`,
    port,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
