// tysandbox/1 driven by a raw NDJSON writer on `tycli serve` and raw HTTP requests on `tycli serve --http`: framing
// refusals and the loopback guard; test side.
import { afterAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { revisionId } from '../../core/revisions/registry.js';
import { parseManifest } from '../../core/manifest/parse.js';
import { BIN, cleanEnv, doubler, startHttp, tempHome, until, type HttpServer } from './helpers.js';

/** A raw NDJSON peer on `tycli serve`: write lines, collect every line it answers. */
async function rawServe(home: string) {
  const child = spawn('setsid', [process.execPath, BIN, '--home', home, 'serve'], {
    env: cleanEnv(home),
    cwd: home,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += String(d);
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buf.slice(0, nl)) as Record<string, unknown>);
      buf = buf.slice(nl + 1);
    }
  });
  const write = (s: string): void => void child.stdin.write(s);
  const byId = async (id: unknown): Promise<Record<string, unknown>> => {
    await until(() => lines.some((l) => l.id === id && ('result' in l || 'error' in l)), `the answer to ${String(id)}`);
    return lines.find((l) => l.id === id && ('result' in l || 'error' in l))!;
  };
  const end = async (): Promise<number | null> => {
    child.stdin.end();
    return new Promise((r) => child.once('exit', (c) => r(c)));
  };
  return { lines, write, byId, end };
}

const init = (id: number | string = 1, v = 'tysandbox/1') =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: { protocolVersion: v, client: { name: 'raw', version: '1' } },
  }) + '\n';

describe('raw NDJSON on tycli serve', () => {
  it('refuses other versions listing the supported one, requests before initialize, batches, id-less requests, bad JSON and oversize lines', async () => {
    const s = await rawServe(await tempHome('raw'));
    s.write(JSON.stringify({ jsonrpc: '2.0', id: 'early', method: 'tool/list', params: {} }) + '\n');
    expect((await s.byId('early')).error).toMatchObject({ code: -32002, data: { code: 'E_PROTOCOL' } });
    s.write(init(0, 'tysandbox/0'));
    expect((await s.byId(0)).error).toMatchObject({
      code: -32000,
      data: { code: 'E_PROTOCOL', supported: ['tysandbox/1', 'tysandbox/1.1'] },
    });
    s.write(init(1));
    expect((await s.byId(1)).result).toMatchObject({ protocolVersion: 'tysandbox/1', principal: 'protocol:raw' });
    const n = s.lines.length;
    s.write('[' + JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tool/list', params: {} }) + ']\n');
    s.write(JSON.stringify({ jsonrpc: '2.0', method: 'tool/add', params: { manifest: doubler('sneaky') } }) + '\n');
    s.write('{not json\n');
    s.write(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'big',
        method: 'tool/add',
        params: { manifest: { pad: 'x'.repeat(8 * 1024 * 1024) } },
      }) + '\n',
    );
    s.write(JSON.stringify({ jsonrpc: '2.0', id: null, method: 'tool/list' }) + '\n');
    s.write(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tool/list', params: {} }) + '\n');
    const list = await s.byId(2);
    const refusals = s.lines.slice(n).filter((l) => l.id === null);
    expect(refusals.map((l) => (l.error as { code: number }).code)).toEqual([-32600, -32600, -32700, -32600, -32600]);
    for (const r of refusals) expect((r.error as { data: { code: string } }).data.code).toBe('E_PROTOCOL');
    expect(JSON.stringify(refusals[1])).toContain('without an id');
    expect(JSON.stringify(refusals[3])).toContain('over 8388608 bytes');
    expect(s.lines.some((l) => l.id === 9 || l.id === 'big')).toBe(false); // never run, never answered by id
    expect((list.result as { name: string }[]).some((t) => t.name === 'sneaky')).toBe(false);
    expect(await s.end()).toBe(0);
  });

  it("answers to malformed lines (id null) keep their place in the input: never ahead of earlier requests' answers", async () => {
    const s = await rawServe(await tempHome('raw-order'));
    const req = (id: number, method: string, params: unknown) =>
      JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n';
    // Everything at once, in one write: the server reads these lines together.
    s.write(
      init(1) +
        req(2, 'tool/add', { manifest: doubler('ordered') }) +
        req(3, 'tool/list', {}) +
        req(4, 'tool/show', { ref: 'ordered' }) +
        '{not json\n' +
        req(5, 'tool/list', {}) +
        JSON.stringify({ jsonrpc: '2.0', method: 'tool/list', params: {} }) +
        '\n' +
        req(6, 'tool/show', { ref: 'nosuch' }),
    );
    await s.byId(6);
    const answers = s.lines.filter((l) => 'result' in l || 'error' in l).map((l) => l.id);
    expect(answers).toEqual([1, 2, 3, 4, null, 5, null, 6]);
    expect(await s.end()).toBe(0);
  });

  it('register, run (notifications carry the id) and cancel with raw lines; a manifest error names the field', async () => {
    const s = await rawServe(await tempHome('raw-run'));
    s.write(init());
    await s.byId(1);
    const m = doubler('double');
    s.write(JSON.stringify({ jsonrpc: '2.0', id: 'add', method: 'tool/add', params: { manifest: m } }) + '\n');
    expect((await s.byId('add')).result).toEqual({
      revision: await revisionId(parseManifest(m)),
      name: 'double',
      active: true,
      created: true,
    });
    s.write(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'bad',
        method: 'tool/add',
        params: { manifest: { ...m, name: 'has space' } },
      }) + '\n',
    );
    expect((await s.byId('bad')).error).toMatchObject({
      code: -32000,
      data: { code: 'E_INVALID_MANIFEST', path: 'name' },
    });
    // a static import in the source: where and which, as manifest.md says
    s.write(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'imp',
        method: 'tool/add',
        params: {
          manifest: {
            ...m,
            name: 'imports',
            execution: { ...(m.execution as object), source: 'import fs from "fs";\nexport default async () => fs;' },
          },
        },
      }) + '\n',
    );
    expect((await s.byId('imp')).error).toMatchObject({
      code: -32000,
      data: { code: 'E_INVALID_MANIFEST', path: 'execution.source', line: 1, column: 16, import: 'fs' },
    });
    s.write(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'syn',
        method: 'tool/add',
        params: {
          manifest: {
            ...m,
            name: 'broken',
            execution: { ...(m.execution as object), source: 'export default async () => {;' },
          },
        },
      }) + '\n',
    );
    expect((await s.byId('syn')).error).toMatchObject({
      code: -32000,
      data: { code: 'E_INVALID_MANIFEST', path: 'execution.source', line: 1 },
    });
    s.write(
      JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tool/run', params: { ref: 'double', arguments: { x: 4 } } }) +
        '\n',
    );
    expect((await s.byId(7)).result).toMatchObject({ result: 8 });
    const notes = s.lines.filter((l) => l.method === '$/progress' || l.method === '$/log');
    expect(notes.map((l) => l.method)).toEqual(['$/progress', '$/log', '$/progress']);
    for (const l of notes) expect((l.params as { id: unknown }).id).toBe(7);
    s.write(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 8,
        method: 'tool/run',
        params: { ref: 'double', arguments: { x: 1, wait: 30_000 } },
      }) + '\n',
    );
    await until(
      () => s.lines.some((l) => l.method === '$/progress' && (l.params as { id: unknown }).id === 8),
      'run 8 to start',
    );
    s.write(JSON.stringify({ jsonrpc: '2.0', method: '$/cancel', params: { id: 8 } }) + '\n');
    expect((await s.byId(8)).error).toMatchObject({ data: { code: 'E_ABORTED' } });
    s.write(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 10,
        method: 'tool/run',
        params: { ref: 'double', arguments: { x: 1, __proto__: { x: 5 } } },
      }).replace('"x":1}', '"x":1,"__proto__":{"x":5}}') + '\n',
    );
    expect((await s.byId(10)).error).toMatchObject({ code: -32602 });
    expect(await s.end()).toBe(0);
  });
});

describe('raw HTTP on tycli serve --http', () => {
  let srv: HttpServer | undefined;
  afterAll(async () => srv?.stop());

  it('the loopback guard of mcp serve --http: token (401), Host (421), Origin (403); oversize 413; sessions by header; framing refusals', async () => {
    srv = await startHttp(await tempHome('raw-http'));
    const { url, token } = srv;
    const port = new URL(url).port;
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
        body,
      });
    expect((await post(init(), { authorization: 'Bearer nope' })).status).toBe(401);
    expect((await post(init(), { authorization: '' })).status).toBe(401);
    expect((await post(init(), { origin: 'https://evil.example' })).status).toBe(403);
    // a DNS-rebinding Host, sent on a raw socket (fetch sets Host itself)
    const { request } = await import('node:http');
    const status = await new Promise<number>((r) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: Number(port),
          path: '/tysandbox',
          method: 'POST',
          headers: {
            host: `evil.example:${port}`,
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
          },
        },
        (res) => {
          res.resume();
          r(res.statusCode ?? 0);
        },
      );
      req.end(init());
    });
    expect(status).toBe(421);
    expect((await post('x'.repeat(8 * 1024 * 1024 + 1))).status).toBe(413);
    // no session yet
    expect((await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tool/list', params: {} }))).status).toBe(400);
    const r = await post(init());
    expect(r.status).toBe(200);
    const sid = r.headers.get('tysandbox-session')!;
    expect(sid).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse((await r.text()).trim())).toMatchObject({ id: 1, result: { principal: 'protocol:raw' } });
    const list = await post(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tool/list', params: {} }), {
      'tysandbox-session': sid,
    });
    expect(list.headers.get('content-type')).toBe('application/x-ndjson');
    expect(JSON.parse((await list.text()).trim())).toMatchObject({ id: 2, result: expect.any(Array) });
    const batch = await post(`[${JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tool/list' })}]`, {
      'tysandbox-session': sid,
    });
    expect(await batch.json()).toMatchObject({ id: null, error: { code: -32600, data: { code: 'E_PROTOCOL' } } });
    const sess = { 'tysandbox-session': sid };
    expect(
      await (await post(JSON.stringify({ jsonrpc: '2.0', method: 'tool/list', params: {} }), sess)).json(),
    ).toMatchObject({ id: null, error: { code: -32600, data: { code: 'E_PROTOCOL' } } });
    expect(await (await post('{nope', sess)).json()).toMatchObject({ id: null, error: { code: -32700 } });
    const unknown = await post(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tool/frobnicate', params: {} }), sess);
    expect(JSON.parse((await unknown.text()).trim())).toMatchObject({
      id: 5,
      error: { code: -32601, data: { code: 'E_PROTOCOL' } },
    });
    const other = await post(init(6, 'tysandbox/2'));
    expect(other.headers.get('tysandbox-session')).toBeNull(); // a failed initialize opens no session
    expect(JSON.parse((await other.text()).trim())).toMatchObject({
      id: 6,
      error: { data: { code: 'E_PROTOCOL', supported: ['tysandbox/1', 'tysandbox/1.1'] } },
    });
    expect(
      (
        await post(JSON.stringify({ jsonrpc: '2.0', method: '$/cancel', params: { id: 99 } }), {
          'tysandbox-session': sid,
        })
      ).status,
    ).toBe(202);
    expect(
      (await fetch(url, { method: 'DELETE', headers: { authorization: `Bearer ${token}`, 'tysandbox-session': sid } }))
        .status,
    ).toBe(204);
    expect(
      (
        await post(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tool/list', params: {} }), {
          'tysandbox-session': sid,
        })
      ).status,
    ).toBe(404);
  });
});
