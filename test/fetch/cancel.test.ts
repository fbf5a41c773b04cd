// Per-fetch cancellation end to end: a tool's own AbortSignal cancels the host request (cap-cancel), on Node and Deno
// sandboxes; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolManifest } from '../../protocol/manifest.js';
import type { Gate } from '../../core/exec/runtime.js';
import { DEFAULT_LIMITS } from '../../core/exec/runtime.js';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import { ToolRegistry } from '../../core/revisions/registry.js';
import { capabilityFactory } from '../../core/capabilities/handler.js';
import { NodeFetchTransport } from '../../node/fetch.js';
import { NodeSandboxRuntime, resolveDeno } from '../../node/sandbox/runtime.js';
import { TEST_HOST, startHttpsServer, type TestHttpsServer } from '../helpers/https-server.js';

let server: TestHttpsServer;
let transport: NodeFetchTransport;
/** Per request to /hang: resolved when it arrives, and when the server sees its connection closed. */
let hang: { arrived: Promise<void>; closed: Promise<void>; onArrive: () => void; onClose: () => void };
function resetHang(): void {
  let onArrive!: () => void;
  let onClose!: () => void;
  const arrived = new Promise<void>((r) => (onArrive = r));
  const closed = new Promise<void>((r) => (onClose = r));
  hang = { arrived, closed, onArrive, onClose };
}

beforeAll(async () => {
  server = await startHttpsServer();
  // Never answers; reports when the client went away.
  server.route('/hang', (_q, res) => {
    res.on('close', () => hang.onClose());
    hang.onArrive();
  });
  server.route('/arrived', async (_q, res) => {
    await hang.arrived;
    res.end('yes');
  });
  server.route('/closed', async (_q, res) => {
    await hang.closed;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ closed: true }));
  });
  transport = new NodeFetchTransport({
    ca: server.ca,
    unsafeTestHooks: { resolve: async (h) => (h === TEST_HOST ? ['127.0.0.1'] : []), allowAddresses: ['127.0.0.1'] },
  });
});
afterAll(async () => {
  await transport.close();
  await server.close();
});

// The tool aborts a fetch the server is holding, then asks the server whether that connection was closed.
// Nothing here is timed: each step waits for the server's own observation of the previous one.
const SOURCE = `
export default async (args, ctx) => {
  const ac = new AbortController();
  const pending = (args.viaCtx ? ctx.fetch : fetch)(args.url + '/hang', { signal: ac.signal });
  pending.catch(() => {});
  await (await fetch(args.url + '/arrived')).text();
  ac.abort();
  let err = null;
  try { await pending; } catch (e) { err = { name: e.name, code: e.code, isError: e instanceof Error, stack: String(e.stack) }; }
  const closed = await (await fetch(args.url + '/closed')).json();
  const pre = new AbortController();
  pre.abort();
  let preErr = null;
  try { await fetch(args.url + '/never', { signal: pre.signal }); } catch (e) { preErr = { name: e.name, code: e.code }; }
  return { err, closed, preErr };
};`;

const engines: ('node' | 'deno')[] = resolveDeno() ? ['node', 'deno'] : ['node'];

describe.each(engines)('fetch cancellation from inside a %s sandbox', (engine) => {
  it.each([false, true])("the tool's own AbortSignal closes the host connection (ctx.fetch: %s)", async (viaCtx) => {
    resetHang();
    const store = new Store(new MemoryStoreBackend());
    const registry = new ToolRegistry(store);
    const gate: Gate = {
      authorize: async () => {},
      run: async () => {
        throw new Error('unused');
      },
    };
    const manifest: ToolManifest = {
      name: 'cancel',
      description: 'aborts a fetch',
      parameters: { type: 'object' },
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source: SOURCE },
      capabilities: { fetch: [{ origin: server.origin, access: 'read' }] },
    };
    const { revision } = await registry.install(manifest);
    const handlerFor = capabilityFactory({ store, registry, gate, transport });
    const inst = await new NodeSandboxRuntime({ engine }).start({ revision, manifest, limits: DEFAULT_LIMITS });
    const before = server.requests.filter((r) => r.path === '/never').length;
    try {
      const limits = { ...DEFAULT_LIMITS, timeoutMs: 20_000 };
      const out = (await inst.call(
        { url: server.origin, viaCtx },
        {
          signal: new AbortController().signal,
          onCapability: handlerFor({ name: 'cancel', revision, manifest, principal: 'test' }),
          limits,
        },
      )) as Record<string, unknown>;
      expect(out.err).toEqual({
        name: 'AbortError',
        code: 'E_ABORTED',
        isError: true,
        stack: 'Error: The operation was aborted.',
      });
      expect(out.closed).toEqual({ closed: true });
      // An already-aborted signal: refused in the sandbox, nothing reaches the server.
      expect(out.preErr).toEqual({ name: 'AbortError', code: 'E_ABORTED' });
      expect(server.requests.filter((r) => r.path === '/never').length).toBe(before);
      expect(inst.alive).toBe(true);
    } finally {
      await inst.destroy('test done');
    }
  });
});
