// The same revision and arguments on the node engine and on the quickjs engine give the same answers: every example
// tool in tools/, the capability path (mediated fetch against a real HTTPS server, storage, secrets, subtasks, resolve,
// settings, logs with their rate limit) and tool errors with their codes and frames; test side, real sandboxes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { SandboxPool } from '../../core/exec/pool.js';
import { DEFAULT_LIMITS, type Gate, type SandboxSpec } from '../../core/exec/runtime.js';
import { TyError } from '../../core/errors.js';
import { capabilityFactory } from '../../core/capabilities/handler.js';
import { SecretGrants, type SecretValues } from '../../core/capabilities/secrets.js';
import { parseManifest } from '../../core/manifest/parse.js';
import { ToolRegistry } from '../../core/revisions/registry.js';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import { NodeFetchTransport } from '../../node/fetch.js';
import { loadManifestFile } from '../../node/manifest/file.js';
import { buildSandboxHost } from '../../node/quickjs/build.mjs';
import { QuickJsSandboxRuntime } from '../../node/quickjs/runtime.js';
import { NodeSandboxRuntime } from '../../node/sandbox/runtime.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import { OTHER_TEST_HOST, TEST_HOST, startHttpsServer, type TestHttpsServer } from '../helpers/https-server.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const ENGINES = ['node', 'quickjs'] as const;
type Engine = (typeof ENGINES)[number];

let server: TestHttpsServer;
let transport: NodeFetchTransport;
const logs: Record<Engine, string[]> = { node: [], quickjs: [] };
const qjs = new QuickJsSandboxRuntime({
  workers: 2,
  onLog: (_r, level, text) => logs.quickjs.push(`${level} ${text}`),
});
const pools: Record<Engine, SandboxPool> = {
  node: new SandboxPool({
    runtime: new NodeSandboxRuntime({ engine: 'node', onLog: (_r, level, text) => logs.node.push(`${level} ${text}`) }),
    maxRetained: 64,
  }),
  quickjs: new SandboxPool({ runtime: qjs, maxRetained: 64 }),
};

class MemValues implements SecretValues {
  m = new Map<string, string>([
    ['TOKEN', 'tok-value-123'],
    ['PLAIN', 'plain-secret'],
  ]);
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

beforeAll(async () => {
  await buildSandboxHost();
  server = await startHttpsServer();
  server.route('/echo', (q, res, body) => {
    res.writeHead(200, { 'content-type': 'application/json', 'x-seen': 'yes' });
    const type = q.headers['content-type'] ?? null;
    res.end(
      JSON.stringify({ auth: q.headers.authorization ?? null, method: q.method, type, body: body.toString('utf8') }),
    );
  });
  server.route('/moved', (_q, res) => {
    res.writeHead(302, { location: 'https://169.254.169.254/latest/meta-data/' });
    res.end();
  });
  server.route('/text', (_q, res) => {
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
    res.end('nicht gefunden: äöü €');
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
  await Promise.all(ENGINES.map((e) => pools[e].shutdown()));
  qjs.close();
  await transport.close();
  await server.close();
});

/** What a call gave, comparable across engines: a value, or an error with its code, message, name and first frame. */
type Outcome =
  | { ok: true; value: unknown }
  | { ok: false; code: string; message: string; name?: unknown; toolCode?: unknown; line?: number };

/** A fresh store, registry and capability handler per engine (so storage and grants never mix between them). */
async function runOn(
  engine: Engine,
  manifest: ToolManifest,
  args: unknown,
  settings?: Record<string, unknown>,
): Promise<Outcome> {
  const store = new Store(new MemoryStoreBackend());
  const registry = new ToolRegistry(store);
  const { revision } = await registry.install(manifest);
  const grants = new SecretGrants(store);
  if (manifest.capabilities?.secrets?.includes('TOKEN'))
    await grants.grant('TOKEN', { tool: manifest.name, revision, origins: [server.origin] });
  if (manifest.capabilities?.secrets?.includes('PLAIN'))
    await grants.grant('PLAIN', { tool: manifest.name, revision, origins: [] });
  if (manifest.capabilities?.resolveInvocation)
    await registry.install({ ...manifest, name: 'other', description: 'other' });
  const gate: Gate = {
    async authorize(r) {
      if (r.kind === 'fetch' && r.target?.startsWith(`https://${OTHER_TEST_HOST}`))
        throw new TyError('E_CAPABILITY_DENIED', 'not allowed');
    },
    async run() {
      throw new Error('unused');
    },
  };
  const handlerFor = capabilityFactory({ store, registry, gate, transport, secretValues: new MemValues() });
  const spec: SandboxSpec = { revision, manifest, limits: { ...DEFAULT_LIMITS, timeoutMs: 30_000 }, principal: 'test' };
  if (settings) spec.settings = settings;
  try {
    const value = await pools[engine].call(spec, args, {
      onCapability: handlerFor({ name: manifest.name, revision, manifest, principal: 'test' }),
    });
    return { ok: true, value };
  } catch (e) {
    if (!(e instanceof TyError)) throw e;
    const out: Outcome = { ok: false, code: e.code, message: e.message };
    if (e.data?.name !== undefined) out.name = e.data.name;
    if (e.data?.toolCode !== undefined) out.toolCode = e.data.toolCode;
    // Where it was thrown (the first tool frame). Deeper frames differ by engine: V8 lists async callers, QuickJS not.
    const frames = e.data?.frames as { line: number }[] | undefined;
    if (frames?.[0]) out.line = frames[0].line;
    return out;
  }
}

/** Run on both engines and expect the same outcome; returns it. */
async function same(manifest: ToolManifest, args: unknown, settings?: Record<string, unknown>): Promise<Outcome> {
  const node = await runOn('node', manifest, args, settings);
  const quickjs = await runOn('quickjs', manifest, args, settings);
  expect(quickjs).toEqual(node);
  return node;
}

function inline(name: string, source: string, extra: Partial<ToolManifest> = {}): ToolManifest {
  return parseManifest({
    name,
    description: name,
    parameters: { type: 'object' },
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
    ...extra,
  });
}
async function example(path: string): Promise<ToolManifest> {
  return parseManifest(await loadManifestFile(join(ROOT, path)));
}
const data = (f: string) => readFile(join(ROOT, 'tools', 'examples', 'data', f), 'utf8');

describe('every example tool gives the same answer on both engines', () => {
  it('csv-stats', async () => {
    const m = await example('tools/csv-stats/manifest.json');
    const csv = await data('sales.csv');
    expect((await same(m, { csv, top: 3 })).ok).toBe(true);
    expect((await same(m, { csv, header: false, delimiter: ';' })).ok).toBe(true);
    const bad = await same(m, { csv: 'a,b\n"unterminated,1\n' });
    expect(bad).toMatchObject({ ok: false, code: 'E_TOOL_FAILED' });
  });
  it('json-reshape', async () => {
    const m = await example('tools/json-reshape/manifest.json');
    const json = await data('people.json');
    expect((await same(m, { json, pick: ['name.last', 'contact.city', 'fields.0'] })).ok).toBe(true);
    expect((await same(m, { json, flatten: true, separator: '_', rename: { name_first: 'given' } })).ok).toBe(true);
    expect(await same(m, { json: '{not json' })).toMatchObject({ ok: false, code: 'E_TOOL_FAILED' });
  });
  it('text-stats (word and sentence segmentation through Intl.Segmenter)', async () => {
    const m = await example('tools/text-stats/manifest.json');
    const text = await data('article.txt');
    const r = await same(m, { text, top: 15 });
    expect(r.ok && (r.value as { words: number }).words).toBeGreaterThan(100);
    expect((await same(m, { text: 'Grüße aus Köln! Ça va? 東京は晴れ。', skipStopwords: false })).ok).toBe(true);
  });
  it('unit-convert (a multi-file tool bundled with an npm package)', async () => {
    const m = await example('tools/examples/multi-file/manifest.json');
    expect((await same(m, { value: 3.5, from: 'km', to: 'mi' })).ok).toBe(true);
    expect((await same(m, { value: 12, from: 'ft', to: 'm' })).ok).toBe(true);
  });
});

const CAPS = `
export default async (args, ctx) => {
  const out = {};
  const r1 = await fetch(args.url + '/echo', { headers: { authorization: 'Bearer {{secret:TOKEN}}', 'X-Trim': '  v  ' } });
  const headers = [...r1.headers].filter(([k]) => k !== 'date' && k !== 'connection' && k !== 'keep-alive');
  out.get = { status: r1.status, ok: r1.ok, body: await r1.json(), headers, url: r1.url, same: fetch === ctx.fetch };
  const r2 = await ctx.fetch(new Request(args.url + '/echo?q=1', { method: 'post', body: JSON.stringify({ a: 1 }), headers: { 'content-type': 'application/json' } }));
  out.post = await r2.json();
  const r3 = await fetch(args.url + '/echo', { method: 'PUT', body: new URLSearchParams({ x: 'a b', y: 'ä' }) });
  out.form = await r3.json();
  const r4 = await fetch(args.url + '/text');
  out.text = { status: r4.status, ok: r4.ok, type: r4.headers.get('content-type'), text: await r4.text(), used: r4.bodyUsed };
  const r5 = await fetch(args.url + '/moved', { redirect: 'manual' });
  out.redirect = { status: r5.status, location: r5.headers.get('location') };
  for (const u of ['https://127.0.0.1/', 'http://' + args.host + '/', 'https://u:p@' + args.host + '/', args.other + '/echo', 'not a url']) {
    try { await fetch(u); out[u] = 'fetched'; } catch (e) { out[u] = [e.name, e.code ?? null]; }
  }
  try { await fetch(args.url + '/echo', { method: 'GET', body: 'x' }); } catch (e) { out.getBody = [e.name, e.code]; }
  try { await fetch(args.url + '/echo', { method: 'CONNECT' }); } catch (e) { out.connect = [e.name, e.code]; }
  const ac = new AbortController(); ac.abort();
  try { await fetch(args.url + '/echo', { signal: ac.signal }); } catch (e) { out.aborted = [e.name, e.code]; }
  await ctx.storage.set('n', { v: 1, list: [1, 'two', null] });
  await ctx.storage.set('m', 'second');
  out.stored = [await ctx.storage.get('n'), await ctx.storage.list(), await ctx.storage.delete('m'), await ctx.storage.get('m')];
  try { await ctx.storage.set('big', 'x'.repeat(2 * 1024 * 1024)); } catch (e) { out.quota = e.code; }
  try { await ctx.getSecret('TOKEN'); out.secret = 'read'; } catch (e) { out.secret = [e.name, e.code, e.message]; }
  out.plain = await ctx.getSecret('PLAIN');
  try { await ctx.getSecret('OTHER'); } catch (e) { out.undeclared = e.code; }
  out.resolved = typeof (await ctx.resolveInvocation('other'));
  try { await ctx.resolveInvocation('nope'); } catch (e) { out.unresolved = e.code; }
  out.settings = ctx.settings;
  out.frozen = Object.isFrozen(ctx.settings) && Object.isFrozen(ctx);
  out.signal = typeof ctx.signal.aborted;
  return out;
};`;

describe('the capability path gives the same answers on both engines', () => {
  it('mediated fetch, storage, secrets, resolveInvocation and settings', async () => {
    const m = inline('caps', CAPS, {
      capabilities: {
        fetch: [
          { origin: server.origin, access: '*' },
          { origin: `https://${OTHER_TEST_HOST}:${server.port}`, access: 'read' },
        ],
        storage: { quotaBytes: 1024 * 1024 },
        secrets: ['TOKEN', 'PLAIN'],
        resolveInvocation: ['other'],
      },
    });
    const r = await same(
      m,
      { url: server.origin, host: `${TEST_HOST}:${server.port}`, other: `https://${OTHER_TEST_HOST}:${server.port}` },
      { unit: 'km', nested: { n: 1 } },
    );
    expect(r.ok).toBe(true);
    const v = (r as { value: Record<string, unknown> }).value;
    expect(v.get).toMatchObject({ status: 200, body: { auth: 'Bearer tok-value-123', method: 'GET' }, same: true });
    expect(v.post).toMatchObject({ method: 'POST', type: 'application/json', body: '{"a":1}' });
    expect(v.form).toMatchObject({
      method: 'PUT',
      type: 'application/x-www-form-urlencoded;charset=UTF-8',
      body: 'x=a+b&y=%C3%A4',
    });
    expect(v['https://127.0.0.1/']).toEqual(['Error', 'E_FETCH_TARGET']);
    expect(v.plain).toBe('plain-secret');
    expect(v.settings).toEqual({ unit: 'km', nested: { n: 1 } });
  });

  it('createSubtasksResult compiles drafts on the host and answers the same tasks', async () => {
    const m = inline(
      'sub',
      `export default async (a, ctx) => { const r = await ctx.createSubtasksResult([{ role: 'assistant', content: [{ type: 'text', text: 'hi' }] }]); return r; }`,
      { capabilities: { subtasks: true } },
    );
    await same(m, {});
  });

  it('console output: the same lines, the same rate limit and drop notice', async () => {
    const m = inline(
      'logs',
      `export default async () => { for (let i = 0; i < 260; i++) console.log('line', i, { i });
` + `console.warn(new TypeError('w')); console.error('e', [1, 2]); console.assert(false, 'x'); return 'done' }`,
    );
    logs.node.length = 0;
    logs.quickjs.length = 0;
    await same(m, {});
    expect(logs.quickjs).toEqual(logs.node);
    expect(logs.node.some((l) => /log messages dropped: rate limit/.test(l))).toBe(true);
  });
});

describe('tool errors give the same codes, messages and frames on both engines', () => {
  it('a thrown error with a code, a thrown non-error, undefined results and values that are not JSON data', async () => {
    const cases: [string, string][] = [
      [
        'coded',
        `function fail(x) {\n  const e = new RangeError('out of ' + x);\n  e.code = 'E_MY_RANGE';\n  throw e;\n}\nexport default async (a) => fail(a.w)`,
      ],
      ['string', `export default async () => { throw 'plain text' }`],
      ['undef', `export default async () => undefined`],
      ['fn', `export default async () => ({ f() {} })`],
      ['bigint', `export default async () => ({ n: 1n })`],
      ['cycle', `export default async () => { const o = {}; o.o = o; return o }`],
      ['klass', `export default async () => new (class A {})()`],
      ['date', `export default async () => ({ d: new Date(0), m: new Map() })`],
      [
        'proxy',
        `export default async () => new Proxy({}, { get() { throw new Error('trap') }, ownKeys() { throw 1 } })`,
      ],
      ['nan', `export default async () => [NaN, Infinity, -0, 1e21, 0.1 + 0.2]`],
      ['sym', `export default async () => { const e = new Error('x'); e.name = Symbol('s'); throw e }`],
      ['noexport', `export const x = 1`],
      [
        'proxy-init',
        `export default async () => { try { await fetch('https://a.example', new Proxy({}, { getOwnPropertyDescriptor() { throw 1 } })) } catch (e) { return [e.name, e.code, e.message] } }`,
      ],
    ];
    for (const [name, source] of cases) {
      if (name === 'sym') {
        // V8 formats a stack when first read, and a Symbol name makes that throw: no frames there; QuickJS has them.
        const [n, q] = [
          await runOn('node', inline(name, source), {}),
          await runOn('quickjs', inline(name, source), {}),
        ];
        expect({ ...q, line: undefined }).toEqual({ ...n, line: undefined });
        continue;
      }
      const r = await same(inline(name, source), { w: 'range' });
      if (name === 'coded')
        expect(r).toMatchObject({ code: 'E_TOOL_FAILED', name: 'RangeError', toolCode: 'E_MY_RANGE', line: 2 });
    }
  });
});
