// Unit tests of the browser host's MCP server definitions (browser/mcp/servers.ts): what add() refuses, where header
// values go, what is shown; browser host, trusted side (runs under Node).
import { describe, expect, it } from 'vitest';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import type { Gate } from '../../core/exec/runtime.js';
import { BrowserMcp } from './servers.js';
import { StoreSecretValues } from '../store.js';

const gate: Gate = {
  run: async () => {
    throw new Error('no call is made in these tests');
  },
  authorize: async () => undefined,
};

function make() {
  const store = new Store(new MemoryStoreBackend());
  const secrets = new StoreSecretValues(store);
  const mcp = new BrowserMcp({ gate, store, secrets, withheld: new Set() });
  return { store, secrets, mcp };
}

describe('browser MCP server definitions', () => {
  it('keeps a header value in the MCP secret store under mcp.SERVER.N and shows only its secret name; remove deletes it', async () => {
    const { secrets, mcp, store } = make();
    const info = await mcp.add({
      name: 'docs',
      url: 'https://mcp.example.com/mcp#frag',
      headers: { Authorization: 'Bearer s3cr3t-value', 'X-Ref': { secret: 'shared.token' } },
    });
    expect(info).toMatchObject({
      name: 'docs',
      url: 'https://mcp.example.com/mcp',
      state: 'idle',
      headers: [
        { name: 'Authorization', secret: 'mcp.docs.0' },
        { name: 'X-Ref', secret: 'shared.token' },
      ],
    });
    expect(await secrets.get('mcp.docs.0')).toBe('Bearer s3cr3t-value');
    expect(JSON.stringify(mcp.servers())).not.toContain('s3cr3t');
    // apart from tools' secret values and grants: nothing else in the store holds it
    expect(await store.backend.list('secret-grants')).toEqual([]);
    expect(mcp.handles('docs__search')).toBe(true);
    expect(mcp.handles('other__search')).toBe(false);
    expect(await mcp.remove('docs')).toBe(true);
    expect(await secrets.get('mcp.docs.0')).toBeUndefined();
    expect(mcp.servers()).toEqual([]);
  });

  it.each([
    [{ name: 'Docs', url: 'https://a.example/mcp' }, 'server name'],
    [{ name: 'do__cs', url: 'https://a.example/mcp' }, 'server name'],
    [{ name: 'docs', url: 'http://mcp.example.com/mcp' }, 'https'],
    [{ name: 'docs', url: 'https://user:pw@mcp.example.com/mcp' }, 'credentials'],
    [{ name: 'docs', url: 'not a url' }, 'not a URL'],
    [{ name: 'docs', url: 'https://a.example/mcp', headers: { Cookie: 'a=b' } }, 'cannot be set'],
    [{ name: 'docs', url: 'https://a.example/mcp', headers: { 'Mcp-Session-Id': 'x' } }, 'cannot be set'],
    [{ name: 'docs', url: 'https://a.example/mcp', headers: { Authorization: 'a\r\nX: y' } }, 'line break'],
    [{ name: 'docs', url: 'https://a.example/mcp', ask: 'never' }, 'ask'],
    [{ name: 'docs', url: 'https://a.example/mcp', timeoutMs: 5 }, 'timeoutMs'],
  ])('refuses %j (E_USAGE naming %s) and stores nothing', async (def, what) => {
    const { secrets, mcp } = make();
    // a valid header first: its value must not be stored either when a later field is refused
    const d = def as Record<string, unknown> & { headers?: Record<string, string> };
    await expect(
      mcp.add({ ...d, headers: { 'X-Before': 'kept-out', ...(d.headers ?? {}) } } as never),
    ).rejects.toMatchObject({ code: 'E_USAGE', message: expect.stringContaining(what) });
    expect(await secrets.names()).toEqual([]);
    expect(mcp.servers()).toEqual([]);
  });

  it('http is accepted on loopback only', async () => {
    const { mcp } = make();
    await expect(mcp.add({ name: 'local', url: 'http://127.0.0.1:8080/mcp' })).resolves.toMatchObject({
      url: 'http://127.0.0.1:8080/mcp',
    });
    await expect(mcp.add({ name: 'local2', url: 'http://localhost:8080/mcp' })).resolves.toMatchObject({
      state: 'idle',
    });
  });

  it('a reference to an unknown server is E_UNKNOWN_TOOL naming the SERVER__TOOL form', async () => {
    const { mcp } = make();
    const r = await mcp.invoke('nope__tool', {});
    expect(r).toMatchObject({ ok: false, error: { code: 'E_UNKNOWN_TOOL' } });
    expect(r.ok ? '' : r.error.message).toContain('SERVER__TOOL');
  });
});
