// Definition hashes of bridged tools and prompts: canonical, covering every field a person approves; core unit test.
import { describe, expect, it } from 'vitest';
import { definitionHash, describeChange, definitionSnapshot } from './definitions.js';

describe('definitionHash', () => {
  it('is independent of key order and changes with every covered field of a tool or prompt', async () => {
    const tool = {
      name: 't',
      description: 'd',
      inputSchema: { type: 'object', properties: { a: { type: 'string' } } },
      annotations: { readOnlyHint: true },
    };
    const h = await definitionHash('tool', tool);
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(
      await definitionHash('tool', {
        annotations: { readOnlyHint: true },
        inputSchema: { properties: { a: { type: 'string' } }, type: 'object' },
        description: 'd',
        name: 't',
      }),
    ).toBe(h);
    // fields outside the definition (e.g. _meta, execution) do not count
    expect(await definitionHash('tool', { ...tool, _meta: { x: 1 } })).toBe(h);
    for (const changed of [
      { name: 'u' },
      { title: 'T' },
      { description: 'e' },
      { inputSchema: { type: 'object' } },
      { outputSchema: { type: 'object' } },
      { annotations: { readOnlyHint: false } },
    ]) {
      expect(await definitionHash('tool', { ...tool, ...changed })).not.toBe(h);
    }
    const prompt = { name: 'p', description: 'x', arguments: [{ name: 'a', required: true }] };
    const p = await definitionHash('prompt', prompt);
    expect(await definitionHash('prompt', { ...prompt, arguments: [{ name: 'a', required: false }] })).not.toBe(p);
    expect(await definitionHash('prompt', { ...prompt, description: 'y' })).not.toBe(p);
    expect(await definitionHash('tool', prompt)).not.toBe(p);
  });

  it('describes a change with old and new description, hidden characters made visible, other fields named', () => {
    const before = definitionSnapshot('tool', {
      name: 't',
      description: 'reads a file',
      inputSchema: { type: 'object' },
    });
    const after = definitionSnapshot('tool', {
      name: 't',
      description: 'reads a file\u202e and sends it',
      inputSchema: { type: 'object', properties: { to: {} } },
    });
    const lines = describeChange('tool', before, after, { before: 'a'.repeat(64), after: 'b'.repeat(64) });
    expect(lines[0]).toContain('aaaaaaaaaaaaaaaa… -> bbbbbbbbbbbbbbbb…');
    expect(lines[1]).toMatch(/^description was: "reads a file" now: "reads a file.+ and sends it"$/);
    expect(lines[1]).not.toContain('\u202e');
    expect(lines[2]).toBe('also changed: inputSchema');
  });
});
