// The bridge's direct tools/call path under 2026-07-28 (stateless envelope): the same answers as the SDK Server's path,
// the era of each request checked, odd envelopes left to the SDK; test side.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Client } from '@modelcontextprotocol/client';
import { EVERYTHING, ROOT, addNodeServer, connect, tempHome, type Connected } from './helpers.js';
import { McpBridge } from '../../node/mcp/bridge.js';

const MODERN = join(ROOT, 'test/mcp/peers/modern-server.mjs');
let home: string;
let cleanup: () => Promise<void>;
const open: Connected[] = [];
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
});
afterEach(async () => {
  vi.restoreAllMocks();
  for (const c of open.splice(0)) await c.close();
  await cleanup();
});

/**
 * A 2.x SDK client (auto negotiation: server/discover, then every request enveloped) on an in-process bridge session.
 */
async function modernSession(): Promise<Connected> {
  const c = await connect(
    { home, sandbox: 'm' },
    {},
    (c1) =>
      new Client(
        { name: 'modern-client', version: '1' },
        { versionNegotiation: { mode: 'auto' } },
      ) as unknown as typeof c1,
  );
  open.push(c);
  expect((c.client as unknown as Client).getNegotiatedProtocolVersion()).toBe('2026-07-28');
  return c;
}

/** Record, for every tools/call offered to a bridge's direct path from now on, its id and whether the path took it. */
function tookDirect(): [unknown, boolean][] {
  const seen: [unknown, boolean][] = [];
  const own = McpBridge.prototype.directPath;
  vi.spyOn(McpBridge.prototype, 'directPath').mockImplementation(function (this: McpBridge, sessionId, reply) {
    const d = own.call(this, sessionId, reply);
    return {
      ...d,
      request: (m, pinned) => {
        const took = d.request(m, pinned);
        seen.push([m.id, took]);
        return took;
      },
    };
  });
  return seen;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** The wire message the bridge sent with this id (waits up to 5 s). */
async function answer(c: Connected, id: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 500; i++) {
    const m = c.transport.raw.find((x) => (x as { id?: unknown }).id === id);
    if (m !== undefined) return m as Record<string, unknown>;
    await sleep(10);
  }
  throw new Error(`no answer to ${id}`);
}
const envelope = (extra: Record<string, unknown> = {}) => ({
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  ...extra,
});
const call = (
  id: string,
  name: string,
  args: Record<string, unknown>,
  meta: Record<string, unknown> | null = envelope(),
) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
  }) + '\n';

describe('2026-07-28 tools/call on the direct path', () => {
  it('after the request that pins the era, calls skip the SDK Server and are answered exactly as it answers (resultType, serverInfo)', async () => {
    await addNodeServer(home, 'ev', EVERYTHING, ['stdio'], { allow: ['echo'] });
    await addNodeServer(home, 'modern', MODERN, [], { allow: ['echo'] });
    const taken = tookDirect();
    for (const [server, args] of [
      ['ev', { message: 'same' }],
      ['modern', { text: 'same' }],
    ] as const) {
      // a connection of its own for each: its first call pins the era (the SDK Server answers it), the second is direct
      const c = await modernSession();
      const name = `${server}__echo`;
      c.transport.writeRaw(call(`${server}-1`, name, args));
      const first = await answer(c, `${server}-1`);
      c.transport.writeRaw(call(`${server}-2`, name, args));
      const second = await answer(c, `${server}-2`);
      expect(second.result, server).toEqual(first.result);
      expect((second.result as { resultType?: unknown }).resultType).toBe('complete');
      const r = await c.client.callTool({ name, arguments: args });
      expect(JSON.stringify(r.content)).toContain('same');
      expect(c.logs.filter((l) => l.includes('"tools/call"'))).toEqual(
        Array(3).fill(JSON.stringify({ server, method: 'tools/call', name: 'echo', outcome: 'ok' })),
      );
    }
    expect(taken.map(([id, took]) => `${String(id)}:${took}`)).toEqual([
      'ev-1:false',
      'ev-2:true',
      '0:true',
      'modern-1:false',
      'modern-2:true',
      '0:true',
    ]);
    // the SDK Server's answer names the bridge; a 2026-07-28 upstream's own identity is kept, as the SDK keeps it
    const metaOf = (c: Connected, id: string) =>
      (
        c.transport.raw.find((m) => (m as { id?: unknown }).id === id) as {
          result: { _meta?: Record<string, unknown> };
        }
      ).result._meta?.['io.modelcontextprotocol/serverInfo'];
    expect(metaOf(open[0]!, 'ev-2')).toEqual({ name: 'tysandbox', version: '0.1.0' });
    expect(metaOf(open[1]!, 'modern-2')).toEqual({ name: 'modern-fixture', version: '1.0.0' });
  }, 60_000);

  it('progress and refusals on the direct path are what the SDK path sends', async () => {
    await addNodeServer(home, 'ev', EVERYTHING, ['stdio'], { allow: ['echo', 'trigger-long-running-operation'] });
    const taken = tookDirect();
    // the same refusal, once as a connection's first call (the SDK Server answers) and once after it (direct)
    const a = await modernSession();
    a.transport.writeRaw(call('x', 'ev__nope', {}));
    const b = await modernSession();
    const viaSdk = vi.spyOn(b.bridge, 'callBridged');
    await b.client.callTool({ name: 'ev__echo', arguments: { message: 'pin' } });
    b.transport.writeRaw(call('x', 'ev__nope', {}));
    const [sdkAnswer, directAnswer] = [await answer(a, 'x'), await answer(b, 'x')];
    expect(directAnswer).toEqual(sdkAnswer);
    expect((directAnswer.error as { data?: { code?: string } }).data?.code).toBe('E_UNKNOWN_TOOL');
    // an argument the tool's schema does not list: a tool execution error, nothing forwarded
    b.transport.writeRaw(call('y', 'ev__echo', { message: 'm', bogus: 1 }));
    const bad = (await answer(b, 'y')).result as { isError?: boolean; resultType?: string };
    expect([bad.isError, bad.resultType]).toEqual([true, 'complete']);
    const progress: number[] = [];
    const r = await (b.client as unknown as Client).callTool(
      { name: 'ev__trigger-long-running-operation', arguments: { duration: 0.2, steps: 2 } },
      { onprogress: (p) => void progress.push(p.progress) },
    );
    expect(progress).toEqual([1, 2]);
    expect(JSON.stringify(r.content)).toContain('completed');
    // pin (SDK), then unknown, bad argument and progress calls: all three direct (callBridged runs only for the
    // ones forwardAtOnce cannot take at once, the unknown tool and the refused argument)
    expect(viaSdk.mock.calls.map((x) => x[2])).toEqual(['echo', 'nope', 'echo']);
    expect(taken.map(([id, took]) => `${String(id)}:${took}`)).toEqual([
      'x:false',
      '0:false',
      'x:true',
      'y:true',
      '1:true',
    ]);
  }, 60_000);

  it('a 2026-07-28 server answering input_required gets the same answer on the direct path as on the SDK path', async () => {
    await addNodeServer(home, 'modern', MODERN, [], { allow: ['echo', 'ask'] });
    const taken = tookDirect();
    const a = await modernSession();
    a.transport.writeRaw(call('ask', 'modern__ask', {}));
    const b = await modernSession();
    await b.client.callTool({ name: 'modern__echo', arguments: { text: 'pin' } });
    b.transport.writeRaw(call('ask', 'modern__ask', {}));
    const [sdkAnswer, directAnswer] = [await answer(a, 'ask'), await answer(b, 'ask')];
    expect(directAnswer).toEqual(sdkAnswer);
    expect(taken.map(([id, took]) => `${String(id)}:${took}`)).toEqual(['ask:false', '0:false', 'ask:true']);
  }, 60_000);

  it('on a 2026-07-28 connection a request without the envelope, or with an envelope the SDK must judge, goes to the SDK Server', async () => {
    await addNodeServer(home, 'ev', EVERYTHING, ['stdio'], { allow: ['echo'] });
    const taken = tookDirect();
    const c = await modernSession();
    await c.client.callTool({ name: 'ev__echo', arguments: { message: 'pin' } });
    const viaSdk = vi.spyOn(c.bridge, 'callBridged');
    // no envelope at all: the SDK's -32602 naming the missing envelope, nothing forwarded
    c.transport.writeRaw(call('bare', 'ev__echo', { message: 'm' }, null));
    const bare = (await answer(c, 'bare')).error as { code: number; message: string };
    expect(bare.code).toBe(-32602);
    expect(bare.message).toMatch(/envelope/);
    // a client identity the SDK's schema refuses (name not a string): its own -32602
    c.transport.writeRaw(
      call(
        'odd',
        'ev__echo',
        { message: 'm' },
        envelope({ 'io.modelcontextprotocol/clientInfo': { name: 7, version: '1' } }),
      ),
    );
    const odd = (await answer(c, 'odd')).error as { code: number; message: string };
    expect(odd.code).toBe(-32602);
    expect(viaSdk).not.toHaveBeenCalled();
    expect(c.logs.filter((l) => l.includes('"tools/call"'))).toHaveLength(1);
    // a version this connection was not pinned to: never the direct path (the SDK Server judges it)
    c.transport.writeRaw(
      call('v', 'ev__echo', { message: 'm' }, envelope({ 'io.modelcontextprotocol/protocolVersion': '2025-11-25' })),
    );
    await answer(c, 'v');
    expect(taken.map(([id, took]) => `${String(id)}:${took}`)).toEqual([
      '0:false',
      'bare:false',
      'odd:false',
      'v:false',
    ]);
  }, 60_000);

  it('a 2025-era connection never takes an enveloped request on the direct path', async () => {
    await addNodeServer(home, 'ev', EVERYTHING, ['stdio'], { allow: ['echo'] });
    const c = await connect({ home, sandbox: 'l' });
    open.push(c);
    await c.client.callTool({ name: 'ev__echo', arguments: { message: 'legacy' } });
    const viaSdk = vi.spyOn(c.bridge, 'callBridged');
    c.transport.writeRaw(call('e', 'ev__echo', { message: 'm' }));
    const r = await answer(c, 'e');
    // answered by the 2025-era SDK Server's handler (no 2026-07-28 encoding)
    expect(viaSdk).toHaveBeenCalledTimes(1);
    expect((r.result as { resultType?: unknown } | undefined)?.resultType).toBeUndefined();
  }, 60_000);
});
