// One-, two- and three-character secret values leave the audit byte-identical, through every kind of call (plain,
// fetch with a placeholder, storage and getSecret, settings, subtasks, a failing tool, an MCP-bridged call, a Python
// tool): finding 1 of issue 26; test side.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNodeHost } from '../../node/host/host.js';
import { SecretsFile } from '../../node/store/secrets.js';
import { SecretGrants } from '../../core/capabilities/secrets.js';
import type { InvokeResult } from '../../core/exec/invoke.js';
import { EVERYTHING, addNodeServer } from '../mcp/helpers.js';

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'ty-short-secrets-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

const FETCH_ORIGIN = 'https://api.invalid';
const js = (source: string) => ({ kind: 'sandboxed-code', runtime: 'javascript', source });
const TOOLS = [
  {
    name: 'plain',
    description: 'counts letters',
    parameters: { type: 'object', properties: { text: { type: 'string' } }, additionalProperties: false },
    execution: js('export default async ({ text }) => ({ letters: text.length, text });'),
  },
  {
    name: 'fetcher',
    description: 'fetches with a secret header placeholder (the target does not resolve)',
    parameters: { type: 'object', additionalProperties: false },
    execution: js(
      `export default async () => { try { await fetch('${FETCH_ORIGIN}/v1/items', { headers: { authorization: 'Bearer {{secret:HDR}}' } }); return 'sent'; } catch (e) { return e.code; } };`,
    ),
    capabilities: { fetch: [{ origin: FETCH_ORIGIN, access: 'read' }], secrets: ['HDR'] },
  },
  {
    name: 'storer',
    description: 'keeps a counter and reads a secret',
    parameters: { type: 'object', additionalProperties: false },
    execution: js(
      "export default async (_a, ctx) => { const n = ((await ctx.storage.get('n')) ?? 0) + 1; await ctx.storage.set('n', n); const t = await ctx.getSecret('TOK'); return { n, has: t.length > 0 }; };",
    ),
    capabilities: { storage: {}, secrets: ['TOK'] },
  },
  {
    name: 'configured',
    description: 'reads its settings',
    parameters: { type: 'object', additionalProperties: false },
    execution: js('export default async (_a, ctx) => ctx.settings;'),
    settings: {
      type: 'object',
      properties: { units: { type: 'string', enum: ['metric', 'imperial'], default: 'metric' } },
      additionalProperties: false,
    },
  },
  {
    name: 'parent',
    description: 'returns subtasks',
    parameters: { type: 'object', additionalProperties: false },
    execution: js(
      "export default async (_a, ctx) => ctx.createSubtasksResult([{ role: 'assistant', content: { type: 'functioncall', name: 'plain', arguments: { text: 'ta' } } }]);",
    ),
    capabilities: { subtasks: true },
  },
  {
    name: 'failing',
    description: 'fails with text holding the short values',
    parameters: { type: 'object', additionalProperties: false },
    execution: js("export default async () => { throw new Error('failed: e x ta 0 t, text-stats'); };"),
  },
  {
    name: 'bridged',
    description: 'echo through an MCP server',
    parameters: {
      type: 'object',
      properties: { message: { type: 'string' } },
      required: ['message'],
      additionalProperties: false,
    },
    execution: { kind: 'external-service', serviceId: 'everything', tool: 'echo' },
  },
  {
    name: 'pycount',
    description: 'a Python tool',
    parameters: { type: 'object', properties: { text: { type: 'string' } }, additionalProperties: false },
    execution: {
      kind: 'sandboxed-code',
      runtime: 'python',
      source: 'def main(args, ctx):\n    return {"letters": len(args["text"])}\n',
    },
  },
];

/** The calls of the run, in order: every kind of call. */
const CALLS: [string, unknown][] = [
  ['plain', { text: 'the data total' }],
  ['fetcher', {}],
  ['storer', {}],
  ['storer', {}],
  ['configured', {}],
  ['parent', {}],
  ['failing', {}],
  ['bridged', { message: 'text-stats 0 e' }],
  ['pycount', { text: 'tate' }],
];

/**
 * The same home, tools, grants, settings and calls with the five secrets set to `values`; Date frozen and call ids
 * counted, so two runs can be compared byte for byte. Returns the audit log's raw lines and the call results.
 */
async function run(label: string, values: string[]): Promise<{ audit: string; results: InvokeResult[] }> {
  const home = join(tmp, label);
  vi.useFakeTimers({ toFake: ['Date'], now: Date.parse('2026-06-01T12:00:00.000Z') });
  let id = 0;
  vi.spyOn(globalThis.crypto, 'randomUUID').mockImplementation(
    () =>
      `00000000-0000-4000-8000-${String(id++).padStart(12, '0')}` as `${string}-${string}-${string}-${string}-${string}`,
  );
  await addNodeServer(home, 'everything', EVERYTHING, ['stdio'], { allow: ['echo'] });
  const setup = await createNodeHost({ home, startSandboxes: false, python: false });
  const revisions = new Map<string, string>();
  try {
    for (const t of TOOLS) revisions.set(t.name, (await setup.registry.install(t)).revision);
    const secrets = new SecretsFile(setup.paths.secretsFile);
    const names = ['TOK', 'HDR', 'S3', 'S4', 'S5'];
    for (const [i, v] of values.entries()) await secrets.set(names[i]!, v);
    const grants = new SecretGrants(setup.store);
    await grants.grant('TOK', { tool: 'storer', revision: revisions.get('storer')!, origins: [] });
    await grants.grant('HDR', { tool: 'fetcher', revision: revisions.get('fetcher')!, origins: [FETCH_ORIGIN] });
    const configured = await setup.registry.resolve('configured');
    await setup.settings.update(configured, { set: { units: 'imperial' } }, { principal: 'cli:user', via: 'test' });
  } finally {
    await setup.close();
  }
  const host = await createNodeHost({
    home,
    python: false,
    globals: { allow: [`fetch(read:${FETCH_ORIGIN})`], deny: [], sandbox: 'auto' },
  });
  const results: InvokeResult[] = [];
  try {
    for (const [name, args] of CALLS) results.push(await host.invoker.invoke(name, args, { timeoutMs: 120_000 }));
  } finally {
    await host.close();
  }
  const audit = await readFile(join(host.paths.store, '.logs', 'audit'), 'utf8');
  return { audit, results };
}

describe('short secret values (finding 1 of issue 26)', () => {
  it('e, x, ta, 0 and t leave every audit record byte-identical to the same run with long values, through every kind of call', async () => {
    const long = await run('long', ['Vq7mZ2kP9wL4', 'Hx3nR8tY6cB1', 'Jd5sF0gK2pQ9', 'Wm8vC4zN7rT3', 'Lb2yE6uI1oA5']);
    const short = await run('short', ['e', 'x', 'ta', '0', 't']);
    // the run did what it says: every kind of call ran (or failed as written)
    expect(long.results.map((r) => (r.ok ? 'ok' : r.error.code))).toEqual([
      'ok',
      'ok',
      'ok',
      'ok',
      'ok',
      'ok',
      'E_TOOL_FAILED',
      'ok',
      'ok',
    ]);
    expect(long.results[1]).toMatchObject({ ok: true, result: 'E_FETCH_FAILED' });
    expect(long.results[4]).toMatchObject({ ok: true, result: { units: 'imperial' } });
    expect(long.audit).toContain('"kind":"secret","target":"HDR -> https://api.invalid"');
    expect(long.audit).toContain('"kind":"secret","target":"TOK"');
    expect(long.audit).toContain('"kind":"mcp","decision":"allow","rule":"everything: --allow echo"');
    expect(long.audit).toContain('"kind":"settings"');
    expect(long.audit).toContain('"tool":"pycount"');
    expect(long.audit).toContain('"code":"E_TOOL_FAILED"');
    // A one-byte secret leaves the audit byte-identical.
    expect(short.audit).toBe(long.audit);
    // the results are the same too, but for the tool's own error text, where a value standing as a token is withheld
    expect(short.results.filter((_, i) => i !== 6)).toEqual(long.results.filter((_, i) => i !== 6));
    expect(long.results[6]).toMatchObject({ ok: false, error: { message: 'Error: failed: e x ta 0 t, text-stats' } });
    expect(short.results[6]).toMatchObject({
      ok: false,
      error: { message: 'Error: failed: <withheld> <withheld> <withheld> <withheld> <withheld>, text-stats' },
    });
  }, 300_000);
});
