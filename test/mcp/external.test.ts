// external-service revisions bound to a bridged server's tool, run through the Invoker (gate, argument checks); test
// side.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Invoker } from '../../core/exec/invoke.js';
import { ToolRegistry } from '../../core/revisions/registry.js';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import { createMcpExternal, type ExternalCaller } from '../../node/mcp/external.js';
import { removeDefinition } from '../../node/mcp/definitions.js';
import { EVERYTHING, FIXTURE, FakeGate, addNodeServer, tempHome } from './helpers.js';

let home: string;
let cleanup: () => Promise<void>;
let external: ExternalCaller | undefined;
let registry: ToolRegistry;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
  registry = new ToolRegistry(new Store(new MemoryStoreBackend()));
});
afterEach(async () => {
  await external?.close();
  external = undefined;
  await cleanup();
});

const echoManifest = {
  name: 'ext-echo',
  description: 'echo through the bridge',
  parameters: {
    type: 'object',
    properties: { message: { type: 'string' } },
    required: ['message'],
    additionalProperties: false,
  },
  execution: { kind: 'external-service', serviceId: 'everything', tool: 'echo' },
};

describe('external-service revisions through the MCP bridge', () => {
  it('runs the bound tool after the gate allowed the revision', async () => {
    await addNodeServer(home, 'everything', EVERYTHING, ['stdio']);
    const { revision } = await registry.install(echoManifest);
    const gate = new FakeGate(() => true);
    external = createMcpExternal(home, { gate });
    const inv = new Invoker({ registry, gate, external });
    const r = await inv.invoke('ext-echo', { message: 'hello' });
    expect(r).toMatchObject({ ok: true, revision });
    if (r.ok) expect(String(r.result)).toContain('hello');
    // the revision's own gate check, then the same MCP approval a bridged call gets, with the server's hints
    expect(gate.requests.map((q) => [q.kind, q.target ?? q.toolName])).toEqual([
      ['tool', 'ext-echo'],
      ['mcp', 'everything/echo'],
    ]);
    // keyed by the revision and the server's current tool definition (a changed tool is asked about again)
    expect(gate.requests[1]).toMatchObject({
      revision: expect.stringMatching(new RegExp(`^${revision}:mcp-sha256-[0-9a-f]{64}$`)),
      hints: { readOnlyHint: true },
    });
  });

  it('a gate refusal means nothing is forwarded; bad arguments are refused before the gate', async () => {
    await addNodeServer(home, 'fx', FIXTURE);
    await registry.install({
      ...echoManifest,
      name: 'ext-search',
      parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
      execution: { kind: 'external-service', serviceId: 'fx', tool: 'search' },
    });
    await registry.install({
      ...echoManifest,
      name: 'ext-received',
      parameters: { type: 'object', properties: {} },
      execution: { kind: 'external-service', serviceId: 'fx', tool: 'received' },
    });
    const gate = new FakeGate((r) => r.kind === 'tool' || r.target === 'fx/received');
    external = createMcpExternal(home, { gate });
    const inv = new Invoker({ registry, gate, external });
    expect(await inv.invoke('ext-search', { q: 'x' })).toMatchObject({
      ok: false,
      error: { code: 'E_CAPABILITY_DENIED' },
    });
    // the manifest schema allows extra fields, the server's own schema lists only q: refused before the MCP approval
    // and forwarding
    gate.decide = () => true;
    const asked = gate.requests.filter((q) => q.kind === 'mcp').length;
    expect(await inv.invoke('ext-search', { q: 'x', extra: 1 })).toMatchObject({
      ok: false,
      error: { code: 'E_INVALID_ARGS' },
    });
    expect(gate.requests.filter((q) => q.kind === 'mcp').length).toBe(asked);
    const r = await inv.invoke('ext-received', {});
    expect(r.ok).toBe(true);
    const got = JSON.parse(String(r.ok && r.result)) as { received: { method: string; name?: string }[] };
    expect(got.received.filter((m) => m.name === 'search')).toEqual([]);
  });

  it('a removed server, or a tool it does not have, is refused with a stable code', async () => {
    await addNodeServer(home, 'everything', EVERYTHING, ['stdio']);
    await registry.install({
      ...echoManifest,
      name: 'ext-missing',
      execution: { kind: 'external-service', serviceId: 'everything', tool: 'no-such-tool' },
    });
    await registry.install(echoManifest);
    external = createMcpExternal(home);
    const inv = new Invoker({ registry, external });
    // no server rule and no gate to ask: refused
    expect(await inv.invoke('ext-echo', { message: 'x' })).toMatchObject({
      ok: false,
      error: { code: 'E_APPROVAL_REQUIRED' },
    });
    expect(await inv.invoke('ext-missing', { message: 'x' })).toMatchObject({
      ok: false,
      error: { code: 'E_UNKNOWN_TOOL' },
    });
    await removeDefinition(home, 'everything');
    expect(await inv.invoke('ext-echo', { message: 'x' })).toMatchObject({
      ok: false,
      error: { code: 'E_UNKNOWN_TOOL' },
    });
  });
});
