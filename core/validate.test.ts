// Unit tests for core/validate.ts (argument and schema checks); test side.
import { describe, expect, it } from 'vitest';
import { ArgValidator, checkSchema } from './validate.js';
import { TyError } from './errors.js';

const params = {
  type: 'object',
  properties: { text: { type: 'string', maxLength: 100 }, n: { type: 'integer', minimum: 1 }, when: { type: 'string', format: 'date-time' } },
  required: ['text'],
  additionalProperties: false,
};

function codeOf(fn: () => void): { code: string; message: string; data: unknown } {
  try {
    fn();
  } catch (e) {
    if (e instanceof TyError) return { code: e.code, message: e.message, data: e.data };
    throw e;
  }
  throw new Error('expected a TyError');
}

describe('ArgValidator', () => {
  it('accepts valid arguments', () => {
    const v = new ArgValidator();
    expect(() => v.validate('r1', params, { text: 'hi', n: 2, when: '2024-01-01T00:00:00Z' })).not.toThrow();
  });
  it('refuses an unlisted field under additionalProperties:false and names it', () => {
    const e = codeOf(() => new ArgValidator().validate('r1', params, { text: 'a', extra: 1 }));
    expect(e.code).toBe('E_INVALID_ARGS');
    expect(e.message).toContain('"/extra"');
    expect(e.message).toContain('remove it');
    expect(e.data).toEqual({ field: '/extra', keyword: 'additionalProperties' });
  });
  it('refuses unlisted nested fields too', () => {
    const nested = { type: 'object', properties: { o: { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false } }, additionalProperties: false };
    const e = codeOf(() => new ArgValidator().validate('r2', nested, { o: { a: 'x', b: 1 } }));
    expect(e.message).toContain('"/o/b"');
  });
  it('names missing, mistyped and badly formatted fields without echoing values', () => {
    const v = new ArgValidator();
    expect(codeOf(() => v.validate('r1', params, {})).message).toContain('missing required field "/text"');
    const t = codeOf(() => v.validate('r1', params, { text: 'SECRETVALUE', n: 'x' }));
    expect(t.message).toContain('"/n" must be of type integer');
    expect(t.message).not.toContain('SECRETVALUE');
    expect(codeOf(() => v.validate('r1', params, { text: 'a', when: 'yesterday' })).message).toContain('"/when"');
    expect(codeOf(() => v.validate('r1', params, [])).code).toBe('E_INVALID_ARGS');
  });
  it('cuts a long field name in the message', () => {
    const e = codeOf(() => new ArgValidator().validate('r1', params, { text: 'a', ['k'.repeat(100_000)]: 1 }));
    expect(e.message.length).toBeLessThan(400);
  });
  it('does not coerce or fill in defaults', () => {
    const s = { type: 'object', properties: { n: { type: 'number', default: 5 } }, additionalProperties: false };
    const args: Record<string, unknown> = {};
    new ArgValidator().validate('r3', s, args);
    expect(args).toEqual({});
    expect(codeOf(() => new ArgValidator().validate('r3', s, { n: '5' })).code).toBe('E_INVALID_ARGS');
  });
  it('caches compiled schemas by revision, bounded', () => {
    const v = new ArgValidator(2);
    v.validate('a', params, { text: 'x' });
    v.validate('b', params, { text: 'x' });
    v.validate('a', params, { text: 'x' });
    expect(v.size).toBe(2);
    v.validate('c', params, { text: 'x' });
    expect(v.size).toBe(2);
  });
});

describe('checkSchema', () => {
  it('accepts a strict 2020-12 object schema with local $ref', () => {
    expect(() => checkSchema({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', $defs: { s: { type: 'string' } }, properties: { a: { $ref: '#/$defs/s' } } })).not.toThrow();
  });
  it.each([
    ['remote $ref', { type: 'object', properties: { a: { $ref: 'https://example.com/s.json' } } }, '$ref must point inside'],
    ['relative document $ref', { type: 'object', properties: { a: { $ref: 'other.json#/x' } } }, '$ref must point inside'],
    ['remote $dynamicRef', { type: 'object', properties: { a: { $dynamicRef: 'http://x/y#a' } } }, '$dynamicRef'],
    ['unknown keyword (strict)', { type: 'object', properties: { a: { type: 'string', maxLenght: 3 } } }, 'strict'],
    ['draft-07 $schema', { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' }, 'draft 2020-12'],
    ['non-object parameters', { type: 'string' }, '"type": "object"'],
    ['not an object', [1, 2], 'JSON Schema object'],
    ['$async (a Promise would pass every argument)', { $async: true, type: 'object', additionalProperties: false }, '$async'],
    ['nested $async', { type: 'object', properties: { a: { $async: true, type: 'string' } } }, '$async'],
    ['unknown format (strict)', { type: 'object', properties: { a: { type: 'string', format: 'nope' } } }, 'format'],
  ])('refuses %s with E_INVALID_MANIFEST', (_n, schema, text) => {
    const e = codeOf(() => checkSchema(schema));
    expect(e.code).toBe('E_INVALID_MANIFEST');
    expect(e.message).toContain(text);
  });
  it('outputSchema need not be an object schema', () => {
    expect(() => checkSchema({ type: 'string' }, 'outputSchema')).not.toThrow();
  });
});
