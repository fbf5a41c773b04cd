// Unit tests for core/schema/validate.ts (argument and schema checks); test side.
import { describe, expect, it } from 'vitest';
import { ArgValidator, checkSchema } from './validate.js';
import { TyError } from '../errors.js';

const params = {
  type: 'object',
  properties: {
    text: { type: 'string', maxLength: 100 },
    n: { type: 'integer', minimum: 1 },
    when: { type: 'string', format: 'date-time' },
  },
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
    const nested = {
      type: 'object',
      properties: { o: { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false } },
      additionalProperties: false,
    };
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
  it('a value out of a bound names the bound from the schema (never the value), for numbers, strings, arrays and objects', () => {
    const b = {
      type: 'object',
      properties: {
        times: { type: 'integer', minimum: 1, maximum: 10 },
        ratio: { type: 'number', exclusiveMaximum: 1, multipleOf: 0.25 },
        name: { type: 'string', minLength: 2, maxLength: 4 },
        tags: { type: 'array', maxItems: 2 },
        opts: { type: 'object', minProperties: 1 },
      },
      additionalProperties: false,
    };
    const v = new ArgValidator();
    const msg = (args: unknown) => codeOf(() => v.validate('rb', b, args)).message;
    expect(msg({ times: 31337 })).toContain('field "/times" must be at most 10 (maximum)');
    expect(msg({ times: 31337 })).not.toContain('31337');
    expect(msg({ times: 0 })).toContain('"/times" must be at least 1 (minimum)');
    expect(msg({ ratio: 1 })).toContain('"/ratio" must be less than 1 (exclusiveMaximum)');
    expect(msg({ ratio: 0.3 })).toContain('"/ratio" must be a multiple of 0.25 (multipleOf)');
    expect(msg({ name: 'SECRETLONG' })).toContain('"/name" must have at most 4 characters (maxLength)');
    expect(msg({ name: 'x' })).toContain('must have at least 2 characters (minLength)');
    expect(msg({ tags: [1, 2, 3] })).toContain('"/tags" must have at most 2 items (maxItems)');
    expect(msg({ opts: {} })).toContain('"/opts" must have at least 1 field (minProperties)');
    expect(codeOf(() => v.validate('rb', b, { times: 31337 })).data).toMatchObject({
      field: '/times',
      keyword: 'maximum',
    });
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
    expect(() =>
      checkSchema({
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        $defs: { s: { type: 'string' } },
        properties: { a: { $ref: '#/$defs/s' } },
      }),
    ).not.toThrow();
  });
  it.each([
    [
      'remote $ref',
      { type: 'object', properties: { a: { $ref: 'https://example.com/s.json' } } },
      '$ref must point inside',
    ],
    [
      'relative document $ref',
      { type: 'object', properties: { a: { $ref: 'other.json#/x' } } },
      '$ref must point inside',
    ],
    ['remote $dynamicRef', { type: 'object', properties: { a: { $dynamicRef: 'http://x/y#a' } } }, '$dynamicRef'],
    ['unknown keyword (strict)', { type: 'object', properties: { a: { type: 'string', maxLenght: 3 } } }, 'strict'],
    ['draft-07 $schema', { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' }, 'draft 2020-12'],
    ['non-object parameters', { type: 'string' }, '"type": "object"'],
    ['not an object', [1, 2], 'JSON Schema object'],
    [
      '$async (a Promise would pass every argument)',
      { $async: true, type: 'object', additionalProperties: false },
      '$async',
    ],
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

describe('schema regexes run on a linear-time engine (S2)', () => {
  // A backtracking engine needs ~2^n steps on these inputs; 10 000 characters would never finish.
  const evil = 'a'.repeat(10_000) + '!';
  const catastrophic = ['(a+)+$', '^(a|a)*$', '(a|aa)+$', '^(a*)*b$', '(\\w+\\s?)+$', '^(([a-z])+.)+[A-Z]([a-z])+$'];
  it.each(catastrophic)('pattern %s gives its verdict on a 10 000-character input', (pattern) => {
    const schema = { type: 'object', properties: { s: { type: 'string', pattern } }, additionalProperties: false };
    const v = new ArgValidator();
    const e = codeOf(() => v.validate(`r-${pattern}`, schema, { s: evil }));
    expect(e.code).toBe('E_INVALID_ARGS');
    expect(e.data).toEqual({ field: '/s', keyword: 'pattern' });
  });
  it('patternProperties and propertyNames patterns are linear too', () => {
    const schema = {
      type: 'object',
      patternProperties: { '(a+)+$': { type: 'number' } },
      propertyNames: { pattern: '^(a|aa)+$' },
      additionalProperties: false,
    };
    const v = new ArgValidator();
    expect(codeOf(() => v.validate('pp', schema, { [evil]: 1 })).code).toBe('E_INVALID_ARGS');
    expect(() => v.validate('pp', schema, { aaaa: 1 })).not.toThrow();
    expect(codeOf(() => v.validate('pp', schema, { aaaa: 'x' })).code).toBe('E_INVALID_ARGS');
  });
  it('checking properties against patternProperties at install time does not run a backtracking RegExp', () => {
    const schema = {
      type: 'object',
      properties: { [evil]: { type: 'string' } },
      patternProperties: { '(a+)+$': { type: 'string' } },
    };
    expect(() => checkSchema(schema)).not.toThrow();
  });
  it.each([
    ['^(a)\\1$', 'backreference'],
    ['^(?<x>a)\\k<x>$', 'backreference'],
    ['a(?=b)', 'construct'],
    ['a(?!b)', 'construct'],
    ['(?<=a)b', 'construct'],
    ['(?<!a)b', 'construct'],
    ['a{1001}', 'construct'],
    ['(?i)abc', 'ECMA-262'],
    ['[', 'ECMA-262'],
  ])('refuses %s at install time with E_INVALID_MANIFEST', (pattern, word) => {
    const schema = { type: 'object', properties: { s: { type: 'string', pattern } } };
    const e = codeOf(() => checkSchema(schema));
    expect(e.code).toBe('E_INVALID_MANIFEST');
    expect(e.message).toContain(word);
    expect(e.message).toContain('parameters');
    const pp = codeOf(() => checkSchema({ type: 'object', patternProperties: { [pattern]: {} } }));
    expect(pp.code).toBe('E_INVALID_MANIFEST');
  });
  it('ordinary and Unicode patterns keep ECMA-262 meaning', () => {
    const cases: [string, string, boolean][] = [
      ['^[a-z]+$', 'abc', true],
      ['^[a-z]+$', 'abC', false],
      ['^\\d{4}-\\d{2}-\\d{2}$', '2024-01-31', true],
      ['^\\p{L}+$', 'héllo', true],
      ['^\\p{L}+$', 'hé1', false],
      ['^\\u00e9$', 'é', true],
      ['^\\u{1F600}$', '😀', true],
      ['^.$', '😀', true], // one code point in "u" mode
      ['^(?<year>\\d{4})$', '2024', true],
      ['a/b', 'xa/by', true], // unanchored: matches anywhere
      ['^[^/]+$', 'a/b', false],
      ['^$', '', true],
    ];
    const v = new ArgValidator();
    for (const [pattern, value, ok] of cases) {
      const schema = { type: 'object', properties: { s: { type: 'string', pattern } } };
      const run = () => v.validate(`u-${pattern}`, schema, { s: value });
      if (ok) expect(run, `${pattern} on ${value}`).not.toThrow();
      else expect(codeOf(run).code, `${pattern} on ${value}`).toBe('E_INVALID_ARGS');
    }
  });
  it('two different patterns in one schema each keep their own meaning', () => {
    const schema = {
      type: 'object',
      properties: { a: { type: 'string', pattern: '^x+$' }, b: { type: 'string', pattern: '^y+$' } },
    };
    const v = new ArgValidator();
    expect(() => v.validate('two', schema, { a: 'xx', b: 'yy' })).not.toThrow();
    expect(codeOf(() => v.validate('two', schema, { a: 'xx', b: 'xx' })).data).toEqual({
      field: '/b',
      keyword: 'pattern',
    });
  });
});

describe('ECMA-262 meaning kept where RE2 differs', () => {
  it.each([
    ['^\\s$', '\u00a0', true],
    ['^\\s$', '\u2028', true],
    ['^\\s+$', ' \t\n\v\f\r', true],
    ['^\\S+$', 'a\u00a0b', false],
    ['^\\S+$', 'ab', true],
    ['^[\\s]$', '\u3000', true],
    ['^[\\s\\S]+$', 'any\nthing\u00a0', true],
    ['^.$', '\r', false],
    ['^.$', '\u2029', false],
    ['^.$', 'x', true],
    ['^[.]$', '.', true],
    ['^[.]$', 'x', false],
    ['^a\\.b$', 'a.b', true],
    ['^a\\.b$', 'axb', false],
  ])('%s on %j gives %s (as RegExp with "u" does)', (pattern, value, expected) => {
    expect(new RegExp(pattern, 'u').test(value)).toBe(expected); // the reference
    const schema = { type: 'object', properties: { s: { type: 'string', pattern } } };
    const v = new ArgValidator();
    if (expected) expect(() => v.validate(`e-${pattern}`, schema, { s: value })).not.toThrow();
    else expect(codeOf(() => v.validate(`e-${pattern}`, schema, { s: value })).code).toBe('E_INVALID_ARGS');
  });
});

describe('validation generates no code (strict page CSP without unsafe-eval)', () => {
  it('checks schemas and arguments with Function and eval unusable', () => {
    const g = globalThis as unknown as { Function: unknown; eval: unknown };
    const saved = { Function: g.Function, eval: g.eval };
    const refuse = () => {
      throw new EvalError('code generation is refused here');
    };
    g.Function = refuse;
    g.eval = refuse;
    try {
      const schema = {
        type: 'object',
        properties: { s: { type: 'string', pattern: '^(a+)+$' }, n: { enum: [1, 2] } },
        required: ['s'],
        additionalProperties: false,
      };
      checkSchema(schema);
      const v = new ArgValidator();
      expect(() => v.validate('nogen', schema, { s: 'aaa', n: 1 })).not.toThrow();
      expect(codeOf(() => v.validate('nogen', schema, { s: 'aab' })).data).toEqual({ field: '/s', keyword: 'pattern' });
      expect(codeOf(() => v.validate('nogen', schema, { s: 'a', n: 3 })).message).toContain('must be one of [1,2]');
    } finally {
      g.Function = saved.Function;
      g.eval = saved.eval;
    }
    expect(globalThis.RegExp).toBe(RegExp); // the linear engine's stand-in is gone after validation
  });
  it.each([
    ['a $ref to nothing', { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } }, 'points to nothing'],
    [
      'a keyword value of the wrong shape',
      { type: 'object', properties: { a: { type: 'string', minLength: -1 } } },
      'whole number',
    ],
    ['a bad type name', { type: 'object', properties: { a: { type: 'text' } } }, 'one of null'],
    ['$dynamicRef', { type: 'object', properties: { a: { $dynamicRef: '#x' } } }, '$dynamicRef'],
  ])('refuses %s with E_INVALID_MANIFEST naming where', (_n, schema, text) => {
    const e = codeOf(() => checkSchema(schema));
    expect(e.code).toBe('E_INVALID_MANIFEST');
    expect(e.message).toContain(text);
    expect(e.message).toContain('parameters/properties/a');
  });
});
