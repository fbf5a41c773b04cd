// Unit tests for MCP namespace schema merging and target choice; core, trusted side.
import { describe, expect, it } from 'vitest';
import { NamespaceSchema, chooseTargets, mergedSchema, type NamespaceAction } from './namespace.js';

const action: NamespaceAction = {
  name: 'find',
  access: 'read',
  targets: [
    { kind: 'a', server: 'fa', tool: 'find' },
    { kind: 'b', server: 'fb', tool: 'find' },
  ],
};
const schemas = new Map<string, unknown>([
  ['a', { type: 'object', properties: { q: { type: 'string' }, lang: { type: 'string' } }, required: ['q'] }],
  ['b', { type: 'object', properties: { q: { type: 'string' }, repo: { type: 'string' } }, required: ['q', 'repo'] }],
]);

describe('mergedSchema', () => {
  it('is one flat object: every property, kind naming each target, required only what all require', () => {
    const s = mergedSchema(action, schemas) as {
      properties: Record<string, { enum?: string[] }>;
      required: string[];
      additionalProperties: boolean;
    };
    expect(Object.keys(s.properties).sort()).toEqual(['kind', 'lang', 'q', 'repo']);
    expect(s.properties.kind?.enum).toEqual(['a', 'b']);
    expect(s.required).toEqual(['kind', 'q']);
    expect(s.additionalProperties).toBe(false);
  });
  it('a broadcast read does not require kind', () => {
    const s = mergedSchema({ ...action, broadcast: true }, schemas) as { required: string[] };
    expect(s.required).toEqual(['q']);
  });
});

describe('chooseTargets', () => {
  it('selects by kind and strips it; unknown or missing kind is refused', () => {
    const c = chooseTargets(action, { kind: 'b', q: 'x', repo: 'r' });
    expect(c).toEqual({ ok: true, targets: [action.targets[1]], args: { q: 'x', repo: 'r' } });
    expect(chooseTargets(action, { q: 'x' }).ok).toBe(false);
    expect(chooseTargets(action, { kind: 'c', q: 'x' }).ok).toBe(false);
    expect(chooseTargets(action, { kind: ['a'], q: 'x' }).ok).toBe(false);
  });
  it('a broadcast read without kind goes to every target', () => {
    const c = chooseTargets({ ...action, broadcast: true }, { q: 'x' });
    expect(c.ok && c.targets.map((t) => t.kind)).toEqual(['a', 'b']);
  });
  it('keeps a __proto__ field as an own field so later checks see it', () => {
    const c = chooseTargets(action, JSON.parse('{"kind":"a","q":"x","__proto__":{"p":1}}'));
    expect(c.ok && Object.keys(c.args)).toEqual(['q', '__proto__']);
  });
});

describe('NamespaceSchema', () => {
  it('refuses a broadcast mutation, duplicate kinds and unknown fields', () => {
    const base = { v: 1, name: 'code', actions: [{ ...action }] };
    expect(NamespaceSchema.safeParse(base).success).toBe(true);
    expect(
      NamespaceSchema.safeParse({ ...base, actions: [{ ...action, access: 'mutation', broadcast: true }] }).success,
    ).toBe(false);
    expect(
      NamespaceSchema.safeParse({ ...base, actions: [{ ...action, targets: [action.targets[0], action.targets[0]] }] })
        .success,
    ).toBe(false);
    expect(NamespaceSchema.safeParse({ ...base, extra: 1 }).success).toBe(false);
  });
});
