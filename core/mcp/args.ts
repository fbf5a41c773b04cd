// Checks a bridged tool call's arguments against the tool's own input schema before approval or forwarding; core, trusted side.
import { Ajv, type ValidateFunction } from 'ajv';

export type ArgsDecision = { ok: true; args: Record<string, unknown> } | { ok: false; code: 'E_INVALID_ARGS'; message: string };

const ajv = new Ajv({ strict: false, allErrors: false, validateSchema: false, addUsedSchema: false });
const cache = new WeakMap<object, ValidateFunction>();

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

function safeTest(re: string, s: string): boolean {
  try {
    return new RegExp(re, 'u').test(s);
  } catch {
    return false;
  }
}

/**
 * Check `args` (missing means `{}`) against a tool's JSON Schema: unlisted fields (including `__proto__`)
 * are refused, then the schema is applied with ajv. Never mutates `args` (no defaults applied).
 * @returns a decision; `E_INVALID_ARGS` names the first offending field.
 */
export function checkToolArguments(inputSchema: unknown, args: unknown): ArgsDecision {
  const value = args === undefined ? {} : args;
  if (!isObj(value)) return { ok: false, code: 'E_INVALID_ARGS', message: 'arguments must be an object' };
  const schema = isObj(inputSchema) ? inputSchema : { type: 'object', properties: {} };
  const unlisted = findUnlisted(schema, value);
  if (unlisted !== undefined) return { ok: false, code: 'E_INVALID_ARGS', message: `unlisted field "${unlisted.slice(0, 200)}" is not in the tool's schema` };
  let validate = cache.get(schema);
  if (validate === undefined) {
    try {
      validate = ajv.compile(schema);
    } catch (e) {
      return { ok: false, code: 'E_INVALID_ARGS', message: `the tool's input schema cannot be compiled: ${String((e as Error)?.message ?? e).slice(0, 200)}` };
    }
    cache.set(schema, validate);
  }
  if (!validate(value)) {
    const err = validate.errors?.[0];
    const where = err?.instancePath ? err.instancePath : '(arguments)';
    const extra = err?.keyword === 'required' && isObj(err.params) ? ` "${String(err.params.missingProperty)}"` : '';
    return { ok: false, code: 'E_INVALID_ARGS', message: `${where} ${err?.message ?? 'is invalid'}${extra}`.slice(0, 400) };
  }
  return { ok: true, args: value };
}

/**
 * Check a tool result's `structuredContent` against the tool's `outputSchema` (what the MCP SDK Client
 * does in callTool): a tool with an output schema must return structured content unless `isError`, and it
 * must match. No output schema: nothing to check.
 * @returns undefined when it passes, else the reason (the SDK's wording).
 */
export function checkStructuredContent(toolName: string, outputSchema: unknown, result: { structuredContent?: unknown; isError?: unknown }): string | undefined {
  if (!isObj(outputSchema)) return undefined;
  if (result.structuredContent === undefined) return result.isError === true ? undefined : `Tool ${toolName} has an output schema but did not return structured content`;
  let validate = cache.get(outputSchema);
  if (validate === undefined) {
    try {
      validate = ajv.compile(outputSchema);
    } catch (e) {
      return `Failed to validate structured content: ${String((e as Error)?.message ?? e).slice(0, 200)}`;
    }
    cache.set(outputSchema, validate);
  }
  if (validate(result.structuredContent)) return undefined;
  const err = validate.errors?.[0];
  return `Structured content does not match the tool's output schema: ${`${err?.instancePath || '(root)'} ${err?.message ?? 'is invalid'}`.slice(0, 400)}`;
}
