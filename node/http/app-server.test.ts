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
  send?: string,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    r.on('error', reject);
    r.end(send);
  });
}

/** PUT /app/connect as the app's own page sends it (Origin and Sec-Fetch-Site of the page, a JSON body). */
function putConnect(port: number, origins: unknown, headers: Record<string, string> = {}) {
  return get(
    port,
    '/app/connect',
    {
      origin: `http://127.0.0.1:${port}`,
      'sec-fetch-site': 'same-origin',
      'content-type': 'application/json',
      ...headers,
    },
    'PUT',
    JSON.stringify({ origins }),
  );
}

function directivesOf(csp: string): Record<string, string[]> {
  return Object.fromEntries(
    csp
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .map(([k, ...v]) => [k!, v]),
  );
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
    // Trusted Types: every script sink needs a TrustedHTML/TrustedScript(URL), and only the one named policy exists
    expect(directives['require-trusted-types-for']).toEqual(["'script'"]);
    expect(directives['trusted-types']).toEqual(['tysandbox']);
    // no endpoint configured yet: the page connects to its own origin only, never to any address
    expect(directives['connect-src']).toEqual(["'self'"]);
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

describe('connect origins (PUT /app/connect)', () => {
  it("lists only the origins the app's own page configured, each exactly, in the page's connect-src", async () => {
    const s = await startAppServer({ dir, port: 0 });
    try {
      expect(JSON.parse((await get(s.port, '/app/connect')).body)).toEqual({ origins: [] });
      const ok = await putConnect(s.port, [
        'http://127.0.0.1:11434',
        'https://api.openai.com',
        'https://*.example.org',
      ]);
      expect(ok.status).toBe(200);
      const csp = String((await get(s.port, '/')).headers['content-security-policy']);
      expect(directivesOf(csp)['connect-src']).toEqual([
        "'self'",
        'http://127.0.0.1:11434',
        'https://*.example.org',
        'https://api.openai.com',
      ]);
      expect(csp).not.toMatch(/connect-src[^;]*(?:\shttps?:(?:\s|;|$)|\*(?:\s|;|$))/);
      expect(JSON.parse((await get(s.port, '/app/connect')).body).origins).toHaveLength(3);
    } finally {
      await s.close();
    }
  });

  it('refuses a change from another page, another site, a form post or with anything that is not an origin', async () => {
    const s = await startAppServer({ dir, port: 0 });
    try {
      const bad: [Record<string, string>, unknown, number][] = [
        [{ origin: 'http://evil.example' }, ['https://evil.example'], 403],
        [{ origin: `http://127.0.0.1:${s.port + 1}` }, ['https://evil.example'], 403],
        [{ 'sec-fetch-site': 'cross-site' }, ['https://evil.example'], 403],
        [{ 'content-type': 'text/plain' }, ['https://evil.example'], 415],
        [{}, ['*'], 400],
        [{}, ['https:'], 400],
        [{}, ["'unsafe-inline'"], 400],
        [{}, ['https://a.example/path'], 400],
        [{}, ['https://user:pw@a.example'], 400],
        [{}, ['https://a.example; script-src *'], 400],
        [{}, ['ws://a.example'], 400],
        [{}, 'https://a.example', 400],
        [{}, Array.from({ length: 201 }, (_, i) => `https://a${i}.example`), 400],
      ];
      for (const [h, origins, status] of bad)
        expect((await putConnect(s.port, origins, h)).status, JSON.stringify(h)).toBe(status);
      const noOrigin = await get(
        s.port,
        '/app/connect',
        { 'content-type': 'application/json' },
        'PUT',
        '{"origins":[]}',
      );
      expect(noOrigin.status).toBe(403);
      expect(JSON.parse((await get(s.port, '/app/connect')).body)).toEqual({ origins: [] });
      expect(directivesOf(String((await get(s.port, '/')).headers['content-security-policy']))['connect-src']).toEqual([
        "'self'",
      ]);
    } finally {
      await s.close();
    }
  });

  it('keeps the list in the connect file across restarts (0600), per port', async () => {
    const file = join(dir, 'state', 'connect.json');
    const a = await startAppServer({ dir, port: 0, connectFile: () => file });
    expect((await putConnect(a.port, ['https://api.anthropic.com'])).status).toBe(200);
    await a.close();
    const b = await startAppServer({ dir, port: 0, connectFile: (p) => (p > 0 ? file : '') });
    try {
      expect(JSON.parse((await get(b.port, '/app/connect')).body)).toEqual({ origins: ['https://api.anthropic.com'] });
      const { stat } = await import('node:fs/promises');
      expect((await stat(file)).mode & 0o777).toBe(0o600);
    } finally {
      await b.close();
    }
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
