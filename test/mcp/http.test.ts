// The MCP bridge over streamable HTTP: a --url server (server-everything streamableHttp) and `mcp serve` over loopback
// HTTP; test side.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect as netConnect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { EVERYTHING, FakeGate, connect, tempHome, type Connected } from './helpers.js';
import { buildDefinition, saveDefinition } from '../../node/mcp/definitions.js';
import { RuledTransport, headersFromEnv } from '../../node/mcp/upstream.js';
import { killGroup } from '../../node/mcp/process.js';

let home: string;
let cleanup: () => Promise<void>;
let conn: Connected | undefined;
let peer: ChildProcess | undefined;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
});
afterEach(async () => {
  await conn?.close();
  conn = undefined;
  if (peer) await killGroup(peer, 500);
  peer = undefined;
  await cleanup();
});

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}
async function waitListening(port: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise<boolean>((r) => {
      const c = netConnect(port, '127.0.0.1');
      c.once('connect', () => (c.destroy(), r(true)));
      c.once('error', () => r(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('peer did not listen');
}

describe('a --url server (server-everything over streamable HTTP)', () => {
  it('lists and calls through the bridge with the same rules', async () => {
    const port = await freePort();
    peer = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
      env: { PATH: process.env.PATH ?? '', PORT: String(port) },
      stdio: 'ignore',
      detached: true,
    });
    await waitListening(port);
    await saveDefinition(
      home,
      buildDefinition({
        name: 'web',
        url: `http://127.0.0.1:${port}/mcp`,
        headers: ['X-Api-Key: k-123'],
        folder: '/',
        processEnv: {},
        allow: ['echo'],
      }),
    );
    const gate = new FakeGate(() => false);
    conn = await connect({ home, sandbox: 'h', gate });
    const names = (await conn.client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('web__echo');
    expect(names.some((n) => n.includes('sampling'))).toBe(false);
    const r = await conn.client.callTool({ name: 'web__echo', arguments: { message: 'over http' } });
    expect(JSON.stringify(r)).toContain('over http');
    await expect(conn.client.callTool({ name: 'web__get-env', arguments: {} })).rejects.toBeInstanceOf(McpError);
    expect(gate.asked.map((q) => q.target)).toEqual(['web/get-env']);
  }, 30_000);

  it('headers live in the definition environment as TYMCP_HEADER_n', () => {
    const def = buildDefinition({
      name: 'web',
      url: 'https://mcp.example.com/mcp',
      headers: ['Authorization: Bearer t0k'],
      folder: '/',
      processEnv: {},
    });
    expect(def.env.TYMCP_HEADER_1).toBe('Authorization: Bearer t0k');
    expect(headersFromEnv(def.env)).toEqual({ Authorization: 'Bearer t0k' });
  });

  it('server-to-client rules apply to any upstream transport', async () => {
    const sent: unknown[] = [];
    const inner: Transport = {
      start: async () => undefined,
      close: async () => undefined,
      send: async (m: JSONRPCMessage) => void sent.push(m),
    };
    const got: unknown[] = [];
    const t = new RuledTransport(inner);
    t.onmessage = (m) => void got.push(m);
    for (const m of [
      { jsonrpc: '2.0', id: 90, method: 'sampling/createMessage', params: {} },
      { jsonrpc: '2.0', id: 93, method: 'ping' },
      { jsonrpc: '2.0', method: 'x-vendor/anything' },
      { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
      { jsonrpc: '2.0', id: 1, result: {} },
    ])
      inner.onmessage?.(m as JSONRPCMessage);
    expect(got).toEqual([
      { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
      { jsonrpc: '2.0', id: 1, result: {} },
    ]);
    expect(sent).toEqual([
      expect.objectContaining({ id: 90, error: expect.objectContaining({ code: -32601 }) }),
      { jsonrpc: '2.0', id: 93, result: {} },
    ]);
  });
});

describe('tycli mcp serve over streamable HTTP (loopback, bearer token, Origin check)', () => {
  it('the SDK Client works with the token; no token, wrong token, foreign Origin or Host are refused; batches get -32600', async () => {
    const { McpBridge } = await import('../../node/mcp/bridge.js');
    const { serveHttp } = await import('../../node/mcp/serve-http.js');
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const { FIXTURE, addNodeServer } = await import('./helpers.js');
    await addNodeServer(home, 'fx', FIXTURE, [], { allow: ['received', 'slow'] });
    const bridge = new McpBridge({ home, sandbox: 'web' });
    const h = await serveHttp(bridge, { port: 0, maxSessions: 2, waitMs: 300 });
    try {
      const init = {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: { sampling: {} },
          clientInfo: { name: 'raw', version: '1' },
        },
      };
      const post = (body: unknown, headers: Record<string, string> = {}) =>
        fetch(h.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            authorization: `Bearer ${h.token}`,
            ...headers,
          },
          body: typeof body === 'string' ? body : JSON.stringify(body),
        });
      expect((await post(init, { authorization: '' })).status).toBe(401);
      expect((await post(init, { authorization: 'Bearer nope' })).status).toBe(401);
      expect((await post(init, { origin: 'https://evil.example' })).status).toBe(403);
      // DNS rebinding: a right token under a foreign Host name is refused
      const { request } = await import('node:http');
      const status = await new Promise<number>((resolve, reject) => {
        const u = new URL(h.url);
        const rq = request(
          {
            host: '127.0.0.1',
            port: u.port,
            path: '/mcp',
            method: 'POST',
            headers: {
              host: `evil.example:${u.port}`,
              authorization: `Bearer ${h.token}`,
              'content-type': 'application/json',
            },
          },
          (rs) => {
            rs.resume();
            resolve(rs.statusCode ?? 0);
          },
        );
        rq.once('error', reject);
        rq.end(JSON.stringify(init));
      });
      expect(status).toBe(421);
      const batch = await post([init]);
      expect(((await batch.json()) as { error: { code: number } }).error.code).toBe(-32600);
      const nullId = await post({ jsonrpc: '2.0', id: null, method: 'tools/call', params: { name: 'fx__received' } });
      expect(((await nullId.json()) as { error: { code: number } }).error.code).toBe(-32600);
      expect((await post({ jsonrpc: '2.0', method: 'tools/call', params: { name: 'fx__received' } })).status).toBe(202);
      expect((await post('a'.repeat(8 * 1024 * 1024 + 10))).status).toBe(413);
      // params that do not fit MCP's schema: -32602 with a short message (C7), before any session is looked up
      const badParams = (await (
        await post({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'fx__received', arguments: [1] } })
      ).json()) as { error: { code: number; message: string } };
      expect(badParams.error.code).toBe(-32602);
      expect(badParams.error.message).toMatch(/^invalid params for tools\/call: params\.arguments: /);

      const mk = () =>
        new StreamableHTTPClientTransport(new URL(h.url), {
          requestInit: { headers: { authorization: `Bearer ${h.token}` } },
        });
      const c1 = new Client({ name: 'c1', version: '1' }, { capabilities: { sampling: {} } });
      await c1.connect(mk());
      const r = await c1.callTool({ name: 'fx__received', arguments: {} });
      const info = JSON.parse((r.content as { text: string }[])[0]!.text) as {
        initCaps: unknown;
        received: { method: string; hasId: boolean; name?: string }[];
      };
      expect(info.initCaps).toEqual({});
      expect(
        info.received.filter((m) => m.method === 'tools/call').every((m) => m.hasId && m.name === 'received'),
      ).toBe(true);
      const c2 = new Client({ name: 'c2', version: '1' }, { capabilities: {} });
      await c2.connect(mk());
      expect(h.sessions).toBe(2);
      // both sessions with a call in flight: a third waits, and is answered 429 when no place frees in time
      const busy = [c1, c2].map((c) => c.callTool({ name: 'fx__slow', arguments: { ms: 1500 } }));
      await new Promise((r) => setTimeout(r, 200));
      const third = await post({ ...init, id: 5 });
      expect(third.status).toBe(429);
      // once the calls ended, the least recently used idle session is ended at once to let the next one in
      await Promise.all(busy);
      expect((await post({ ...init, id: 6 })).status).toBe(200);
      expect(h.sessions).toBe(2);
      await c2.close();
      await c1.close();
    } finally {
      await h.close();
      await bridge.close();
    }
  }, 30_000);
});

describe('per-message cap on a remote server', () => {
  it('a JSON body or one SSE event over the cap fails while streaming; smaller events pass', async () => {
    const { cappedFetch } = await import('../../node/mcp/upstream.js');
    const { createServer: createHttp } = await import('node:http');
    const srv = createHttp((req, res) => {
      if (req.url === '/json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('x'.repeat(5000));
      } else {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        // many small events: fine; then one big event
        for (let i = 0; i < 50; i++) res.write(`data: ${'y'.repeat(500)}\n\n`);
        res.end(req.url === '/sse-big' ? `data: ${'z'.repeat(5000)}\n\n` : '');
      }
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const base = `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
    try {
      const f = cappedFetch(2048);
      await expect((await f(`${base}/json`)).text()).rejects.toMatchObject({ code: 'E_MCP_OVERSIZE' });
      expect((await (await f(`${base}/sse-small`)).text()).length).toBeGreaterThan(2048);
      await expect((await f(`${base}/sse-big`)).text()).rejects.toMatchObject({ code: 'E_MCP_OVERSIZE' });
    } finally {
      await new Promise((r) => srv.close(r));
    }
  });
});
