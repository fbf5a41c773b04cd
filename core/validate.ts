// JSON Schema (draft 2020-12) checks for tool parameters and call arguments, via ajv; core, trusted side.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import formatsModule from 'ajv-formats';
import { RE2JS } from 're2js';
import { TyError } from './errors.js';

// ajv-formats is CommonJS; its plugin is module.exports (and .default under some bundlers).
const addFormats = ((formatsModule as unknown as { default?: unknown }).default ?? formatsModule) as (ajv: Ajv2020) => unknown;

/** The only `$schema` accepted (or none): JSON Schema draft 2020-12. */
export const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

/** Thrown by `linearRegExp` for a pattern it refuses; `message` says which construct and why. */
export class UnsupportedPatternError extends Error {
  constructor(readonly pattern: string, reason: string) {
    super(`pattern ${JSON.stringify(pattern.length > 120 ? `${pattern.slice(0, 120)}…` : pattern)} ${reason}`);
    this.name = 'UnsupportedPatternError';
  }
}

/**
 * An escape `\k` in an ECMA-262 `u`-mode pattern that already compiled is a named backreference;
 * re2js's translation would silently turn it into the literal "k<name>", so it is looked for first.
 */
function hasNamedBackreference(pattern: string): boolean {
  for (let i = 0; i < pattern.length - 1; i++) {
    if (pattern[i] !== '\\') continue;
    if (pattern[i + 1] === 'k') return true;
    i++; // skip the escaped character
  }
  return false;
}

/** ECMA-262 WhiteSpace and LineTerminator code points (what `\s` means there), in RE2 class syntax. */
const ECMA_WS = '\\t\\n\\x0B\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}';

/**
 * Rewrite the escapes whose meaning differs between ECMA-262 and RE2 into explicit classes: `\s` (RE2:
 * ASCII whitespace only) and, outside a class, `\S` and `.` (RE2's `.` excludes only `\n`; ECMA-262's
 * also excludes `\r`, U+2028, U+2029). `\S` inside a class keeps RE2's meaning (it then also matches
 * Unicode spaces). Input: a pattern that already compiled as an ECMA-262 `u`-mode RegExp.
 */
function ecmaClasses(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '\\' && i + 1 < pattern.length) {
      const n = pattern[i + 1] as string;
      if (n === 's') out += inClass ? ECMA_WS : `[${ECMA_WS}]`;
      else if (n === 'S' && !inClass) out += `[^${ECMA_WS}]`;
      else out += c + n;
      i++;
    } else if (inClass) {
      if (c === ']') inClass = false;
      out += c;
    } else if (c === '[') {
      inClass = true;
      out += c;
    } else out += c === '.' ? '[^\\n\\r\\x{2028}\\x{2029}]' : c;
  }
  return out;
}

/** Longest schema pattern accepted, in UTF-16 code units. */
export const MAX_PATTERN_CHARS = 4096;
const compiledPatterns = new Map<string, RE2JS>();

/** What `linearRegExp` returns. `toString` is unique per pattern: ajv keys its compiled-pattern scope by it. */
class LinearPattern {
  constructor(readonly source: string, readonly re: RE2JS) {}
  test(s: string): boolean {
    return this.re.test(s);
  }
  toString(): string {
    return `re2:${this.source}`;
  }
}

/**
 * Compile a JSON Schema `pattern` (ECMA-262 syntax, `u` mode) for a linear-time engine (re2js, a
 * JavaScript port of RE2: matching time grows linearly with the input, so no pattern can stall the
 * host, unlike backtracking `RegExp`). The pattern must be a valid ECMA-262 `u`-mode expression
 * (checked by compiling, never running, a `RegExp`) and expressible in RE2 after re2js's own
 * ECMA-262 translation. Refused: backreferences (`\1`, `\k<name>`), lookahead and lookbehind, and
 * repeat counts over 1000 (RE2 limit), Unicode property names RE2 does not know (e.g. `\p{Letter}`;
 * `\p{L}` works). `\s`, `\S` and `.` keep their ECMA-262 meaning (see ecmaClasses); remaining
 * difference: `\S` inside a class also matches Unicode spaces.
 * Shape: ajv's `RegExpEngine` (`(pattern, flags) => { test(s): boolean }`); `flags` is ajv's `"u"` or `""`
 * and is ignored (RE2 always matches by code point). Compiled patterns are cached (bounded).
 * @throws UnsupportedPatternError naming the construct.
 */
export function linearRegExp(pattern: string, _flags = 'u'): LinearPattern {
  if (typeof pattern !== 'string') throw new UnsupportedPatternError(String(pattern), 'is not a string');
  const cached = compiledPatterns.get(pattern);
  if (cached) return new LinearPattern(pattern, cached);
  if (pattern.length > MAX_PATTERN_CHARS) throw new UnsupportedPatternError(pattern, `is longer than ${MAX_PATTERN_CHARS} characters`);
  try {
    new RegExp(pattern, 'u'); // syntax check only: compiling never backtracks
  } catch {
    throw new UnsupportedPatternError(pattern, 'is not a valid ECMA-262 regular expression (JSON Schema patterns use ECMA-262 syntax, "u" mode)');
  }
  if (hasNamedBackreference(pattern)) throw new UnsupportedPatternError(pattern, 'uses a backreference (\\k<name>), which the linear-time pattern engine cannot run; rewrite it without backreferences');
  let re: RE2JS;
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(ecmaClasses(pattern)));
  } catch (e) {
    const why = e instanceof Error ? e.message.slice(0, 200) : 'cannot be compiled';
    throw new UnsupportedPatternError(pattern, `uses a construct the linear-time pattern engine cannot run (backreferences, lookahead, lookbehind, repeat counts over 1000, long Unicode property names such as \\p{Letter}: use \\p{L}): ${why}`);
  }
  if (compiledPatterns.size >= 512) {
    const oldest = compiledPatterns.keys().next().value;
    if (oldest !== undefined) compiledPatterns.delete(oldest);
  }
  compiledPatterns.set(pattern, re);
  return new LinearPattern(pattern, re);
}
linearRegExp.code = 'linearRegExp'; // ajv's RegExpEngine carries a name for standalone code (unused: no standalone code here)

/**
 * Options every ajv instance in tysandbox must use: schema regexes (`pattern`, `patternProperties`,
 * `propertyNames.pattern`) run on `linearRegExp`, and ajv's own compile-time check of `properties`
 * names against `patternProperties` (plain backtracking `RegExp`) is switched off.
 */
export const LINEAR_REGEXP_OPTIONS = { code: { regExp: linearRegExp }, allowMatchingProperties: true } as const;

const SUB_SCHEMA = new Set(['items', 'additionalItems', 'contains', 'additionalProperties', 'propertyNames', 'not', 'if', 'then', 'else', 'unevaluatedItems', 'unevaluatedProperties', 'contentSchema']);
const SUB_SCHEMA_MAP = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
const SUB_SCHEMA_LIST = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);

/**
 * Compile every regex a schema holds (`pattern` values and `patternProperties` keys, at any depth, through
 * schema-valued keywords only: values of `const`, `enum`, `default`, `examples` are data and skipped) on
 * `linearRegExp`, so a pattern ajv would skip (e.g. a `patternProperties` key whose schema is `{}`) is
 * refused the same way as one it compiles.
 * @throws UnsupportedPatternError for the first pattern refused.
 */
export function checkSchemaPatterns(schema: unknown, depth = 0): void {
  if (depth > 64 || schema === null || typeof schema !== 'object' || Array.isArray(schema)) return;
  for (const [k, v] of Object.entries(schema as Record<string, unknown>)) {
    if (k === 'pattern' && typeof v === 'string') linearRegExp(v);
    else if (SUB_SCHEMA.has(k)) {
      if (Array.isArray(v)) for (const x of v) checkSchemaPatterns(x, depth + 1); // draft-07 tuple `items`
      else checkSchemaPatterns(v, depth + 1);
    } else if (SUB_SCHEMA_MAP.has(k) && v !== null && typeof v === 'object' && !Array.isArray(v)) {
      for (const [key, sub] of Object.entries(v as Record<string, unknown>)) {
        if (k === 'patternProperties') linearRegExp(key);
        checkSchemaPatterns(sub, depth + 1);
      }
    } else if (SUB_SCHEMA_LIST.has(k) && Array.isArray(v)) for (const x of v) checkSchemaPatterns(x, depth + 1);
  }
}

/** Turn an ajv compile failure into the schema problem to report (an unsupported pattern is named as such). */
export function schemaCompileMessage(e: unknown): string {
  if (e instanceof UnsupportedPatternError) return e.message;
  return (e instanceof Error ? e.message : String(e)).slice(0, 500);
}

/**
 * A fresh ajv per schema: strict mode on (unknown keywords, ambiguous types and unreachable `required`
 * are errors), formats from ajv-formats, no type coercion, no defaults written into arguments,
 * and no schema loading (remote `$ref` is refused before ajv sees it, see `checkRefs`).
 */
function newAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: false, coerceTypes: false, useDefaults: false, validateFormats: true, ...LINEAR_REGEXP_OPTIONS });
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
    checkSchemaPatterns(schema);
    return newAjv().compile(schema as Record<string, unknown>);
  } catch (e) {
    if (e instanceof UnsupportedPatternError) throw new TyError('E_INVALID_MANIFEST', `${field}: ${e.message}`, { path: field });
    throw new TyError('E_INVALID_MANIFEST', `${field} is not a valid JSON Schema (draft 2020-12, strict): ${schemaCompileMessage(e)}`, { path: field });
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
