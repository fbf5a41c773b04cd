// Loopback static server for the built web chat app (dist/browser) with a strict CSP header; Node host, trusted side.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { packageRoot } from '../sandbox/engines.js';
import { TyError } from '../../core/errors.js';

/** Port `tycli app` tries first: a stable port keeps the app's origin, and so its IndexedDB data, across runs. */
export const DEFAULT_APP_PORT = 8765;

/** The page's entry, relative to the build folder (vite keeps the source path of an HTML entry). */
export const APP_ENTRY = 'browser/app/index.html';

/**
 * The app's Content-Security-Policy (CSP Level 3). No 'unsafe-eval' and no inline script: scripts come only from
 * the app's own origin (argument validation generates no code, the host injects no script). The sandbox frames
 * are `sandbox-frame.html` from this server (`frame-src 'self'`), a separate document whose own policy (its meta
 * element) allows its Blob worker and WebAssembly; see docs/browser.md. `connect-src` is open to http(s) because
 * the person chooses the model endpoint, and tool fetches run through the host's mediated fetch after the gate
 * allowed their origin. `frame-ancestors` is `'none'` unless embedding origins are given.
 * Source: https://www.w3.org/TR/CSP3/ (§6.1 fetch directives, §6.4.2 frame-ancestors).
 */
export function appCsp(opts: { frameAncestors?: string[] } = {}): string {
  const ancestors = opts.frameAncestors && opts.frameAncestors.length > 0 ? opts.frameAncestors.join(' ') : "'none'";
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self' http: https:",
    "frame-src 'self'",
    "manifest-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${ancestors}`,
  ].join('; ');
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
const SERVED_PREFIXES = ['/browser/app/', '/assets/', '/pyodide/'];
/** The app's entry script (vite names entries at the top of the build). */
const SERVED_FILES = ['/app.js'];
/**
 * The sandbox frame document and its bootstrap (browser/sandbox-frame.*): served without the page's policy,
 * since the frame's own policy is its meta element (a header would be combined with it and forbid its worker).
 */
const FRAME_FILES = ['/sandbox-frame.html', '/sandbox-frame.js'];

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
 * Serve the built app on 127.0.0.1 only. GET/HEAD only; the Host header must name this loopback server
 * (127.0.0.1, localhost or [::1] with the port), which refuses DNS-rebinding pages. Every response carries the
 * CSP of `appCsp` (except the sandbox frame's two files), `X-Content-Type-Options: nosniff`, `Referrer-Policy:
 * no-referrer` and
 * `Cross-Origin-Resource-Policy: same-origin` (the sandbox frame's two files get neither the page policy nor CORP:
 * the frame has an opaque origin); `/` serves the app's page.
 * @throws TyError E_USAGE when the app is not built or the port cannot be bound.
 */
export async function startAppServer(opts: AppServerOptions = {}): Promise<AppServer> {
  const root = resolve(opts.dir ?? defaultAppDir());
  const csp = appCsp(opts.frameAncestors ? { frameAncestors: opts.frameAncestors } : {});
  let port = 0;
  const security = {
    'content-security-policy': csp,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cross-origin-resource-policy': 'same-origin',
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const host = (req.headers.host ?? '').toLowerCase();
    if (![`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`].includes(host)) {
      res
        .writeHead(421, { ...security, 'content-type': 'text/plain' })
        .end('misdirected request: this server answers only to its loopback address\n');
      return;
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
        path.startsWith('/assets/') || path.startsWith('/pyodide/')
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
      if (!res.headersSent) res.writeHead(500, security);
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
