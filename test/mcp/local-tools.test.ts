// `tycli mcp serve` never offers trusted-native tools (host authority, e.g. native python) to an MCP client; test side.
import { describe, expect, it } from 'vitest';
import { localTools } from '../../node/cli/commands/mcp/serve.js';
import { TyError } from '../../core/errors.js';

const manifests: Record<
  string,
  { name: string; description: string; parameters: Record<string, unknown>; execution: { kind: string } }
> = {
  python: {
    name: 'python',
    description: 'native',
    parameters: { type: 'object' },
    execution: { kind: 'trusted-native' },
  },
  stats: {
    name: 'stats',
    description: 'sandboxed',
    parameters: { type: 'object' },
    execution: { kind: 'sandboxed-code' },
  },
};
const registry = {
  async list() {
    return [
      { name: 'python', active: 'r1' },
      { name: 'stats', active: 'r2' },
    ];
  },
  async resolve(ref: string) {
    const m = manifests[ref.split('@')[0]!];
    if (!m) throw new TyError('E_UNKNOWN_TOOL', 'unknown');
    return { manifest: m };
  },
};

describe('mcp serve local tools', () => {
  it('lists sandboxed tools only and refuses a trusted-native call before the invoker runs', async () => {
    const invoked: string[] = [];
    const invoker = {
      async invoke(ref: string) {
        invoked.push(ref);
        return { ok: true as const, result: 'ran' };
      },
    };
    const local = localTools(invoker, registry, 'mcp:test');
    expect((await local.list()).map((t) => t.name)).toEqual(['stats']);
    const err = await local.call('python', { code: 'print(1)' }, new AbortController().signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TyError);
    expect((err as TyError).code).toBe('E_CAPABILITY_DENIED');
    const err2 = await local.call('python@r1', {}, new AbortController().signal).catch((e: unknown) => e);
    expect((err2 as TyError).code).toBe('E_CAPABILITY_DENIED');
    expect(invoked).toEqual([]);
    expect(await local.call('stats', {}, new AbortController().signal)).toEqual({
      content: [{ type: 'text', text: 'ran' }],
    });
    expect(invoked).toEqual(['stats']);
  });
});
