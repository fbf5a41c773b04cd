// tysandbox/1.1 end to end through `tycli serve`: a 1.0 and a 1.1 client side by side, tool/listChanged across two
// serve processes sharing one home, rpc.discover, pages over 250 tools, $/progress from a JavaScript and a Python tool,
// and every HTTP refusal as a JSON-RPC body with its documented status; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ProtocolClient } from '../../node/client.js';
import type { ListChangedParams, ProgressParams } from '../../protocol/registration.js';
import { openRpcDocument } from '../../core/registration/discover.js';
import { ROOT, cleanEnv, doubler, startHttp, stdioClient, tempHome, until, type HttpServer, BIN } from './helpers.js';
import { connectHttp, connectStdio } from '../../node/client.js';

const servers: HttpServer[] = [];
const clients: ProtocolClient[] = [];
beforeAll(() => {
  if (!existsSync(join(ROOT, 'dist', 'node', 'cli', 'main.js')))
    throw new Error('dist/ is missing: run `npm run build` first');
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  await Promise.all(servers.map((s) => s.stop()));
});
const keep = <T extends ProtocolClient>(c: T): T => (clients.push(c), c);
async function http(home: string, args: string[] = []): Promise<HttpServer> {
  const s = await startHttp(home, args);
  servers.push(s);
  return s;
}
const stdio11 = (home: string, name: string, o: { onListChanged?: (p: ListChangedParams) => void } = {}) =>
  connectStdio(['setsid', process.execPath, BIN, '--home', home, 'serve', '--rate', '1000'], {
    env: cleanEnv(home),
    cwd: home,
    name,
    version: '1.1.0',
    ...o,
  });

describe('tysandbox/1.1 through tycli serve', () => {
  it('a 1.0 client (the 1.0 wire of the typed client) and a 1.1 client side by side on one server', async () => {
    const home = await tempHome('v11-side');
    const s = await http(home);
    const old = keep(await connectHttp(s.url, s.token, { name: 'old', protocolVersion: 'tysandbox/1' }));
    const now = keep(await connectHttp(s.url, s.token, { name: 'new' }));
    expect(old.info).toMatchObject({ protocolVersion: 'tysandbox/1' });
    expect(old.info!.capabilities).toBeUndefined();
    expect(now.info).toMatchObject({ protocolVersion: 'tysandbox/1.1', capabilities: { notifications: [] } });
    await old.tool.add(doubler());
    // the 1.0 wire: tool/list answers an array; the typed client's list() reads every page on 1.1
    // (the command line also lists its built-in python tool when a python3 is on PATH)
    const oldList = (await old.request('tool/list', {})) as unknown as { name: string }[];
    expect(Array.isArray(oldList)).toBe(true);
    expect(oldList.map((t) => t.name)).toContain('double');
    const page = await now.request('tool/list', {});
    expect(Array.isArray(page)).toBe(false);
    expect(page.tools.map((t) => t.name)).toEqual(oldList.map((t) => t.name));
    expect(page.nextCursor).toBeUndefined();
    expect((await now.tool.list()).map((t) => t.name)).toEqual(oldList.map((t) => t.name));
    const oldStages: ProgressParams[] = [];
    const newStages: ProgressParams[] = [];
    await old.tool.run('double', { x: 2 }, { onProgress: (p) => oldStages.push(p) });
    await now.tool.run('double', { x: 2 }, { onProgress: (p) => newStages.push(p) });
    expect(oldStages.map((p) => p.stage)).toEqual(['resolved', 'done']);
    expect(newStages.map((p) => p.stage)).toEqual(['queued', 'started', 'done']);
    expect(newStages.at(-1)).toMatchObject({ outcome: 'ok' });
  });

  it('tool/listChanged across two tycli serve processes sharing one home (stdio and HTTP)', async () => {
    const home = await tempHome('v11-notify');
    const seenStdio: ListChangedParams[] = [];
    const seenHttp: ListChangedParams[] = [];
    const a = keep(await stdio11(home, 'watcher', { onListChanged: (p) => seenStdio.push(p) }));
    expect(a.info!.capabilities).toEqual({ notifications: ['tool/listChanged'] });
    const s = await http(home, ['--rate', '1000']);
    const b = keep(await connectHttp(s.url, s.token, { name: 'listener', onListChanged: (p) => seenHttp.push(p) }));
    const writer = keep(await stdioClient(home, [], 'writer')); // a third process: the one that changes things
    const changes = (l: ListChangedParams[]) => l.flatMap((p) => p.changes.map((c) => `${c.change} ${c.name}`));
    const { revision: r1 } = await writer.tool.add(doubler('alpha', 2));
    await until(() => changes(seenStdio).includes('activated alpha'), 'the stdio watcher to hear of alpha');
    await until(() => changes(seenHttp).includes('activated alpha'), 'the HTTP listener to hear of alpha');
    const { revision: r2 } = await writer.tool.add(doubler('alpha', 3));
    await until(() => changes(seenStdio).filter((c) => c === 'added alpha').length === 2, 'the second revision');
    // moving and removing a binding ask a person: this host's settings allow the writer to do both
    await b.tool.remove('alpha').catch(() => undefined); // refused (nobody to ask): nothing changes
    expect(changes(seenStdio)).not.toContain('removed alpha');
    // a terminal command in the same home (a fourth process) moves the binding
    const { runProcess } = await import('../e2e/helpers.js');
    const act = await runProcess(
      process.execPath,
      [BIN, '--home', home, 'tool', 'activate', 'alpha', r2, '--approve-replacement'],
      cleanEnv(home),
      home,
    );
    expect(act.code, act.stderr).toBe(0);
    const activated = (l: ListChangedParams[]) =>
      l.some((p) => p.changes.some((c) => c.change === 'activated' && c.revision === r2));
    await until(() => activated(seenStdio) && activated(seenHttp), 'both to hear of the activation');
    const rm = await runProcess(
      process.execPath,
      [BIN, '--home', home, 'tool', 'remove', 'alpha', '--approve-removal'],
      cleanEnv(home),
      home,
    );
    expect(rm.code, rm.stderr).toBe(0);
    await until(
      () => changes(seenStdio).includes('removed alpha') && changes(seenHttp).includes('removed alpha'),
      'both to hear of the removal',
    );
    expect(seenStdio.flatMap((p) => p.changes)[0]).toEqual({ name: 'alpha', change: 'added', revision: r1 });
    // the writer asked for nothing and got nothing
    expect(writer.info!.capabilities).toEqual({ notifications: [] });
  });

  it('rpc.discover answers the generated document over stdio, and over HTTP without a session', async () => {
    const home = await tempHome('v11-discover');
    const c = keep(await stdioClient(home, [], 'disc'));
    expect(await c.discover()).toEqual(openRpcDocument());
    const s = await http(home);
    const res = await fetch(s.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'rpc.discover' }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('tysandbox-session')).toBeNull();
    expect(JSON.parse((await res.text()).trim())).toEqual({ jsonrpc: '2.0', id: 1, result: openRpcDocument() });
  });

  it('tool/list pages over 250 tools in a stable order, every name once', async () => {
    const home = await tempHome('v11-pages');
    const c = keep(await stdio11(home, 'pager'));
    const names = Array.from({ length: 250 }, (_, i) => `tool${String(249 - i).padStart(3, '0')}`);
    for (const n of names) await c.tool.add(doubler(n, 2));
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const p = await c.tool.listPage(cursor === undefined ? {} : { cursor });
      seen.push(...p.tools.map((t) => t.name));
      cursor = p.nextCursor;
      pages++;
    } while (cursor !== undefined);
    expect(pages).toBe(3); // 100, 100, 50 (and the built-in python tool, when a python3 is on PATH)
    expect(seen.filter((n) => n.startsWith('tool'))).toEqual([...names].sort());
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...seen].sort());
    expect((await c.tool.list()).map((t) => t.name)).toEqual(seen);
  }, 120_000);

  it('$/progress from a JavaScript and a Python tool: queued, started, progress with fraction and message, done', async () => {
    const home = await tempHome('v11-progress');
    const c = keep(await stdio11(home, 'prog'));
    const params = { type: 'object', properties: {}, additionalProperties: false };
    await c.tool.add({
      name: 'jsprog',
      description: 'reports progress',
      parameters: params,
      execution: {
        kind: 'sandboxed-code',
        runtime: 'javascript',
        source: `export default async (_a, ctx) => {
          let refused = 'no';
          try { ctx.progress(2); } catch (e) { refused = e.name; }
          ctx.progress(0.25, 'a quarter');
          await new Promise((r) => setTimeout(r, 150));
          for (let i = 0; i < 1000; i++) ctx.progress(0.5 + i / 2000, 'flood ' + i);
          await new Promise((r) => setTimeout(r, 150));
          return refused;
        };`,
      },
    });
    await c.tool.add({
      name: 'pyprog',
      description: 'reports progress in Python',
      parameters: params,
      execution: {
        kind: 'sandboxed-code',
        runtime: 'python',
        source:
          'import asyncio\nasync def main(args, ctx):\n    ctx.progress(0.5, "half in python")\n    await asyncio.sleep(0.2)\n    ctx.progress(1.0)\n    return "ok"\n',
      },
    });
    const js: ProgressParams[] = [];
    expect((await c.tool.run('jsprog', {}, { onProgress: (p) => js.push(p) })).result).toBe('TypeError');
    expect(js[0]).toMatchObject({ stage: 'queued' });
    expect(js[1]).toMatchObject({ stage: 'started' });
    const reports = js.filter((p) => p.stage === 'progress');
    expect(reports[0]).toMatchObject({ fraction: 0.25, message: 'a quarter' });
    expect(reports.at(-1)).toMatchObject({ fraction: 0.5 + 999 / 2000, message: 'flood 999' });
    // a tool's tight loop of 1000 reports reaches the client as a handful (one per 100 ms at most, the latest kept)
    expect(reports.length).toBeLessThan(10);
    expect(js.at(-1)).toMatchObject({ stage: 'done', outcome: 'ok' });
    const py: ProgressParams[] = [];
    expect((await c.tool.run('pyprog', {}, { onProgress: (p) => py.push(p) })).result).toBe('ok');
    expect(py.map((p) => p.stage)).toEqual(['queued', 'started', 'progress', 'progress', 'done']);
    expect(py[2]).toMatchObject({ fraction: 0.5, message: 'half in python' });
    expect(py[3]).toMatchObject({ fraction: 1 });
  }, 180_000);

  it('a cancelled run: done says cancelled with E_ABORTED', async () => {
    const home = await tempHome('v11-cancel');
    const c = keep(await stdio11(home, 'canceller'));
    await c.tool.add(doubler('slow'));
    const stages: ProgressParams[] = [];
    const ac = new AbortController();
    const run = c.tool.run('slow', { x: 1, wait: 30_000 }, { signal: ac.signal, onProgress: (p) => stages.push(p) });
    await until(() => stages.some((p) => p.stage === 'started'), 'the run to start');
    ac.abort();
    await expect(run).rejects.toMatchObject({ code: 'E_ABORTED' });
    expect(stages.at(-1)).toMatchObject({ stage: 'done', outcome: 'cancelled', code: 'E_ABORTED' });
  }, 60_000);
});

describe('HTTP: every refusal is a JSON-RPC error body with its documented status', () => {
  let s: HttpServer;
  beforeAll(async () => {
    s = await http(await tempHome('v11-http'));
  });
  const call = (init: RequestInit & { path?: string; host?: string } = {}) => {
    const u = new URL(s.url);
    if (init.path) u.pathname = init.path;
    return fetch(u, { method: 'POST', ...init });
  };
  const good = { authorization: '', 'content-type': 'application/json' };
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tool/list', params: {} });
  const expectRefusal = async (res: Response, status: number, rpc: number, code: string) => {
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const b = (await res.json()) as {
      jsonrpc: string;
      error: { code: number; message: string; data: { code: string } };
    };
    expect(b).toMatchObject({ jsonrpc: '2.0', error: { code: rpc, data: { code } } });
    expect(b.error.message.length).toBeGreaterThan(5);
  };
  it('401, 403, 404, 405, 413, 415, 400', async () => {
    const auth = { ...good, authorization: `Bearer ${s.token}` };
    await expectRefusal(await call({ headers: good, body }), 401, -32000, 'E_CAPABILITY_DENIED');
    await expectRefusal(
      await call({ headers: { ...auth, origin: 'https://evil.example' }, body }),
      403,
      -32000,
      'E_CAPABILITY_DENIED',
    );
    await expectRefusal(await call({ headers: auth, body, path: '/other' }), 404, -32600, 'E_PROTOCOL');
    await expectRefusal(await call({ headers: auth, method: 'PUT', body }), 405, -32600, 'E_PROTOCOL');
    await expectRefusal(
      await call({ headers: { ...auth, 'content-type': 'text/plain' }, body }),
      415,
      -32600,
      'E_PROTOCOL',
    );
    await expectRefusal(
      await call({ headers: auth, body: 'x'.repeat(8 * 1024 * 1024 + 1) }),
      413,
      -32600,
      'E_PROTOCOL',
    );
    await expectRefusal(await call({ headers: auth, body: '{' }), 400, -32700, 'E_PROTOCOL');
    await expectRefusal(await call({ headers: auth, body }), 400, -32002, 'E_PROTOCOL');
    await expectRefusal(
      await call({ headers: { ...auth, 'tysandbox-session': 'gone' }, body }),
      404,
      -32600,
      'E_PROTOCOL',
    );
  });
  it('421 for a Host that is not this loopback address (DNS rebinding)', async () => {
    const { request } = await import('node:http');
    const u = new URL(s.url);
    const res = await new Promise<{ status: number; body: string; type: string }>((resolve, reject) => {
      const r = request(
        { host: '127.0.0.1', port: u.port, path: u.pathname, method: 'POST', headers: { host: 'evil.example' } },
        (m) => {
          let b = '';
          m.on('data', (d) => (b += d));
          m.on('end', () => resolve({ status: m.statusCode ?? 0, body: b, type: String(m.headers['content-type']) }));
        },
      );
      r.on('error', reject);
      r.end(body);
    });
    expect(res.status).toBe(421);
    expect(JSON.parse(res.body)).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, data: { code: 'E_PROTOCOL' } },
    });
  });
});
