// Checks a bridged tool call's arguments against the tool's own input schema before approval or forwarding; core,
// trusted side.
import type { SchemaDraft } from '@cfworker/json-schema';
import {
  compileSchema,
  linearRegExp,
  schemaCompileMessage,
  UnsupportedPatternError,
  type SchemaCheck,
} from '../../schema/validate.js';

export type ArgsDecision =
  | { ok: true; args: Record<string, unknown> }
  | { ok: false; code: 'E_INVALID_ARGS'; message: string };

// Every schema regex runs on the linear-time engine (a server's schema may carry a catastrophic pattern); the
// validator generates no code (core/schema/validate.ts compileSchema). Not strict: a server's schema may use any
// keyword.
const cache = new WeakMap<object, SchemaCheck>();

/** The draft a server's schema declares in `$schema` (default 2020-12, MCP's default dialect). */
function draftOf(schema: Record<string, unknown>): SchemaDraft {
  const s = typeof schema.$schema === 'string' ? schema.$schema : '';
  if (s.includes('draft-04')) return '4';
  if (s.includes('draft-07') || s.includes('draft-06')) return '7';
  if (s.includes('2019-09')) return '2019-09';
  return '2020-12';
}
function say(err: { instancePath: string; text: string }, root: string): string {
  return `${err.instancePath || root} ${err.text}`.slice(0, 400);
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The first field not listed by `properties`/`patternProperties` at any object level, as a path. */
export function findUnlisted(schema: unknown, value: unknown, path = ''): string | undefined {
  if (!isObj(schema)) return undefined;
  if (Array.isArray(value)) {
    if (!isObj(schema.items)) return undefined;
    for (let i = 0; i < value.length; i++) {
      const f = findUnlisted(schema.items, value[i], `${path}[${i}]`);
      if (f !== undefined) return f;
    }
    return undefined;
  }
  if (!isObj(value)) return undefined;
  const objectSchema = schema.type === 'object' || isObj(schema.properties);
  if (!objectSchema) return undefined;
  const props = isObj(schema.properties) ? schema.properties : {};
  const patterns = isObj(schema.patternProperties) ? Object.keys(schema.patternProperties) : [];
  // an explicit schema for extra fields lists them; `true` or absent does not
  const extraSchema = isObj(schema.additionalProperties) ? schema.additionalProperties : undefined;
  for (const key of Object.keys(value)) {
    const p = path === '' ? key : `${path}.${key}`;
    if (Object.prototype.hasOwnProperty.call(props, key)) {
      const f = findUnlisted(props[key], value[key], p);
      if (f !== undefined) return f;
      continue;
    }
    if (patterns.some((re) => safeTest(re, key))) continue;
    if (extraSchema !== undefined) continue;
    return p;
  }
  return undefined;
}

/** A `patternProperties` key tested on the linear-time engine; a pattern it refuses matches nothing. */
function safeTest(re: string, s: string): boolean {
  try {
    return linearRegExp(re).test(s);
  } catch {
    return false;
  }
}

/**
 * Whether a server's tool schema (input or output) can be offered: it must compile, and every regex in
 * it must run on the linear-time engine. A tool that fails is hidden from `tools/list` and its calls
 * are refused with -32602 (see node/mcp/bridge.ts).
 * @returns undefined when usable, else the reason (names the refused pattern).
 */
export function checkToolSchema(schema: unknown): string | undefined {
  if (schema === undefined) return undefined;
  if (!isObj(schema)) return 'the schema is not an object';
  if (cache.has(schema)) return undefined;
  try {
    cache.set(schema, compileSchema(schema, draftOf(schema)));
    return undefined;
  } catch (e) {
    return e instanceof UnsupportedPatternError
      ? e.message
      : `the schema cannot be compiled: ${schemaCompileMessage(e).slice(0, 200)}`;
  }
}

/**
 * Check `args` (missing means `{}`) against a tool's JSON Schema: unlisted fields (including `__proto__`)
 * are refused, then the schema is applied (core/schema/validate.ts compileSchema). Never mutates `args` (no defaults
 * applied).
 * @returns a decision; `E_INVALID_ARGS` names the first offending field.
 */
export function checkToolArguments(inputSchema: unknown, args: unknown): ArgsDecision {
  const value = args === undefined ? {} : args;
  if (!isObj(value)) return { ok: false, code: 'E_INVALID_ARGS', message: 'arguments must be an object' };
  const schema = isObj(inputSchema) ? inputSchema : { type: 'object', properties: {} };
  const unlisted = findUnlisted(schema, value);
  if (unlisted !== undefined)
    return {
      ok: false,
      code: 'E_INVALID_ARGS',
      message: `unlisted field "${unlisted.slice(0, 200)}" is not in the tool's schema`,
    };
  const problem = checkToolSchema(schema);
  if (problem !== undefined)
    return {
      ok: false,
      code: 'E_INVALID_ARGS',
      message: `the tool's input schema cannot be used: ${problem.slice(0, 300)}`,
    };
  const err = (cache.get(schema) as SchemaCheck)(value);
  if (err) return { ok: false, code: 'E_INVALID_ARGS', message: say(err, '(arguments)') };
  return { ok: true, args: value };
}

/**
 * Check a tool result's `structuredContent` against the tool's `outputSchema` (what the MCP SDK Client
 * does in callTool): a tool with an output schema must return structured content unless `isError`, and it
 * must match. No output schema: nothing to check.
 * @returns undefined when it passes, else the reason (the SDK's wording).
 */
export function checkStructuredContent(
  toolName: string,
  outputSchema: unknown,
  result: { structuredContent?: unknown; isError?: unknown },
): string | undefined {
  if (!isObj(outputSchema)) return undefined;
  if (result.structuredContent === undefined)
    return result.isError === true
      ? undefined
      : `Tool ${toolName} has an output schema but did not return structured content`;
  const problem = checkToolSchema(outputSchema);
  if (problem !== undefined) return `Failed to validate structured content: ${problem.slice(0, 300)}`;
  const err = (cache.get(outputSchema) as SchemaCheck)(result.structuredContent);
  return err ? `Structured content does not match the tool's output schema: ${say(err, '(root)')}` : undefined;
}

/**
 * Check `value` against `schema` without code generation, regexes on the linear-time engine (compiled lazily, cached by
 * schema object).
 * Shape of the MCP SDK's `JsonSchemaValidator` result; a schema that cannot be compiled never validates.
 */
export function validateLinear<T>(
  schema: unknown,
  value: unknown,
): { valid: true; data: T; errorMessage: undefined } | { valid: false; data: undefined; errorMessage: string } {
  const problem = checkToolSchema(schema);
  if (problem !== undefined) return { valid: false, data: undefined, errorMessage: problem };
  const check = cache.get(schema as object);
  const err = check?.(value);
  if (err === undefined) return { valid: true, data: value as T, errorMessage: undefined };
  return { valid: false, data: undefined, errorMessage: say(err, '(root)') };
}
