// The hand parse of stored manifests never accepts what ToolManifestSchema refuses, and returns the schema's output;
// trusted side.
import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { ToolManifestSchema } from '../../protocol/manifest.js';
import { NO, plainManifest } from './check.js';

const sha = 'sha256-' + 'A'.repeat(43) + '=';
const base = {
  name: 'csv-stats',
  description: 'Summarize a CSV',
  parameters: { type: 'object', properties: { csv: { type: 'string' } }, required: ['csv'] },
  execution: {
    kind: 'sandboxed-code',
    runtime: 'javascript',
    source: 'export default async () => 1;',
    bundle: {
      entry: 'index.mjs',
      bundler: 'none',
      inputs: [{ path: 'index.mjs', bytes: 30, integrity: sha }],
      packages: [],
    },
  },
  limits: { timeoutMs: 30000 },
};
const full = {
  ...base,
  outputSchema: { type: 'object' },
  settings: { type: 'object', properties: { unit: { type: 'string' } } },
  capabilities: {
    fetch: [
      { origin: 'https://api.example.com', access: 'read' },
      { origin: 'https://*.example.org:8443', access: '*' },
    ],
    storage: { quotaBytes: 1024 },
    secrets: ['API_KEY'],
    subtasks: true,
    resolveInvocation: ['other'],
    folders: [{ path: '/tmp/x', access: 'write' }],
  },
  python: { packages: [{ file: 'six-1.16.0-py2.py3-none-any.whl', sha256: 'a'.repeat(64) }] },
  execution: {
    ...base.execution,
    engine: 'deno',
    retainState: false,
    bundle: {
      ...base.execution.bundle,
      packages: [{ name: 'left-pad', version: '1.3.0', path: 'node_modules/left-pad', integrity: 'sha512-x' }],
      sourceMap: '{}',
    },
  },
  annotations: { readOnlyHint: true, destructiveHint: false },
  limits: { timeoutMs: 1000, outputBytes: 2048, memoryMb: 128 },
};
const natives = [
  { name: 'n', description: '', parameters: {}, execution: { kind: 'trusted-native', entry: 'python' } },
  {
    name: 'e',
    description: '',
    parameters: {},
    execution: { kind: 'external-service', serviceId: 'srv', tool: 't', transport: 'mcp' },
  },
];

/** Odd values for any field: each JSON type, bounds of the schema's limits, non-plain objects. */
const odd: unknown[] = [
  undefined,
  null,
  true,
  0,
  -1,
  1.5,
  2 ** 53,
  24 * 3600 * 1000 + 1,
  64 * 1024 * 1024 + 1,
  16385,
  NaN,
  '',
  'x',
  '-lead',
  'x'.repeat(65),
  'x'.repeat(129),
  'x'.repeat(8193),
  '../up',
  '/abs',
  'a\\b',
  'javascript',
  'python',
  'node',
  'read',
  'write',
  '*',
  'mcp',
  'parent',
  'sandboxed-code',
  'trusted-native',
  'external-service',
  'http://a.example',
  [],
  [1],
  ['x'],
  {},
  { a: 1 },
  Object.create(null),
  JSON.parse('{"__proto__": {"a": 1}}'),
  new Date(0),
];

/** Every path of object keys in `v` (arrays: their first item), with the object at that path. */
function* paths(v: unknown, at: string[] = []): Generator<string[]> {
  if (Array.isArray(v)) {
    if (v.length > 0) yield* paths(v[0], [...at, '0']);
    return;
  }
  if (v === null || typeof v !== 'object') return;
  for (const k of Object.keys(v)) {
    yield [...at, k];
    if (k !== 'parameters' && k !== 'outputSchema' && k !== 'settings')
      yield* paths((v as Record<string, unknown>)[k], [...at, k]);
  }
}
function setAt(v: unknown, path: string[], x: unknown, drop = false): unknown {
  const copy = JSON.parse(JSON.stringify(v));
  let o = copy;
  for (const k of path.slice(0, -1)) o = o[k];
  const last = path[path.length - 1]!;
  if (drop) delete o[last];
  else o[last] = x;
  return copy;
}

function variants(): unknown[] {
  const out: unknown[] = [...odd, base, full, ...natives];
  for (const m of [base, full, ...natives]) {
    const ps = [...paths(m)];
    for (const p of ps) {
      out.push(setAt(m, p, undefined, true));
      for (const x of odd) out.push(setAt(m, p, x));
      // an unknown key next to each known one
      out.push(setAt(m, [...p.slice(0, -1), 'extra'], 1));
    }
  }
  return out;
}

describe('plainManifest (hand parse of ToolManifestSchema)', () => {
  it("accepts only what the schema accepts, with the schema's output (keys in its order)", () => {
    let accepted = 0;
    for (const v of variants()) {
      const hand = plainManifest(v);
      if (hand === NO) continue;
      accepted++;
      const schema = ToolManifestSchema.safeParse(v);
      expect(schema.success, JSON.stringify(v)?.slice(0, 300)).toBe(true);
      if (schema.success) expect(JSON.stringify(hand)).toBe(JSON.stringify(schema.data));
    }
    expect(accepted).toBeGreaterThan(100);
  });

  it('vouches for the shipped example and built-in manifests (no schema load when they are read)', () => {
    for (const m of [base, full, ...natives]) expect(plainManifest(m), JSON.stringify(m).slice(0, 100)).not.toBe(NO);
    const tools = join(import.meta.dirname, '..', '..', 'tools');
    let seen = 0;
    for (const d of readdirSync(tools)) {
      const f = join(tools, d, 'manifest.json');
      if (!existsSync(f)) continue;
      const m = JSON.parse(readFileSync(f, 'utf8'));
      // the stored form inlines the source (tool add reads execution.sourceFile into execution.source)
      if (m.execution?.sourceFile !== undefined) {
        m.execution.source = readFileSync(join(tools, d, m.execution.sourceFile), 'utf8');
        delete m.execution.sourceFile;
      }
      if (!ToolManifestSchema.safeParse(m).success) continue;
      expect(plainManifest(m), f).not.toBe(NO);
      seen++;
    }
    expect(seen).toBeGreaterThan(0);
  });
});
