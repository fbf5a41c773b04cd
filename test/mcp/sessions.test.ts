// Session limits of the MCP bridge with real server processes: 9th session, 3rd concurrent start, idle end, no orphans;
// test side.
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { FIXTURE, PairTransport, addNodeServer, groupAlive, tempHome } from './helpers.js';
import { McpBridge } from '../../node/mcp/bridge.js';
import { serveStream } from '../../node/mcp/serve.js';
import type { PoolLimits } from '../../core/mcp/upstream/pool.js';

let home: string;
let cleanup: () => Promise<void>;
let bridge: McpBridge | undefined;
const sessions: { client: Client; end: () => Promise<void> }[] = [];

beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
});
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.end();
  await bridge?.close();
  bridge = undefined;
  await cleanup();
});

function makeBridge(limits: Partial<PoolLimits>): McpBridge {
  bridge = new McpBridge({ home, sandbox: 'lim', limits });
  return bridge;
}

/** One more client session on the same bridge (same sandbox). */
async function session(b: McpBridge): Promise<{ client: Client; end: () => Promise<void> }> {
  const toServer = new PassThrough();
  const fromServer = new PassThrough();
  const done = serveStream(b, toServer, fromServer);
  const client = new Client({ name: 't', version: '1' }, { capabilities: {} });
  await client.connect(new PairTransport(toServer, fromServer));
  const s = {
    client,
    end: async () => {
      await client.close().catch(() => undefined);
      toServer.end();
      await done;
    },
  };
  sessions.push(s);
  return s;
}

async function info(c: Client): Promise<{ pgid: number; childPid?: number }> {
  const r = await c.callTool({ name: 'fx__received', arguments: {} });
  return JSON.parse((r.content as { text: string }[])[0]!.text);
}
async function stable(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (e) {
    if (e instanceof McpError) return (e.data as { code?: string }).code;
    throw e;
  }
  return undefined;
}

describe('MCP session limits', () => {
  it('each client session gets its own server; a 9th in one sandbox gets E_BUSY; a freed place lets it in', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { allow: ['received'] });
    const b = makeBridge({ waitMs: 300 });
    const pgids = new Set<number>();
    const open: Client[] = [];
    for (let i = 0; i < 8; i++) {
      const s = await session(b);
      open.push(s.client);
      pgids.add((await info(s.client)).pgid);
    }
    expect(pgids.size).toBe(8);
    const ninth = await session(b);
    expect(await stable(info(ninth.client))).toBe('E_BUSY');
    expect(b.pool.size).toBe(8);
    // one session ends: its server stops and the place is free
    const first = sessions[0]!;
    await first.end();
    const gone = [...pgids].filter((p) => !groupAlive(p));
    expect(gone.length).toBe(1);
    expect((await info(ninth.client)).pgid).toBeGreaterThan(0);
  }, 30_000);

  it('at most 2 start at once: a 3rd still waiting when its wait runs out gets E_BUSY; the slow ones are kept', async () => {
    // initialize starts the servers behind the bridge (their instructions are relayed), so the starts happen there
    await addNodeServer(home, 'fx', FIXTURE, [], { allow: ['received'], env: { FX_INIT_DELAY: '3000' } });
    const b = makeBridge({ waitMs: 300 });
    const s1p = session(b);
    const s2p = session(b);
    for (let i = 0; i < 250 && b.pool.size < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(b.pool.size).toBe(2);
    // the 3rd gets no place within its wait: initialize answers without that server, and a call is E_BUSY
    const s3 = await session(b);
    expect(await stable(info(s3.client))).toBe('E_BUSY');
    const [s1, s2] = await Promise.all([s1p, s2p]);
    const [i1, i2] = await Promise.all([info(s1.client), info(s2.client)]);
    expect(i1.pgid).not.toBe(i2.pgid);
    // the slow-started sessions are kept for their next call
    expect((await info(s1.client)).pgid).toBe(i1.pgid);
  }, 30_000);

  it('a session with no call for the idle time ends with its server', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { allow: ['received'] });
    const b = makeBridge({ idleMs: 200 });
    const s = await session(b);
    const { pgid } = await info(s.client);
    expect(groupAlive(pgid)).toBe(true);
    for (let i = 0; i < 100 && groupAlive(pgid); i++) await new Promise((r) => setTimeout(r, 20));
    expect(groupAlive(pgid)).toBe(false);
    expect(b.pool.size).toBe(0);
    // the next call starts a new one
    expect((await info(s.client)).pgid).not.toBe(pgid);
  }, 30_000);

  it('stopping kills the whole process group, children included (no orphans behind a launcher)', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { allow: ['received'], env: { FX_CHILD: '1' } });
    const b = makeBridge({});
    const s = await session(b);
    const { pgid, childPid } = await info(s.client);
    expect(childPid).toBeGreaterThan(0);
    process.kill(childPid!, 0); // alive
    await s.end();
    const alive = (pid: number): boolean => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    for (let i = 0; i < 100 && alive(childPid!); i++) await new Promise((r) => setTimeout(r, 20));
    expect(alive(childPid!)).toBe(false);
    expect(groupAlive(pgid)).toBe(false);
  }, 30_000);

  it('a client that closes before its session started gets none and holds no place', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { allow: ['received'], env: { FX_INIT_DELAY: '600' } });
    const b = makeBridge({});
    const s = await session(b);
    const p = info(s.client).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100));
    expect(b.pool.size).toBe(1);
    await s.end();
    await p;
    expect(b.pool.size).toBe(0);
  }, 30_000);
});
