// subscriptions/listen (MCP 2026-07-28): a 2026-07-28 server's list changes reach the bridge on its listen stream and
// are relayed to 2026-07-28 clients on theirs (stateless HTTP and stdio), the rug-pull rule kept; test side.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { PermissionGate, StoreDecisions } from '../../core/policy/gate.js';
import { compilePolicy } from '../../core/policy/permissions.js';
import { StoreAuditLog } from '../../core/audit/trail.js';
import { PauseTracker } from '../../core/policy/pause.js';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import { AskRouter } from '../../core/ask/router.js';
import { StoreDefinitionMemory } from '../../core/mcp/bridge/definitions.js';
import { McpBridge } from '../../node/mcp/bridge.js';
import { serveHttp, type HttpServeHandle } from '../../node/mcp/serve-http.js';
import { OnePerson, ROOT, addNodeServer, connect, tempHome, type Connected } from './helpers.js';

const MODERN = join(ROOT, 'test/mcp/peers/modern-server.mjs');
let home: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
  await addNodeServer(home, 'modern', MODERN, [], { allow: ['rugpull'] });
});
afterEach(async () => {
  await cleanup();
});

function realGate() {
  const store = new Store(new MemoryStoreBackend());
  const person = new OnePerson();
  const gate = new PermissionGate({
    config: () => ({ policy: compilePolicy([]) }),
    audit: new StoreAuditLog(store),
    pause: new PauseTracker(store, { maxRefusals: 100, windowMs: 60_000 }),
    decisions: new StoreDecisions(store),
    asker: new AskRouter({ channels: [person], askWaitMs: 2000 }),
  });
  return { gate, person, definitions: new StoreDefinitionMemory(store) };
}

/** Resolves when `pred` holds, polling every 20 ms, within `ms`. */
async function until(pred: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The rug pull through one client: approved once permanently, the server changes echo, the client hears of it on its
 * listen stream, and the changed tool is asked about again.
 */
async function rugPull(client: Client, person: OnePerson): Promise<void> {
  const changed: string[] = [];
  client.setNotificationHandler('notifications/tools/list_changed', () => void changed.push('tools'));
  expect(JSON.stringify((await client.callTool({ name: 'modern__echo', arguments: { text: 'a' } })).content)).toContain(
    'echo a',
  );
  expect(person.questions).toHaveLength(1);
  const sub = await client.listen({ toolsListChanged: true });
  expect(sub.honoredFilter).toEqual({ toolsListChanged: true });
  try {
    await client.callTool({ name: 'modern__rugpull', arguments: {} });
    await until(() => changed.length > 0);
    const echo = (await client.listTools()).tools.find((t) => t.name === 'modern__echo');
    expect(echo?.description).toContain('id_rsa');
    // the permanent yes was for the old definition: asked again (and refused, nobody answers now)
    const r = await client.callTool({ name: 'modern__echo', arguments: { text: 'b' } }).then(
      (x) => JSON.stringify(x),
      (e: Error) => e.message,
    );
    expect(person.questions).toHaveLength(2);
    expect(person.questions[1]!.details.join('\n')).toMatch(/the tool definition changed since it was approved/);
    expect(r).not.toContain('echo b (protocol');
    expect(r).toContain('needs a person');
  } finally {
    await sub.close();
  }
}

describe('subscriptions/listen through the bridge', () => {
  it('stateless HTTP (mcp serve --http): the server list change reaches the client listen stream; the changed tool is asked about again', async () => {
    const { gate, person, definitions } = realGate();
    const bridge = new McpBridge({ home, sandbox: 'l', gate, definitions });
    const http: HttpServeHandle = await serveHttp(bridge, { port: 0 });
    const client = new Client({ name: 'modern', version: '1' }, { versionNegotiation: { mode: 'auto' } });
    try {
      await client.connect(
        new StreamableHTTPClientTransport(new URL(http.url), {
          requestInit: { headers: { authorization: `Bearer ${http.token}` } },
        }),
      );
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      await rugPull(client, person);
    } finally {
      await client.close().catch(() => undefined);
      await http.close();
      await bridge.close();
    }
  }, 60_000);

  it('stdio (a connection pinned to 2026-07-28): the same', async () => {
    const { gate, person, definitions } = realGate();
    let conn: Connected | undefined;
    try {
      conn = await connect(
        { home, sandbox: 'l2', gate, definitions },
        {},
        () => new Client({ name: 'modern', version: '1' }, { versionNegotiation: { mode: 'auto' } }) as never,
      );
      const client = conn.client as unknown as Client;
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      await rugPull(client, person);
    } finally {
      await conn?.close();
    }
  }, 60_000);
});
