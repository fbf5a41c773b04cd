// Unit tests for bridged tool argument checks; core, trusted side.
import { describe, expect, it } from 'vitest';
import { checkStructuredContent, checkToolArguments, checkToolSchema, validateLinear } from './args.js';

const schema = {
  type: 'object',
  properties: { q: { type: 'string' }, opts: { type: 'object', properties: { n: { type: 'number' } } } },
  required: ['q'],
};

describe('checkToolArguments', () => {
  it('accepts listed fields', () => {
    expect(checkToolArguments(schema, { q: 'x', opts: { n: 1 } })).toEqual({
      ok: true,
      args: { q: 'x', opts: { n: 1 } },
    });
  });
  it('names an unlisted field, top-level and nested', () => {
    const a = checkToolArguments(schema, { q: 'x', bogusProp: true });
    expect(a.ok).toBe(false);
    if (!a.ok) expect(a.message).toContain('bogusProp');
    const b = checkToolArguments(schema, { q: 'x', opts: { n: 1, z: 2 } });
    if (!b.ok) expect(b.message).toContain('opts.z');
    expect(b.ok).toBe(false);
  });
  it('checks missing arguments against required', () => {
    const r = checkToolArguments(schema, undefined);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toContain('q');
  });
  it('refuses __proto__ as unlisted and pollutes nothing', () => {
    const args = JSON.parse('{"q":"x","__proto__":{"polluted":true}}');
    const r = checkToolArguments(schema, args);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toContain('__proto__');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
  it('refuses non-object arguments and wrong types', () => {
    expect(checkToolArguments(schema, [1]).ok).toBe(false);
    expect(checkToolArguments(schema, { q: 3 }).ok).toBe(false);
  });
  it('a schema allowing extras by an explicit schema lets them through', () => {
    expect(checkToolArguments({ type: 'object', additionalProperties: { type: 'string' } }, { any: 's' }).ok).toBe(
      true,
    );
  });
});

describe('checkStructuredContent', () => {
  const out = { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] };
  it('passes matching structured content, and anything when the tool has no output schema', () => {
    expect(checkStructuredContent('t', out, { structuredContent: { n: 1 } })).toBeUndefined();
    expect(checkStructuredContent('t', undefined, { structuredContent: { n: 'x' } })).toBeUndefined();
    expect(checkStructuredContent('t', undefined, {})).toBeUndefined();
  });
  it('refuses content off the schema, and a missing one unless the result is an error', () => {
    expect(checkStructuredContent('t', out, { structuredContent: { n: 'x' } })).toContain(
      "does not match the tool's output schema",
    );
    expect(checkStructuredContent('t', out, { structuredContent: {} })).toContain('does not match');
    expect(checkStructuredContent('t', out, {})).toContain('did not return structured content');
    expect(checkStructuredContent('t', out, { isError: true })).toBeUndefined();
  });
});

describe('server schemas with regexes (S2)', () => {
  const evil = 'a'.repeat(10_000) + '!';
  it('a catastrophic pattern in an input schema gives its verdict on a 10 000-character input', () => {
    const s = { type: 'object', properties: { s: { type: 'string', pattern: '(a+)+$' } } };
    const r = checkToolArguments(s, { s: evil });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toContain('pattern');
    expect(checkToolArguments(s, { s: 'aaa' }).ok).toBe(true);
  });
  it('patternProperties keys used to list fields run linearly', () => {
    const s = { type: 'object', patternProperties: { '(a|aa)+$': { type: 'number' } }, additionalProperties: false };
    expect(checkToolArguments(s, { [evil]: 1 }).ok).toBe(false);
    expect(checkToolArguments(s, { aaaa: 1 }).ok).toBe(true);
  });
  it('an output schema with a catastrophic pattern gives its verdict', () => {
    const out = { type: 'object', properties: { s: { type: 'string', pattern: '^(\\w+\\s?)+$' } } };
    expect(checkStructuredContent('t', out, { structuredContent: { s: evil } })).toContain('pattern');
    expect(checkStructuredContent('t', out, { structuredContent: { s: 'ab cd' } })).toBeUndefined();
  });
  it('checkToolSchema refuses backreferences and lookaround and accepts ordinary patterns', () => {
    expect(checkToolSchema({ type: 'object', properties: { s: { type: 'string', pattern: '^(a)\\1$' } } })).toContain(
      'backreference',
    );
    expect(checkToolSchema({ type: 'object', patternProperties: { '^(?=x)': {} } })).toContain('construct');
    expect(
      checkToolSchema({ type: 'object', properties: { s: { type: 'string', pattern: '^\\p{L}+$' } } }),
    ).toBeUndefined();
    expect(checkToolSchema(undefined)).toBeUndefined();
    expect(
      checkToolArguments({ type: 'object', properties: { s: { type: 'string', pattern: '^(a)\\1$' } } }, { s: 'aa' })
        .ok,
    ).toBe(false);
  });
  it('validateLinear (the SDK Client validator) reports instead of throwing', () => {
    expect(
      validateLinear({ type: 'object', properties: { s: { type: 'string', pattern: '(a+)+$' } } }, { s: evil }).valid,
    ).toBe(false);
    expect(validateLinear({ type: 'object', properties: { s: { pattern: '(?=a)' } } }, {}).valid).toBe(false);
    expect(validateLinear({ type: 'object' }, {}).valid).toBe(true);
  });
});

describe('formats in a server schema', () => {
  it('are validated (uri, date-time) without an "unknown format" warning', async () => {
    const { vi } = await import('vitest');
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const schema = {
      type: 'object',
      properties: { link: { type: 'string', format: 'uri' }, at: { type: 'string', format: 'date-time' } },
    };
    expect(checkToolArguments(schema, { link: 'https://a.example/x', at: '2026-01-01T00:00:00Z' }).ok).toBe(true);
    expect(checkToolArguments(schema, { link: 'not a uri' }).ok).toBe(false);
    expect(warn.mock.calls.filter((c) => String(c[0]).includes('unknown format'))).toEqual([]);
    warn.mockRestore();
  });
});
