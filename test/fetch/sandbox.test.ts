// Mediated capabilities reached from real sandboxed tool code (global fetch, ctx.fetch, ctx.storage, ctx.getSecret);
// test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolManifest } from '../../protocol/manifest.js';
import type { Gate, GateRequest } from '../../core/exec/runtime.js';
import { DEFAULT_LIMITS } from '../../core/exec/runtime.js';
import { TyError } from '../../core/errors.js';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import { ToolRegistry } from '../../core/revisions/registry.js';
import { capabilityFactory } from '../../core/capabilities/handler.js';
import { SecretGrants, type SecretValues } from '../../core/capabilities/secrets.js';
import { NodeFetchTransport } from '../../node/fetch.js';
import { NodeSandboxRuntime } from '../../node/sandbox/runtime.js';
import { OTHER_TEST_HOST, TEST_HOST, startHttpsServer, type TestHttpsServer } from '../helpers/https-server.js';

let server: TestHttpsServer;
let transport: NodeFetchTransport;

beforeAll(async () => {
  server = await startHttpsServer();
  server.route('/echo', (q, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ auth: q.headers.authorization ?? null, method: q.method }));
  });
  server.route('/moved', (_q, res) => {
    res.writeHead(302, { location: 'https://169.254.169.254/latest/meta-data/' });
    res.end();
  });
  transport = new NodeFetchTransport({
    ca: server.ca,
    unsafeTestHooks: {
      resolve: async (h) => (h === TEST_HOST || h === OTHER_TEST_HOST ? ['127.0.0.1'] : []),
      allowAddresses: ['127.0.0.1'],
    },
  });
});
afterAll(async () => {
  await transport.close();
  await server.close();
});

class MemValues implements SecretValues {
  m = new Map<string, string>([['TOKEN', 'tok-value-123']]);
  async get(n: string) {
    return this.m.get(n);
  }
  async set(n: string, v: string) {
    this.m.set(n, v);
  }
  async delete(n: string) {
    return this.m.delete(n);
  }
  async names() {
    return [...this.m.keys()];
  }
}

const SOURCE = `
export default async (args, ctx) => {
  const out = {};
  const r1 = await fetch(args.url + '/echo', { headers: { authorization: 'Bearer {{secret:TOKEN}}' } });
  out.global = { status: r1.status, body: await r1.json(), same: fetch === ctx.fetch };
  const r2 = await fetch(args.url + '/moved', { redirect: 'manual' });
  out.redirect = { status: r2.status, location: r2.headers.get('location') };
  for (const u of ['https://127.0.0.1/', 'http://' + args.host + '/', 'https://u:p@' + args.host + '/', args.other + '/echo']) {
    try { await fetch(u); out[u] = 'fetched'; } catch (e) { out[u] = e.code ?? String(e); }
  }
  await ctx.storage.set('n', { v: 1 });
  out.stored = await ctx.storage.get('n');
  try { await ctx.getSecret('TOKEN'); out.secret = 'read'; } catch (e) { out.secret = e.code; }
  return out;
};`;

describe('from inside a Node sandbox', () => {
  it('global fetch is the mediated one: secrets substituted by the host, redirects returned, refusals coded', async () => {
    const store = new Store(new MemoryStoreBackend());
    const registry = new ToolRegistry(store);
    const calls: GateRequest[] = [];
    const gate: Gate = {
      async authorize(r) {
        calls.push(r);
        if (r.kind === 'fetch' && r.target?.startsWith(`https://${OTHER_TEST_HOST}`))
          throw new TyError('E_CAPABILITY_DENIED', 'not allowed');
      },
      async run() {
        throw new Error('unused');
      },
    };
    const manifest: ToolManifest = {
      name: 'net',
      description: 'uses the network',
      parameters: { type: 'object' },
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source: SOURCE },
      capabilities: {
        fetch: [
          { origin: server.origin, access: 'read' },
          { origin: `https://${OTHER_TEST_HOST}:${server.port}`, access: 'read' },
        ],
        storage: {},
        secrets: ['TOKEN'],
      },
    };
    const { revision } = await registry.install(manifest);
    await new SecretGrants(store).grant('TOKEN', { tool: 'net', revision, origins: [server.origin] });
    const handlerFor = capabilityFactory({ store, registry, gate, transport, secretValues: new MemValues() });
    const runtime = new NodeSandboxRuntime({ engine: 'node' });
    const inst = await runtime.start({ revision, manifest, limits: DEFAULT_LIMITS });
    try {
      const out = (await inst.call(
        { url: server.origin, host: `${TEST_HOST}:${server.port}`, other: `https://${OTHER_TEST_HOST}:${server.port}` },
        {
          signal: new AbortController().signal,
          onCapability: handlerFor({ name: 'net', revision, manifest, principal: 'test' }),
          limits: DEFAULT_LIMITS,
        },
      )) as Record<string, unknown>;
      expect(out.global).toEqual({ status: 200, body: { auth: 'Bearer tok-value-123', method: 'GET' }, same: true });
      expect(out.redirect).toEqual({ status: 302, location: 'https://169.254.169.254/latest/meta-data/' });
      expect(out['https://127.0.0.1/']).toBe('E_FETCH_TARGET');
      expect(out[`http://${TEST_HOST}:${server.port}/`]).toBe('E_FETCH_SCHEME');
      // Same code on every engine and host (the guest checks before the WHATWG Request constructor, the host again).
      expect(out[`https://u:p@${TEST_HOST}:${server.port}/`]).toBe('E_FETCH_CREDENTIALS');
      expect(out[`https://${OTHER_TEST_HOST}:${server.port}/echo`]).toBe('E_CAPABILITY_DENIED');
      expect(out.stored).toEqual({ v: 1 });
      expect(out.secret).toBe('E_SECRET_DENIED'); // origin-restricted grant: the value never enters the sandbox
      expect(calls.filter((c) => c.kind === 'fetch').map((c) => c.target)).toEqual([
        server.origin,
        server.origin,
        `https://${OTHER_TEST_HOST}:${server.port}`,
      ]);
    } finally {
      await inst.destroy('test done');
    }
  });
});
