// tycli app and its loopback server: strict CSP header, loopback Host only, only the app's files; test code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtemp, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:http';
import { appCsp, startAppServer, type AppServer } from './app-server.js';

let dir: string;
let server: AppServer;

function get(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    r.on('error', reject);
    r.end();
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tysandbox-app-'));
  await mkdir(join(dir, 'browser/app'), { recursive: true });
  await mkdir(join(dir, 'assets'));
  await mkdir(join(dir, 'browser/diagnostics'), { recursive: true });
  await writeFile(join(dir, 'browser/app/index.html'), '<!doctype html><script type="module" src="/app.js"></script>');
  await writeFile(join(dir, 'app.js'), 'console.log(1)');
  await writeFile(join(dir, 'assets/a.css'), 'body{}');
  await writeFile(join(dir, 'browser/diagnostics/index.html'), 'diagnostics');
  await writeFile(
    join(dir, 'sandbox-frame.html'),
    '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'">',
  );
  server = await startAppServer({ dir, port: 0 });
});
afterAll(async () => {
  await server?.close();
});

describe('app server', () => {
  it('serves the app page at / with a strict CSP: no unsafe-eval, no unsafe-inline, no inline scripts', async () => {
    const r = await get(server.port, '/');
    expect(r.status).toBe(200);
    expect(r.body).toContain('/app.js');
    const csp = String(r.headers['content-security-policy']);
    expect(csp).toBe(appCsp());
    expect(csp).not.toMatch(/'unsafe-eval'|'unsafe-inline'|'unsafe-hashes'/);
    const directives = Object.fromEntries(
      csp
        .split(';')
        .map((d) => d.trim().split(/\s+/))
        .map(([k, ...v]) => [k, v]),
    );
    expect(directives['default-src']).toEqual(["'none'"]);
    expect(directives['script-src']).toEqual(["'self'"]);
    expect(directives['frame-src']).toEqual(["'self'"]);
    expect(directives['object-src']).toEqual(["'none'"]);
    expect(directives['base-uri']).toEqual(["'none'"]);
    expect(directives['frame-ancestors']).toEqual(["'none'"]);
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.headers['referrer-policy']).toBe('no-referrer');
  });
  it('serves the entry script and assets with the header, and nothing else of the build', async () => {
    expect((await get(server.port, '/app.js')).status).toBe(200);
    const css = await get(server.port, '/assets/a.css');
    expect(css.status).toBe(200);
    expect(css.headers['content-type']).toMatch(/^text\/css/);
    expect(css.headers['content-security-policy']).toBe(appCsp());
    expect((await get(server.port, '/browser/diagnostics/index.html')).status).toBe(404);
    // The sandbox frame's document carries its own policy (meta): no page policy is added to it.
    const frame = await get(server.port, '/sandbox-frame.html');
    expect(frame.status).toBe(200);
    expect(frame.headers['content-security-policy']).toBeUndefined();
    expect(frame.headers['x-content-type-options']).toBe('nosniff');
    expect(frame.headers['cross-origin-resource-policy']).toBeUndefined();
    expect((await get(server.port, '/assets/../browser/diagnostics/index.html')).status).toBe(404);
    expect((await get(server.port, '/%2e%2e/%2e%2e/etc/passwd')).status).toBe(404);
    expect((await get(server.port, '/', {}, 'POST')).status).toBe(405);
  });
  it('answers only requests addressed to its loopback address (DNS rebinding)', async () => {
    expect((await get(server.port, '/', { host: 'evil.example:80' })).status).toBe(421);
    expect((await get(server.port, '/', { host: `localhost:${server.port}` })).status).toBe(200);
  });
});

describe('tycli app', () => {
  it('prints the URL on stdout, serves the built app until SIGTERM, then exits 143 (128 + SIGTERM)', async () => {
    const child = spawn(process.execPath, ['bin/tycli.mjs', 'app', '--port', '0'], {
      cwd: join(__dirname, '..', '..'),
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, TYCLI_HOME: dir },
    });
    let out = '';
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no URL printed: ${out}`)), 20_000);
      child.stdout.on('data', (c) => {
        out += c;
        const m = /^(http:\/\/127\.0\.0\.1:\d+\/)\n/m.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      child.on('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    const port = Number(new URL(url).port);
    const r = await get(port, '/');
    expect(r.status).toBe(200);
    expect(r.body).toContain('tysandbox chat');
    expect(String(r.headers['content-security-policy'])).not.toMatch(/'unsafe-eval'|'unsafe-inline'/);
    const code = await new Promise<number | null>((resolve) => {
      child.on('exit', (c) => resolve(c));
      child.kill('SIGTERM');
    });
    expect(code).toBe(143);
  });
  it('refuses a bad --port with a usage error', async () => {
    const child = spawn(process.execPath, ['bin/tycli.mjs', 'app', '--port', 'abc'], {
      cwd: join(__dirname, '..', '..'),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (c) => (err += c));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(code).toBe(2);
    expect(err).toMatch(/E_USAGE.*--port/);
  });
});
