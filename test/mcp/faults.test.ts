// A hung, crashed or babbling server is replaced: distinct codes for timed out, crashed and redefined, the next call
// gets a fresh server; test side.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FIXTURE, addNodeServer, groupAlive, mcpRefusal, openVia, tempHome } from './helpers.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

let home: string;
let cleanup: () => Promise<void>;
let conn: { client: Client; close: () => Promise<void> } | undefined;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
});
afterEach(async () => {
  await conn?.close();
  conn = undefined;
  await cleanup();
});

async function pgid(c: { client: Client }): Promise<number> {
  const r = await c.client.callTool({ name: 'fx__received', arguments: {} });
  return (JSON.parse((r.content as { text: string }[])[0]!.text) as { pgid: number }).pgid;
}
async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 250 && groupAlive(pid); i++) await new Promise((r) => setTimeout(r, 20));
  return !groupAlive(pid);
}

describe.each(['stdio', 'http'] as const)('frozen, crashed and babbling servers (%s)', (via) => {
  it("a call past the definition's timeout: E_MCP_TIMEOUT (-32011), the server process ends, the next call gets a fresh one (stdio, SDK path too)", async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none', timeoutMs: 400 });
    conn = await openVia(via, { home, sandbox: 'f' });
    const first = await pgid(conn);
    const r = await mcpRefusal(
      conn.client.callTool({ name: 'fx__slow', arguments: { ms: 10_000 } }, undefined, { timeout: 20_000 }),
    );
    expect([r.code, r.stable]).toEqual([-32011, 'E_MCP_TIMEOUT']);
    expect(r.code).not.toBe(-32001);
    expect(await gone(first)).toBe(true);
    expect(await pgid(conn)).not.toBe(first);
  }, 30_000);

  it('a server whose process exits during a call: E_MCP_CRASHED (-32012); the next call gets a fresh one', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    conn = await openVia(via, { home, sandbox: 'f' });
    const first = await pgid(conn);
    const r = await mcpRefusal(conn.client.callTool({ name: 'fx__crash', arguments: {} }));
    expect([r.code, r.stable]).toEqual([-32012, 'E_MCP_CRASHED']);
    expect(r.message).toMatch(/exited \(exit code 3\)/);
    expect(await pgid(conn)).not.toBe(first);
  }, 30_000);

  it('100 lines that are not JSON-RPC end the session (E_MCP_GARBAGE, -32016); fewer are dropped and the call is answered', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    conn = await openVia(via, { home, sandbox: 'f' });
    const first = await pgid(conn);
    const ok = await conn.client.callTool({ name: 'fx__junk', arguments: { n: 40 } });
    expect(JSON.stringify(ok)).toContain('after junk');
    expect(await pgid(conn)).toBe(first);
    const r = await mcpRefusal(conn.client.callTool({ name: 'fx__junk', arguments: { n: 100 } }));
    expect([r.code, r.stable]).toEqual([-32016, 'E_MCP_GARBAGE']);
    expect(r.message).toMatch(/100 lines that are not JSON-RPC/);
    expect(await gone(first)).toBe(true);
    expect(await pgid(conn)).not.toBe(first);
  }, 30_000);

  it('a session ended by a redefinition: E_MCP_REDEFINED (-32013), distinct from a timeout and a crash', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    conn = await openVia(via, { home, sandbox: 'f' });
    const first = await pgid(conn);
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none', env: { FX_VARIANT: 'b' } });
    const r = await mcpRefusal(conn.client.callTool({ name: 'fx__received', arguments: {} }));
    expect([r.code, r.stable]).toEqual([-32013, 'E_MCP_REDEFINED']);
    expect(await pgid(conn)).not.toBe(first);
  }, 30_000);
});
