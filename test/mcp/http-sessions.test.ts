// HTTP client sessions of `mcp serve --http` end when idle and make room least-recently-used first, never one with a
// call in flight; test side.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { FIXTURE, addNodeServer, tempHome } from './helpers.js';
import { McpBridge } from '../../node/mcp/bridge.js';
import { serveHttp, type HttpServeHandle } from '../../node/mcp/serve-http.js';

let home: string;
let cleanup: () => Promise<void>;
let bridge: McpBridge;
let h: HttpServeHandle;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
  await addNodeServer(home, 'fx', FIXTURE, [], { allow: ['search', 'slow'] });
  bridge = new McpBridge({ home, sandbox: 'web' });
});
afterEach(async () => {
  await h?.close();
  await bridge.close();
  await cleanup();
});

const init = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});
function post(body: unknown, sid?: string): Promise<Response> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${h.token}`,
  };
  if (sid !== undefined) headers['mcp-session-id'] = sid;
  return fetch(h.url, { method: 'POST', headers, body: JSON.stringify(body) });
}
async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
const client = async (): Promise<Client> => {
  const c = new Client({ name: 'sdk', version: '1' }, { capabilities: {} });
  await c.connect(
    new StreamableHTTPClientTransport(new URL(h.url), {
      requestInit: { headers: { authorization: `Bearer ${h.token}` } },
    }),
  );
  return c;
};

describe('HTTP client sessions never leak places', () => {
  it('12 sessions opened without DELETE, then a 13th initialize is answered within 2 s', async () => {
    h = await serveHttp(bridge, { port: 0, waitMs: 60_000 });
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await post(init(i + 1));
      expect(r.status).toBe(200);
      ids.push(r.headers.get('mcp-session-id') ?? '');
      await r.text();
    }
    expect(h.sessions).toBe(8);
    const t0 = Date.now();
    const r = await post(init(13));
    expect(r.status).toBe(200);
    expect(Date.now() - t0).toBeLessThan(2000);
    // the least recently used ones were ended: the first session is gone, the last one still answers
    const gone = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, ids[0]);
    expect(gone.status).toBe(404);
    const live = await post({ jsonrpc: '2.0', id: 2, method: 'ping' }, ids[11]);
    expect(live.status).toBe(200);
  }, 30_000);

  it('the SDK Client.close() (no DELETE) leaves a session that ends after session_idle', async () => {
    h = await serveHttp(bridge, { port: 0, idleMs: 1000 });
    const c = await client();
    expect((await c.callTool({ name: 'fx__search', arguments: { q: 'a' } })).isError).toBeFalsy();
    await c.close();
    expect(h.sessions).toBe(1);
    await until(() => h.sessions === 0);
  }, 30_000);

  it('a session with a call in flight is never evicted nor expired; the newcomer waits for it', async () => {
    h = await serveHttp(bridge, { port: 0, maxSessions: 1, idleMs: 1000, waitMs: 20_000 });
    const c = await client();
    const slow = c.callTool({ name: 'fx__slow', arguments: { ms: 2500 } });
    await new Promise((r) => setTimeout(r, 300));
    let answered = false;
    const next = post(init(2)).then((r) => ((answered = true), r));
    // past session_idle the call is still running: its session stays, the newcomer still waits
    await new Promise((r) => setTimeout(r, 1500));
    expect(answered).toBe(false);
    expect(h.sessions).toBe(1);
    expect(JSON.stringify(await slow)).toContain('slept');
    expect((await next).status).toBe(200);
    await c.close();
  }, 30_000);
});
