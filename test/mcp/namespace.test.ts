// MCP namespaces end to end: one schema over two providers, per-target checks before approval, broadcast reads, removed
// providers; test side.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FIXTURE, FakeGate, addNodeServer, connect, tempHome, toolError, type Connected } from './helpers.js';
import { saveNamespace } from '../../node/mcp/namespaces.js';
import { removeDefinition } from '../../node/mcp/definitions.js';

let home: string;
let cleanup: () => Promise<void>;
let conn: Connected | undefined;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
  await addNodeServer(home, 'fa', FIXTURE, [], { env: { FX_VARIANT: 'a' } });
  await addNodeServer(home, 'fb', FIXTURE, [], { env: { FX_VARIANT: 'b' } });
  await saveNamespace(home, {
    v: 1,
    name: 'code',
    actions: [
      {
        name: 'find',
        access: 'read',
        targets: [
          { kind: 'a', server: 'fa', tool: 'find' },
          { kind: 'b', server: 'fb', tool: 'find' },
        ],
      },
      {
        name: 'lookup',
        access: 'read',
        broadcast: true,
        targets: [
          { kind: 'a', server: 'fa', tool: 'search' },
          { kind: 'b', server: 'fb', tool: 'search' },
        ],
      },
    ],
  });
});
afterEach(async () => {
  await conn?.close();
  conn = undefined;
  await cleanup();
});

async function refusal(p: Promise<unknown>): Promise<{ code: number; message: string; stable?: string }> {
  try {
    await p;
  } catch (e) {
    const x = e as { code: number; message: string; data?: { code?: string } };
    return { code: x.code, message: x.message, stable: x.data?.code };
  }
  throw new Error('expected a refusal');
}
const text = (r: unknown): string => JSON.stringify(r);

describe('MCP namespaces', () => {
  it('offers one flat schema with kind; checks each call against its chosen target before approval', async () => {
    const gate = new FakeGate(() => true);
    conn = await connect({ home, sandbox: 'ns', gate });
    const tools = (await conn.client.listTools()).tools;
    const find = tools.find((t) => t.name === 'code__find');
    expect(find?.inputSchema).toMatchObject({
      properties: { kind: { enum: ['a', 'b'] } },
      required: ['kind', 'q'],
      additionalProperties: false,
    });
    expect(Object.keys(find?.inputSchema.properties ?? {}).sort()).toEqual(['kind', 'lang', 'q', 'repo']);
    // repo is target b's field, unlisted for a: refused before approval and forwarding
    const a = await toolError(
      conn.client.callTool({ name: 'code__find', arguments: { kind: 'a', q: 'x', repo: 'r' } }),
    );
    expect(a.code).toBe('E_INVALID_ARGS');
    expect(a.text).toContain('repo');
    const b = await toolError(conn.client.callTool({ name: 'code__find', arguments: { kind: 'b', q: 'x' } }));
    expect(b.code).toBe('E_INVALID_ARGS');
    const c = await toolError(conn.client.callTool({ name: 'code__find', arguments: { q: 'x' } }));
    expect(c.text).toContain('kind');
    expect(gate.requests).toHaveLength(0);
    // a valid call goes to the chosen target only, keeping that server's tool name
    const ok = await conn.client.callTool({ name: 'code__find', arguments: { kind: 'b', q: 'x', repo: 'r' } });
    expect(text(ok)).toContain('b found');
    expect(gate.requests.map((r) => r.target)).toEqual(['fb/find']);
  });

  it('a broadcast read goes to every target, results joined under each kind', async () => {
    const gate = new FakeGate(() => true);
    conn = await connect({ home, sandbox: 'ns', gate });
    const r = await conn.client.callTool({ name: 'code__lookup', arguments: { q: 'z' } });
    expect(r.structuredContent).toMatchObject({
      results: { a: { content: [{ text: 'found z' }] }, b: { content: [{ text: 'found z' }] } },
    });
    expect(gate.requests.map((q) => q.target).sort()).toEqual(['fa/search', 'fb/search']);
  });

  it('every call reloads the approval policy of the target; a removed provider is refused', async () => {
    conn = await connect({ home, sandbox: 'ns' });
    expect((await refusal(conn.client.callTool({ name: 'code__find', arguments: { kind: 'a', q: 'x' } }))).stable).toBe(
      'E_APPROVAL_REQUIRED',
    );
    await addNodeServer(home, 'fa', FIXTURE, [], { env: { FX_VARIANT: 'a' }, allow: ['find'] });
    // the redefinition ended the old session: told it is gone once, then the new rules apply
    await refusal(conn.client.callTool({ name: 'code__find', arguments: { kind: 'a', q: 'x' } })).catch(
      () => undefined,
    );
    expect(text(await conn.client.callTool({ name: 'code__find', arguments: { kind: 'a', q: 'x' } }))).toContain(
      'a found',
    );
    await removeDefinition(home, 'fb');
    const gone = await refusal(
      conn.client.callTool({ name: 'code__find', arguments: { kind: 'b', q: 'x', repo: 'r' } }),
    );
    expect(gone.stable).toBe('E_UNKNOWN_TOOL');
    expect(gone.message).toContain('removed');
  });
});
