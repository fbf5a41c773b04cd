// parseManifest (core/manifest/parse.ts): what an install accepts beyond the schema's shape; trusted side (tests).
import { describe, expect, it } from 'vitest';
import { parseManifest } from './parse.js';
import { plainManifest } from './check.js';
import { NO } from '../schema/hand.js';
import { TyError } from '../errors.js';

const js = (extra: Record<string, unknown> = {}, exec: Record<string, unknown> = {}) => ({
  name: 'tool',
  description: '',
  parameters: { type: 'object' },
  execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async () => 1', ...exec },
  ...extra,
});
function refusal(v: unknown): TyError {
  try {
    parseManifest(v);
  } catch (e) {
    if (e instanceof TyError) return e;
    throw e;
  }
  throw new Error('accepted');
}

describe('execution.engine quickjs', () => {
  it('is part of the manifest for JavaScript, read by the hand check as by the schema', () => {
    const m = parseManifest(js({}, { engine: 'quickjs' }));
    expect(m.execution.kind === 'sandboxed-code' && m.execution.engine).toBe('quickjs');
    expect(plainManifest(m)).not.toBe(NO);
  });
  it('refuses Python (Pyodide runs on the node and deno engines)', () => {
    const e = refusal(js({}, { runtime: 'python', source: 'def main(a, c): return 1', engine: 'quickjs' }));
    expect([e.code, e.data?.path]).toEqual(['E_INVALID_MANIFEST', 'execution.engine']);
  });
  it('refuses folder grants (QuickJS has no file system)', () => {
    const e = refusal(js({ capabilities: { folders: [{ path: '/tmp', access: 'read' }] } }, { engine: 'quickjs' }));
    expect([e.code, e.data?.path]).toEqual(['E_INVALID_MANIFEST', 'capabilities.folders']);
  });
  it('an unknown engine is a schema error', () => {
    expect(refusal(js({}, { engine: 'v8' })).code).toBe('E_INVALID_MANIFEST');
  });
});
