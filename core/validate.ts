// JSON Schema (draft 2020-12) checks for tool parameters and call arguments, via ajv; core, trusted side.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import formatsModule from 'ajv-formats';
import { TyError } from './errors.js';

// ajv-formats is CommonJS; its plugin is module.exports (and .default under some bundlers).
const addFormats = ((formatsModule as unknown as { default?: unknown }).default ?? formatsModule) as (ajv: Ajv2020) => unknown;

/** The only `$schema` accepted (or none): JSON Schema draft 2020-12. */
export const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

/**
 * A fresh ajv per schema: strict mode on (unknown keywords, ambiguous types and unreachable `required`
 * are errors), formats from ajv-formats, no type coercion, no defaults written into arguments,
 * and no schema loading (remote `$ref` is refused before ajv sees it, see `checkRefs`).
 */
function newAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: false, coerceTypes: false, useDefaults: false, validateFormats: true });
  addFormats(ajv);
  return ajv;
}

/** Walk a schema and refuse `$ref`/`$dynamicRef` that leave the document (anything but `#...`), `$async`, and a `$schema` other than 2020-12. */
function checkRefs(node: unknown, where: string, field: string, depth = 0): void {
  if (depth > 64) throw new TyError('E_INVALID_MANIFEST', `${field}: schema nests deeper than 64 levels`);
  if (Array.isArray(node)) {
    node.forEach((n, i) => checkRefs(n, `${where}/${i}`, field, depth + 1));
    return;
  }
  if (node === null || typeof node !== 'object') return;
  for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
    if ((k === '$ref' || k === '$dynamicRef') && (typeof v !== 'string' || !v.startsWith('#'))) {
      throw new TyError('E_INVALID_MANIFEST', `${field}${where || '/'}: ${k} must point inside the schema ("#/$defs/..."); references to other documents or URLs are not loaded`, { path: `${field}${where}` });
    }
    if (k === '$async') {
      throw new TyError('E_INVALID_MANIFEST', `${field}${where || '/'}: "$async" schemas are not supported (validation must be synchronous); remove it`, { path: `${field}${where}` });
    }
    if (k === '$schema' && (depth > 0 || (v !== DRAFT_2020_12 && v !== `${DRAFT_2020_12}#`))) {
      throw new TyError('E_INVALID_MANIFEST', `${field}${where || '/'}: only JSON Schema draft 2020-12 is supported; set "$schema": "${DRAFT_2020_12}" or leave it out`, { path: `${field}${where}` });
    }
    checkRefs(v, `${where}/${k}`, field, depth + 1);
  }
}

function compile(schema: unknown, field: string): ValidateFunction {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    throw new TyError('E_INVALID_MANIFEST', `${field} must be a JSON Schema object`, { path: field });
  }
  checkRefs(schema, '', field);
  try {
    return newAjv().compile(schema as Record<string, unknown>);
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    throw new TyError('E_INVALID_MANIFEST', `${field} is not a valid JSON Schema (draft 2020-12, strict): ${msg.slice(0, 500)}`, { path: field });
  }
}

/**
 * Check a schema at install time: compiles under strict draft 2020-12 rules; `parameters` must
 * describe an object (`"type": "object"`), as every model provider requires.
 * @throws TyError E_INVALID_MANIFEST naming the field and what to change.
 */
export function checkSchema(schema: unknown, field = 'parameters'): void {
  compile(schema, field);
  if (field === 'parameters' && (schema as Record<string, unknown>).type !== 'object') {
    throw new TyError('E_INVALID_MANIFEST', 'parameters must be a JSON Schema with "type": "object" (tool arguments are a JSON object)', { path: field });
  }
}

/** Field paths in messages are cut to this many characters (keys come from the caller). */
const MAX_FIELD_CHARS = 200;
const cut = (s: string) => (s.length > MAX_FIELD_CHARS ? `${s.slice(0, MAX_FIELD_CHARS)}…` : s);

/** Turn ajv's first error into one sentence that names the field (JSON Pointer, cut at 200 characters) and the fix; never echoes values. */
export function describeError(err: ErrorObject): { field: string; message: string } {
  const base = cut(err.instancePath || '');
  const p = err.params as Record<string, unknown>;
  const at = (s: string) => (s === '' ? 'the arguments' : `field "${s}"`);
  switch (err.keyword) {
    case 'additionalProperties': {
      const f = cut(`${base}/${String(p.additionalProperty)}`);
      return { field: f, message: `unlisted field "${f}" is not allowed by the tool's parameters; remove it` };
    }
    case 'unevaluatedProperties': {
      const f = cut(`${base}/${String(p.unevaluatedProperty)}`);
      return { field: f, message: `unlisted field "${f}" is not allowed by the tool's parameters; remove it` };
    }
    case 'required': {
      const f = cut(`${base}/${String(p.missingProperty)}`);
      return { field: f, message: `missing required field "${f}"; add it` };
    }
    case 'type':
      return { field: base, message: `${at(base)} must be of type ${String(p.type)}` };
    case 'enum':
      return { field: base, message: `${at(base)} must be one of ${JSON.stringify(p.allowedValues).slice(0, 300)}` };
    case 'const':
      return { field: base, message: `${at(base)} must equal ${JSON.stringify(p.allowedValue).slice(0, 300)}` };
    default:
      return { field: base, message: `${at(base)} ${err.message ?? 'is invalid'} (${err.keyword})` };
  }
}

/**
 * Argument validation with compiled schemas cached by revision id (bounded, least recently used).
 * A revision is immutable, so its compiled validator never goes stale.
 */
export class ArgValidator {
  readonly #cache = new Map<string, ValidateFunction>();
  constructor(readonly maxEntries = 256) {}

  /**
   * Validate `args` against `schema` (the revision's `parameters`).
   * @throws TyError E_INVALID_ARGS `{field, keyword}` in data, message naming the field and the fix;
   *   E_INVALID_MANIFEST when the schema itself does not compile.
   */
  validate(revision: string, schema: unknown, args: unknown): void {
    this.#check(revision, schema, args, 'E_INVALID_ARGS', 'invalid arguments');
  }

  /**
   * Validate a tool's result against its `outputSchema` (cached under `REV#output`).
   * @throws TyError E_TOOL_FAILED naming the field; E_INVALID_MANIFEST when the schema does not compile.
   */
  validateResult(revision: string, schema: unknown, result: unknown): void {
    this.#check(`${revision}#output`, schema, result, 'E_TOOL_FAILED', "the tool's result does not match its outputSchema");
  }

  #check(key: string, schema: unknown, value: unknown, code: 'E_INVALID_ARGS' | 'E_TOOL_FAILED', prefix: string): void {
    let fn = this.#cache.get(key);
    if (fn) {
      this.#cache.delete(key); // re-inserted below: most recently used last
    } else {
      fn = compile(schema, code === 'E_INVALID_ARGS' ? 'parameters' : 'outputSchema');
      if (this.#cache.size >= this.maxEntries) {
        const oldest = this.#cache.keys().next().value;
        if (oldest !== undefined) this.#cache.delete(oldest);
      }
    }
    this.#cache.set(key, fn);
    if (fn(value) === true) return; // strictly true: an async validator's Promise never passes
    const first = fn.errors?.[0];
    if (!first) throw new TyError(code, prefix);
    const { field, message } = describeError(first);
    throw new TyError(code, `${prefix}: ${message}`, { field, keyword: first.keyword });
  }

  get size(): number {
    return this.#cache.size;
  }
}
