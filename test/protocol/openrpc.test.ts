// rpc.discover: the OpenRPC 1.3 document generated from the zod schemas validates against the official meta-schema,
// and equals the committed copy docs/openrpc.json (a schema change fails here until `npm run openrpc`); test side.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { openRpcDocument } from '../../core/registration/discover.js';
import { REGISTRATION_METHODS } from '../../protocol/registration.js';
import { OPENRPC_FILE, openRpcText } from './write-openrpc.js';

const require = createRequire(import.meta.url);

/** A validator of OpenRPC documents: @open-rpc/meta-schema over @json-schema-tools/meta-schema (its JSON Schema). */
function openRpcValidator(): { validate: (doc: unknown) => boolean; errors: () => unknown } {
  const Ajv = require('ajv') as new (
    o: object,
  ) => {
    addSchema(s: object, id: string): void;
    compile(s: object): ((d: unknown) => boolean) & { errors?: unknown };
  };
  const { openrpcDocument } = require('@open-rpc/meta-schema') as { openrpcDocument: Record<string, unknown> };
  const jsonSchemaMeta = (require('@json-schema-tools/meta-schema') as { default: Record<string, unknown> }).default;
  const plain = (s: Record<string, unknown>) => {
    const c = JSON.parse(JSON.stringify(s)) as Record<string, unknown>;
    delete c.$schema; // their meta-schema URIs; ajv validates with its draft-07 rules
    return c;
  };
  const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false, logger: false });
  ajv.addSchema(plain(jsonSchemaMeta), 'https://meta.json-schema.tools');
  const v = ajv.compile(plain(openrpcDocument));
  return { validate: (d) => v(d), errors: () => v.errors };
}

describe('rpc.discover (OpenRPC 1.3)', () => {
  it('validates against the OpenRPC meta-schema; a broken document does not', () => {
    const { validate, errors } = openRpcValidator();
    const doc = openRpcDocument();
    expect(validate(doc), JSON.stringify(errors())).toBe(true);
    const broken = openRpcDocument() as { methods: { params: { schema: unknown }[] }[] };
    broken.methods[0]!.params[0]!.schema = { type: 5 };
    expect(validate(broken)).toBe(false);
    expect(validate({ ...doc, openrpc: '9.9.9' })).toBe(false);
  });

  it('describes every method of the protocol with by-name params, and every notification', () => {
    const doc = openRpcDocument() as {
      methods: { name: string; paramStructure: string; params: { name: string; required: boolean }[] }[];
      'x-notifications': { name: string }[];
    };
    expect(doc.methods.map((m) => m.name)).toEqual([...REGISTRATION_METHODS, '$/cancel']);
    for (const m of doc.methods) expect(m.paramStructure).toBe('by-name');
    const run = doc.methods.find((m) => m.name === 'tool/run')!;
    expect(run.params.map((p) => [p.name, p.required])).toEqual([
      ['ref', true],
      ['arguments', false],
      ['timeoutMs', false],
      ['disposable', false],
    ]);
    expect(doc['x-notifications'].map((n) => n.name)).toEqual(['$/progress', '$/log', 'tool/listChanged', 'tool/call']);
  });

  it('equals the committed copy docs/openrpc.json (after a schema change: npm run openrpc, and commit the diff)', () => {
    expect(readFileSync(OPENRPC_FILE, 'utf8'), 'docs/openrpc.json is stale: run `npm run openrpc`').toBe(openRpcText());
  });
});
