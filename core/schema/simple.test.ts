// Unit tests for the plain-object schema shortcut: it only ever says "valid" where the full validator does; trusted
// side.
import { describe, expect, it } from 'vitest';
import { Validator, type SchemaDraft } from '@cfworker/json-schema';
import { simpleObjectCheck } from './simple.js';
import { checkToolArguments } from '../mcp/bridge/args.js';

const schemas: Record<string, unknown>[] = [
  {
    type: 'object',
    properties: { message: { type: 'string', description: 'Message to echo' } },
    required: ['message'],
  },
  {
    $schema: 'http://json-schema.org/draft-07/schema#',
    type: 'object',
    properties: { message: { type: 'string' } },
    required: ['message'],
    additionalProperties: false,
  },
  {
    type: 'object',
    properties: { n: { type: 'integer' }, x: { type: 'number', default: 1 }, b: { type: 'boolean', title: 'B' } },
  },
  { type: 'object', properties: {}, additionalProperties: false },
  { type: 'object', properties: { a: { type: 'string' } }, required: ['a', 'missing'], additionalProperties: false },
  { type: 'object' },
];
const values: unknown[] = [
  {},
  { message: 'm' },
  { message: 5 },
  { message: null },
  { message: 'm', extra: 1 },
  { n: 1 },
  { n: 1.5 },
  { n: 2 ** 60 },
  { x: 1e308 },
  { x: 'x' },
  { b: true },
  { b: 'true' },
  { a: 'a' },
  { a: 'a', missing: 1 },
  [],
  null,
  'str',
  3,
  { n: -0 },
  Object.create(null),
  JSON.parse('{"__proto__": 1, "message": "m"}'),
];

describe('simpleObjectCheck', () => {
  it('answers true only where the full validator (draft 7 and 2020-12) says valid', () => {
    for (const schema of schemas) {
      const check = simpleObjectCheck(schema);
      expect(check, JSON.stringify(schema)).toBeDefined();
      for (const draft of ['7', '2020-12'] as SchemaDraft[]) {
        const v = new Validator(schema as never, draft, true);
        for (const value of values) {
          if (check!(value))
            expect(v.validate(value).valid, `${JSON.stringify(schema)} ${JSON.stringify(value)} ${draft}`).toBe(true);
        }
      }
    }
    // and it does answer for the common calls
    expect(simpleObjectCheck(schemas[0])!({ message: 'm' })).toBe(true);
    expect(simpleObjectCheck(schemas[2])!({ n: 1, x: 2.5, b: false })).toBe(true);
  });

  it('takes no schema with a keyword that constrains beyond the type', () => {
    const other: unknown[] = [
      { type: 'object', properties: { s: { type: 'string', minLength: 1 } } },
      { type: 'object', properties: { s: { type: 'string', pattern: '^a' } } },
      { type: 'object', properties: { s: { type: 'string', format: 'email' } } },
      { type: 'object', properties: { s: { type: 'string', enum: ['a'] } } },
      { type: 'object', properties: { s: { type: ['string', 'null'] } } },
      { type: 'object', properties: { s: { type: 'array' } } },
      { type: 'object', properties: { s: { $ref: '#/$defs/x' } }, $defs: { x: { type: 'string' } } },
      { type: 'object', properties: { s: true } },
      { type: 'object', properties: { s: { type: 'string' } }, additionalProperties: { type: 'string' } },
      { type: 'object', minProperties: 1 },
      { type: 'object', required: 'a' },
      { type: 'string' },
      { properties: {} },
    ];
    for (const s of other) expect(simpleObjectCheck(s), JSON.stringify(s)).toBeUndefined();
  });

  it("a tool call that does not fit still gets the validator's own refusal", () => {
    const schema = { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] };
    expect(checkToolArguments(schema, { message: 'm' })).toEqual({ ok: true, args: { message: 'm' } });
    const r = checkToolArguments(schema, { message: 5 });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(/message/);
    const missing = checkToolArguments(schema, {});
    expect(missing.ok).toBe(false);
  });
});
