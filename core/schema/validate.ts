// JSON Schema (draft 2020-12) checks for tool parameters, results and bridged MCP schemas, without code generation
// (@cfworker/json-schema) and with schema regexes on a linear-time engine (re2js); core, trusted side.
import { Validator, type OutputUnit, type SchemaDraft } from '@cfworker/json-schema';
import { RE2JS } from 're2js';
import { TyError } from '../errors.js';
import { schemaProblem } from './check.js';
import { simpleObjectCheck } from './simple.js';

export { DRAFT_2020_12 } from './check.js';

/** The RegExp constructor as it was when this module loaded (schema pattern syntax checks use it). */
const NativeRegExp = RegExp;

/** Thrown by `linearRegExp` for a pattern it refuses; `message` says which construct and why. */
export class UnsupportedPatternError extends Error {
  constructor(
    readonly pattern: string,
    reason: string,
  ) {
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
const ECMA_WS =
  '\\t\\n\\x0B\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}';

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

/** What `linearRegExp` returns: `test(s)` on the linear-time engine. */
class LinearPattern {
  constructor(
    readonly source: string,
    readonly re: RE2JS,
  ) {}
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
 * `flags` is ignored (JSON Schema patterns are `u` mode; RE2 always matches by code point). Compiled patterns
 * are cached (bounded, 512).
 * @throws UnsupportedPatternError naming the construct.
 */
export function linearRegExp(pattern: string, _flags = 'u'): LinearPattern {
  if (typeof pattern !== 'string') throw new UnsupportedPatternError(String(pattern), 'is not a string');
  const cached = compiledPatterns.get(pattern);
  if (cached) return new LinearPattern(pattern, cached);
  if (pattern.length > MAX_PATTERN_CHARS)
    throw new UnsupportedPatternError(pattern, `is longer than ${MAX_PATTERN_CHARS} characters`);
  try {
    new NativeRegExp(pattern, 'u'); // syntax check only: compiling never backtracks
  } catch {
    throw new UnsupportedPatternError(
      pattern,
      'is not a valid ECMA-262 regular expression (JSON Schema patterns use ECMA-262 syntax, "u" mode)',
    );
  }
  if (hasNamedBackreference(pattern))
    throw new UnsupportedPatternError(
      pattern,
      'uses a backreference (\\k<name>), which the linear-time pattern engine cannot run; rewrite it without backreferences',
    );
  let re: RE2JS;
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(ecmaClasses(pattern)));
  } catch (e) {
    const why = e instanceof Error ? e.message.slice(0, 200) : 'cannot be compiled';
    throw new UnsupportedPatternError(
      pattern,
      `uses a construct the linear-time pattern engine cannot run (backreferences, lookahead, lookbehind, ` +
        `repeat counts over 1000, long Unicode property names such as \\p{Letter}: use \\p{L}): ${why}`,
    );
  }
  if (compiledPatterns.size >= 512) {
    const oldest = compiledPatterns.keys().next().value;
    if (oldest !== undefined) compiledPatterns.delete(oldest);
  }
  compiledPatterns.set(pattern, re);
  return new LinearPattern(pattern, re);
}

const SUB_SCHEMA = new Set([
  'items',
  'additionalItems',
  'contains',
  'additionalProperties',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contentSchema',
]);
const SUB_SCHEMA_MAP = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
const SUB_SCHEMA_LIST = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);

/**
 * Compile every regex a schema holds (`pattern` values and `patternProperties` keys, at any depth, through
 * schema-valued keywords only: values of `const`, `enum`, `default`, `examples` are data and skipped) on
 * `linearRegExp` ahead of validation, so every pattern is refused or accepted when the schema is installed.
 * @throws UnsupportedPatternError for the first pattern refused.
 */
export function checkSchemaPatterns(schema: unknown, depth = 0): void {
  if (depth > 64 || schema === null || typeof schema !== 'object' || Array.isArray(schema)) return;
  for (const [k, v] of Object.entries(schema as Record<string, unknown>)) {
    if (k === 'pattern' && typeof v === 'string') linearRegExp(v);
    else if (SUB_SCHEMA.has(k)) {
      if (Array.isArray(v))
        for (const x of v) checkSchemaPatterns(x, depth + 1); // draft-07 tuple `items`
      else checkSchemaPatterns(v, depth + 1);
    } else if (SUB_SCHEMA_MAP.has(k) && v !== null && typeof v === 'object' && !Array.isArray(v)) {
      for (const [key, sub] of Object.entries(v as Record<string, unknown>)) {
        if (k === 'patternProperties') linearRegExp(key);
        checkSchemaPatterns(sub, depth + 1);
      }
    } else if (SUB_SCHEMA_LIST.has(k) && Array.isArray(v)) for (const x of v) checkSchemaPatterns(x, depth + 1);
  }
}

/** The schema problem to report for a compile failure (an unsupported pattern is named as such). */
export function schemaCompileMessage(e: unknown): string {
  if (e instanceof UnsupportedPatternError) return e.message;
  return (e instanceof Error ? e.message : String(e)).slice(0, 500);
}

/**
 * The validator (@cfworker/json-schema) compiles nothing: it walks the schema per value, so it runs under a page
 * CSP without 'unsafe-eval'. Its two regex keywords (`pattern`, `patternProperties`) construct `RegExp` from the
 * global binding; for the synchronous duration of one validation that binding is `LinearRegExp`, so every schema
 * regex runs on `linearRegExp`. Nothing else runs in that window (validation is synchronous over plain JSON data).
 * Where the global cannot be replaced (a frozen realm), a schema with regexes is refused rather than run on a
 * backtracking engine.
 */
function LinearRegExp(pattern: string): LinearPattern {
  return linearRegExp(pattern);
}
function withLinearRegExp<T>(fn: () => T): T {
  const g = globalThis as unknown as { RegExp: unknown };
  const saved = g.RegExp;
  try {
    g.RegExp = LinearRegExp;
  } catch {
    /* checked below */
  }
  if (g.RegExp !== LinearRegExp)
    throw new TyError(
      'E_INVALID_MANIFEST',
      'schema patterns cannot run on the linear-time engine in this environment (the global RegExp is frozen); remove "pattern" and "patternProperties"',
    );
  try {
    return fn();
  } finally {
    g.RegExp = saved;
  }
}

/** The first error of one validation: where in the value (JSON Pointer), which keyword, and its parameters. */
export interface SchemaError {
  instancePath: string;
  keyword: string;
  /** The field named by additionalProperties/unevaluatedProperties/required; the expected type(s). */
  property?: string;
  expected?: string;
  /** enum/const: the values the schema allows (from the schema, never from the value). */
  allowed?: unknown;
  /** A bound keyword's number (maximum, minLength, maxItems, ...), from the schema, never from the value. */
  limit?: number;
  /** The validator's own sentence (values never included by tysandbox's messages). */
  text: string;
}
/** A compiled schema: `undefined` when `value` is valid, else its first error. */
export type SchemaCheck = (value: unknown) => SchemaError | undefined;

/** Keywords whose error only summarizes a deeper one (the deeper one is reported). */
const SUMMARY = new Set([
  'properties',
  'patternProperties',
  'items',
  'prefixItems',
  'additionalItems',
  'allOf',
  '$ref',
  '$recursiveRef',
  'dependentSchemas',
  'dependencies',
  'then',
  'else',
  'contains',
]);

function pointerOf(location: string): string {
  const p = location.startsWith('#') ? location.slice(1) : location;
  try {
    return decodeURI(p);
  } catch {
    return p;
  }
}
function between(text: string, before: string, after: string): string | undefined {
  const i = text.indexOf(before);
  const j = text.lastIndexOf(after);
  return i >= 0 && j > i + before.length - 1 ? text.slice(i + before.length, j) : undefined;
}

/** The schema node at a `#/json/pointer` keyword location, if it resolves. */
function atPointer(root: unknown, location: string): unknown {
  let node = root;
  for (const raw of pointerOf(location).split('/').slice(1)) {
    const k = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !Object.prototype.hasOwnProperty.call(node, k)) return undefined;
    node = (node as Record<string, unknown>)[k];
  }
  return node;
}

function firstError(errors: OutputUnit[], schema: unknown): SchemaError | undefined {
  const e = errors.find((x) => !SUMMARY.has(x.keyword)) ?? errors[0];
  if (!e) return undefined;
  const out: SchemaError = { instancePath: pointerOf(e.instanceLocation), keyword: e.keyword, text: e.error };
  if (e.keyword === 'enum' || e.keyword === 'const') {
    const allowed = atPointer(schema, e.keywordLocation);
    if (allowed !== undefined) out.allowed = allowed;
  } else if (e.keyword === 'additionalProperties' || e.keyword === 'unevaluatedProperties') {
    const p = between(e.error, 'Property "', '" does not match');
    if (p !== undefined) out.property = p;
  } else if (e.keyword === 'required') {
    const p = between(e.error, 'required property "', '".');
    if (p !== undefined) out.property = p;
  } else if (e.keyword === 'type') {
    const t = between(e.error, 'Expected "', '".');
    if (t !== undefined) out.expected = t.replace(/", "/g, ', ');
  } else if (Object.prototype.hasOwnProperty.call(BOUNDS, e.keyword)) {
    const limit = atPointer(schema, e.keywordLocation);
    if (typeof limit === 'number' && Number.isFinite(limit)) out.limit = limit;
  }
  return out;
}

/**
 * Compile `schema` for repeated checks (a deep copy is kept: the validator annotates the objects it walks).
 * Patterns are compiled on `linearRegExp` first.
 * @param draft the draft to apply (tool manifests: 2020-12 only; bridged MCP schemas: their `$schema`).
 * @throws UnsupportedPatternError for a pattern refused; Error when the validator cannot index the schema.
 */
export function compileSchema(schema: unknown, draft: SchemaDraft = '2020-12'): SchemaCheck {
  checkSchemaPatterns(schema);
  const copy = JSON.parse(JSON.stringify(schema)) as object;
  const hasPatterns = /"(pattern|patternProperties)"\s*:/.test(JSON.stringify(schema));
  const v = new Validator(copy as never, draft, true);
  // the commonest tool schema (plainly typed fields) answered without the validator when the value plainly fits
  const plain = simpleObjectCheck(copy);
  return (value) => {
    if (plain?.(value) === true) return undefined;
    const run = () => v.validate(value);
    let r: ReturnType<typeof run>;
    try {
      r = hasPatterns ? withLinearRegExp(run) : run();
    } catch (e) {
      if (e instanceof TyError) throw e;
      return { instancePath: '', keyword: 'type', text: 'the value is not JSON data' };
    }
    return r.valid
      ? undefined
      : (firstError(r.errors, copy) ?? { instancePath: '', keyword: 'schema', text: 'is invalid' });
  };
}

function compile(schema: unknown, field: string): SchemaCheck {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    throw new TyError('E_INVALID_MANIFEST', `${field} must be a JSON Schema object`, { path: field });
  }
  const problem = schemaProblem(schema);
  if (problem)
    throw new TyError(
      'E_INVALID_MANIFEST',
      `${field}${problem.where || '/'}: ${problem.message} (${field} must be a valid JSON Schema, draft 2020-12, strict)`,
      { path: `${field}${problem.where}` },
    );
  try {
    return compileSchema(schema);
  } catch (e) {
    if (e instanceof UnsupportedPatternError)
      throw new TyError('E_INVALID_MANIFEST', `${field}: ${e.message}`, { path: field });
    throw new TyError(
      'E_INVALID_MANIFEST',
      `${field} is not a valid JSON Schema (draft 2020-12, strict): ${schemaCompileMessage(e)}`,
      { path: field },
    );
  }
}

/**
 * Check a schema at install time: strict draft 2020-12 (core/schema/check.ts: known keywords and formats only,
 * value shapes, local `$ref` that resolve); `parameters` must describe an object (`"type": "object"`), as every
 * model provider requires.
 * @throws TyError E_INVALID_MANIFEST naming the field (JSON Pointer into the schema) and what to change.
 */
export function checkSchema(schema: unknown, field = 'parameters'): void {
  compile(schema, field);
  if (field === 'parameters' && (schema as Record<string, unknown>).type !== 'object') {
    throw new TyError(
      'E_INVALID_MANIFEST',
      'parameters must be a JSON Schema with "type": "object" (tool arguments are a JSON object)',
      { path: field },
    );
  }
}

const n = (l: number, unit: string): string => `${l} ${unit}${l === 1 ? '' : 's'}`;
/** How a bound keyword's failure reads, with its limit L from the schema. */
const BOUNDS: Readonly<Record<string, (l: number) => string>> = {
  maximum: (l) => `must be at most ${l}`,
  exclusiveMaximum: (l) => `must be less than ${l}`,
  minimum: (l) => `must be at least ${l}`,
  exclusiveMinimum: (l) => `must be greater than ${l}`,
  multipleOf: (l) => `must be a multiple of ${l}`,
  maxLength: (l) => `must have at most ${n(l, 'character')}`,
  minLength: (l) => `must have at least ${n(l, 'character')}`,
  maxItems: (l) => `must have at most ${n(l, 'item')}`,
  minItems: (l) => `must have at least ${n(l, 'item')}`,
  maxProperties: (l) => `must have at most ${n(l, 'field')}`,
  minProperties: (l) => `must have at least ${n(l, 'field')}`,
};

/** Field paths in messages are cut to this many characters (keys come from the caller). */
const MAX_FIELD_CHARS = 200;
const cut = (s: string) => (s.length > MAX_FIELD_CHARS ? `${s.slice(0, MAX_FIELD_CHARS)}…` : s);
const escPointer = (k: string) => k.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * Turn the first error into one sentence that names the field (JSON Pointer, cut at 200 characters) and the fix; never
 * echoes values.
 */
export function describeError(err: SchemaError): { field: string; message: string } {
  const base = cut(err.instancePath);
  const at = (s: string) => (s === '' ? 'the arguments' : `field "${s}"`);
  switch (err.keyword) {
    case 'additionalProperties':
    case 'unevaluatedProperties': {
      const f = cut(`${err.instancePath}/${escPointer(err.property ?? '')}`);
      return { field: f, message: `unlisted field "${f}" is not allowed by the tool's parameters; remove it` };
    }
    case 'false':
      return { field: base, message: `${at(base)} is not allowed by the tool's parameters; remove it` };
    case 'required': {
      const f = cut(`${err.instancePath}/${escPointer(err.property ?? '')}`);
      return { field: f, message: `missing required field "${f}"; add it` };
    }
    case 'type':
      return { field: base, message: `${at(base)} must be of type ${err.expected ?? 'another type'}` };
    case 'enum':
      return {
        field: base,
        message: `${at(base)} must be one of ${err.allowed !== undefined ? JSON.stringify(err.allowed).slice(0, 300) : "the values the tool's parameters list"}`,
      };
    case 'const':
      return {
        field: base,
        message: `${at(base)} must equal ${err.allowed !== undefined ? JSON.stringify(err.allowed).slice(0, 300) : "the value the tool's parameters give"}`,
      };
    case 'format':
      return {
        field: base,
        message: `${at(base)} does not match its format (${err.text.replace(/^String does not match format /, '').replace(/\.$/, '')})`,
      };
    case 'pattern':
      return { field: base, message: `${at(base)} does not match the pattern the tool's parameters give` };
    default: {
      const bound =
        Object.prototype.hasOwnProperty.call(BOUNDS, err.keyword) && err.limit !== undefined
          ? BOUNDS[err.keyword]!(err.limit)
          : undefined;
      return {
        field: base,
        message: bound ? `${at(base)} ${bound} (${err.keyword})` : `${at(base)} is invalid (${err.keyword})`,
      };
    }
  }
}

/**
 * Argument validation with compiled schemas cached by revision id (bounded, least recently used).
 * A revision is immutable, so its compiled validator never goes stale.
 */
export class ArgValidator {
  readonly #cache = new Map<string, SchemaCheck>();
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
    this.#check(
      `${revision}#output`,
      schema,
      result,
      'E_TOOL_FAILED',
      "the tool's result does not match its outputSchema",
    );
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
    const first = fn(value);
    if (!first) return;
    const { field, message } = describeError(first);
    throw new TyError(code, `${prefix}: ${message}`, { field, keyword: first.keyword });
  }

  get size(): number {
    return this.#cache.size;
  }
}
