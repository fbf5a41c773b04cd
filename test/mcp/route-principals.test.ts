// The MCP HTTP route of a team gateway: a bridge per principal, sessions their opener's own and counted per principal
// by the gateway's Admission (a principal's own least recently used idle session makes room, never another's); the
// principal comes from a test header here, as the gateway front (node/gateway/listen.ts, tested apart) sets it;
// test side.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import { FIXTURE, addNodeServer, tempHome } from './helpers.js';
import { McpBridge } from '../../node/mcp/bridge.js';
import { mcpRoute, type McpRoute } from '../../node/mcp/serve-http.js';
import { Admission } from '../../node/gateway/admission.js';

let home: string;
let cleanup: () => Promise<void>;
let route: McpRoute;
let server: Server;
let admission: Admission;
let url = '';
const bridges = new Map<string, McpBridge>();

beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
  await addNodeServer(home, 'fx', FIXTURE, [], { allow: ['search'] });
  admission = new Admission({ maxSessionsPerPrincipal: 2, maxSessions: 100 });
  route = mcpRoute({
    bridgeFor: (who) => {
      const key = who ?? 'static';
      let b = bridges.get(key);
      if (!b) {
        b = new McpBridge({ home, sandbox: 'web', ...(who ? { principal: who } : {}) });
        bridges.set(key, b);
      }
      return b;
    },
    endpoint: () => `${url}/mcp`,
  });
  server = createServer((req, res) => {
    const who = req.headers['x-test-principal'];
    void route.handle(req, res, { principal: typeof who === 'string' ? who : undefined }, (p) => {
      const r = admission.openSession(p);
      return r.ok ? r : { ok: false, message: admission.message(r.reason) };
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterEach(async () => {
  await route.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  for (const b of bridges.values()) await b.close();
  bridges.clear();
  await admission.close();
  await cleanup();
});

const init = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});
async function post(who: string, body: unknown, sid?: string): Promise<Response> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'x-test-principal': who,
  };
  if (sid !== undefined) headers['mcp-session-id'] = sid;
  const r = await fetch(`${url}/mcp`, { method: 'POST', headers, body: JSON.stringify(body) });
  return r;
}
async function open(who: string, id: number): Promise<string> {
  const r = await post(who, init(id));
  expect(r.status).toBe(200);
  await r.text();
  return r.headers.get('mcp-session-id') ?? '';
}
const ping = (who: string, sid: string) => post(who, { jsonrpc: '2.0', id: 99, method: 'ping' }, sid);

describe('MCP sessions per principal (a team gateway)', () => {
  it("a principal's third session ends its own least recently used one; another principal's sessions are untouched", async () => {
    const b1 = await open('user:bob', 1);
    const a1 = await open('user:alice', 2);
    const a2 = await open('user:alice', 3);
    expect(admission.sessionsOf('user:alice')).toBe(2);
    const a3 = await open('user:alice', 4);
    expect(admission.sessionsOf('user:alice')).toBe(2);
    expect((await ping('user:alice', a1)).status).toBe(404);
    for (const sid of [a2, a3]) expect((await ping('user:alice', sid)).status).toBe(200);
    expect((await ping('user:bob', b1)).status).toBe(200);
    expect(admission.sessionsOf('user:bob')).toBe(1);
    // each principal acts on a bridge of its own
    expect([...bridges.keys()].sort()).toEqual(['user:alice', 'user:bob']);
  });

  it('a session named by another principal is not found (404) and stays its owner’s', async () => {
    const a = await open('user:alice', 1);
    const stolen = await post('user:mallory', { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, a);
    expect(stolen.status).toBe(404);
    const del = await fetch(`${url}/mcp`, {
      method: 'DELETE',
      headers: { 'x-test-principal': 'user:mallory', 'mcp-session-id': a },
    });
    expect(del.status).toBe(404);
    expect((await ping('user:alice', a)).status).toBe(200);
  });

  it("a principal's bridge holds at most the route's maxSessions (8) even when admission allows more: its own least recently used idle one ends", async () => {
    await admission.close();
    admission = new Admission({ maxSessionsPerPrincipal: 16, maxSessions: 100 });
    const ids: string[] = [];
    for (let i = 0; i < 9; i++) ids.push(await open('user:alice', i + 1));
    expect(admission.sessionsOf('user:alice')).toBe(8);
    expect((await ping('user:alice', ids[0]!)).status).toBe(404);
    expect((await ping('user:alice', ids[8]!)).status).toBe(200);
  });

  it('a session ended by DELETE gives its place back', async () => {
    const a = await open('user:alice', 1);
    expect(admission.sessionsOf('user:alice')).toBe(1);
    const del = await fetch(`${url}/mcp`, {
      method: 'DELETE',
      headers: { 'x-test-principal': 'user:alice', 'mcp-session-id': a },
    });
    expect(del.status).toBeLessThan(300);
    await del.text();
    expect(admission.sessionsOf('user:alice')).toBe(0);
  });
});
