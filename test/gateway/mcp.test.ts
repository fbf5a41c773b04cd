// tycli mcp serve --http as team gateway instances: two instances (each its own home) on one PostgreSQL store, MCP
// clients of the SDK with per-client tokens acting as user:NAME, sessions their opener's own, listChanged from a
// registration made elsewhere, the static token without an OAuth flow; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { usePostgres } from '../helpers/postgres.js';
import { env, jsonOf, machine, startInstance, tool, tycli, type Instance } from './harness.js';

const cluster = usePostgres();
let url = '';
let admin = '';
let instances: Instance[] = [];
const homes: string[] = [];
const settings = { permissions: { allow: ['tool(*)', 'registry(*)'] } };

async function token(principal: string): Promise<string> {
  return jsonOf(await tycli(admin, ['--json', 'token', 'create', '--principal', principal], env(url))).token as string;
}

async function mcpClient(
  i: Instance,
  bearer: string,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(i.url), {
    requestInit: { headers: { authorization: `Bearer ${bearer}` } },
  });
  const client = new Client({ name: 'gw-mcp-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

const post = (i: Instance, headers: Record<string, string>, body: unknown): Promise<Response> =>
  fetch(i.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      ...headers,
    },
    body: JSON.stringify(body),
  });

beforeAll(async () => {
  url = await cluster.pg.createDatabase('gateway_mcp');
  admin = machine(settings);
  homes.push(admin);
  expect((await tycli(admin, ['store', 'migrate'], env(url))).code).toBe(0);
  instances = await Promise.all(
    [0, 1].map(async () => {
      const home = machine(settings);
      homes.push(home);
      return startInstance(home, ['mcp', 'serve', '--http', '127.0.0.1:0'], env(url));
    }),
  );
}, 180_000);

afterAll(async () => {
  await Promise.all(instances.map((i) => i.stop()));
  for (const h of homes) rmSync(h, { recursive: true, force: true });
}, 60_000);

describe('tycli mcp serve --http: instances of a team gateway on one PostgreSQL store', () => {
  it('a tool registered elsewhere reaches a client of another instance as listChanged; its call runs and is audited as user:NAME', async () => {
    const [a, b] = instances as [Instance, Instance];
    const alice = await mcpClient(a, await token('alice'));
    const bob = await mcpClient(b, await token('bob'));
    let changed = 0;
    const heard = new Promise<void>((r) =>
      bob.client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        changed++;
        r();
      }),
    );
    expect((await bob.client.listTools()).tools.map((t) => t.name)).not.toContain('greet');
    // registered through the store from a third machine (the admin's CLI), not through either instance
    const manifest = join(admin, 'greet.json');
    writeFileSync(manifest, JSON.stringify(tool('greet', "return 'hi ' + a.who;", { who: { type: 'string' } })));
    const added = await tycli(admin, ['tool', 'add', manifest], env(url));
    expect(added.code, added.stderr).toBe(0);
    await heard;
    expect(changed).toBeGreaterThan(0);
    for (const c of [alice, bob]) expect((await c.client.listTools()).tools.map((t) => t.name)).toContain('greet');
    const r = await bob.client.callTool({ name: 'greet', arguments: { who: 'bob' } });
    expect(r.isError ?? false).toBe(false);
    expect(r.content).toEqual([{ type: 'text', text: 'hi bob' }]);
    const ra = await alice.client.callTool({ name: 'greet', arguments: { who: 'alice' } });
    expect(ra.content).toEqual([{ type: 'text', text: 'hi alice' }]);
    const records = jsonOf(await tycli(admin, ['--json', 'audit', '--tool', 'greet'], env(url), 120_000)).records as {
      principal?: string;
      decision?: string;
    }[];
    const principals = new Set(records.map((x) => x.principal));
    expect(principals).toContain('user:bob');
    expect(principals).toContain('user:alice');
    await alice.client.close();
    await bob.client.close();
  }, 120_000);

  it("a session is its opener's: another principal naming its id gets 404, the opener keeps using it", async () => {
    const a = instances[0]!;
    const carol = await mcpClient(a, await token('carol'));
    const sid = carol.transport.sessionId;
    expect(sid).toBeTruthy();
    const dave = await token('dave');
    const stolen = await post(
      a,
      { authorization: `Bearer ${dave}`, 'mcp-session-id': sid! },
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    );
    expect(stolen.status).toBe(404);
    expect((await carol.client.listTools()).tools).toBeInstanceOf(Array);
    await carol.client.close();
  }, 60_000);

  it('the server’s own token (a file per listening address) still works; no token is 401 without any OAuth flow', async () => {
    const a = instances[0]!;
    const file = join(a.home, 'run', `mcp-http-127.0.0.1-${a.port}.token`);
    const own = readFileSync(file, 'utf8').trim();
    const c = await mcpClient(a, own);
    expect((await c.client.listTools()).tools.map((t) => t.name)).toContain('greet');
    await c.client.close();
    // the other instance has its own file and its own token: one instance's token is refused by the other
    const other = readFileSync(
      join(instances[1]!.home, 'run', `mcp-http-127.0.0.1-${instances[1]!.port}.token`),
      'utf8',
    );
    expect(other.trim()).not.toBe(own);
    const refused = await post(
      instances[1]!,
      { authorization: `Bearer ${own}` },
      { jsonrpc: '2.0', id: 1, method: 'ping' },
    );
    expect(refused.status).toBe(401);
    const none = await post(a, {}, { jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(none.status).toBe(401);
    const challenge = none.headers.get('www-authenticate') ?? '';
    expect(challenge).toMatch(/^Bearer /);
    expect(challenge).not.toContain('resource_metadata');
    expect((await fetch(`${a.base}/.well-known/oauth-protected-resource/mcp`)).status).toBe(404);
    expect((await fetch(`${a.base}/healthz`)).status).toBe(200);
    expect((await fetch(`${a.base}/readyz`)).status).toBe(200);
  }, 60_000);
});
