// Strict structural check of a tool's JSON Schema (draft 2020-12 vocabulary, keyword value shapes, local references);
// core, trusted side.
import { format as knownFormats } from '@cfworker/json-schema';

/** The only `$schema` accepted (or none): JSON Schema draft 2020-12. */
export const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

/** A schema problem: where (JSON Pointer into the schema) and what to change. */
export interface SchemaProblem {
  where: string;
  message: string;
}

type Shape =
  | 'schema'
  | 'schemaMap'
  | 'schemaList'
  | 'string'
  | 'stringList'
  | 'number'
  | 'count'
  | 'positive'
  | 'boolean'
  | 'type'
  | 'any'
  | 'array'
  | 'requiredMap';

/**
 * Every keyword of draft 2020-12 (core, applicator, unevaluated, validation, format-annotation, content and
 * meta-data vocabularies; JSON Schema Validation 2020-12 §6-9, Core §8-11) with the shape of its value. Not
 * listed, hence refused: `$dynamicRef`/`$dynamicAnchor` and nested `$id` (the validator does not resolve them),
 * `$async`, and older drafts' `dependencies`, `definitions`-free tuple `items` and `additionalItems`.
 */
const KEYWORDS: Record<string, Shape> = {
  $schema: 'string',
  $id: 'string',
  $anchor: 'string',
  $ref: 'string',
  $defs: 'schemaMap',
  definitions: 'schemaMap',
  $comment: 'string',
  $vocabulary: 'any',
  allOf: 'schemaList',
  anyOf: 'schemaList',
  oneOf: 'schemaList',
  not: 'schema',
  if: 'schema',
  // biome-ignore lint/suspicious/noThenProperty: `then` is a JSON Schema keyword (draft 2020-12 if/then/else)
  then: 'schema',
  else: 'schema',
  dependentSchemas: 'schemaMap',
  prefixItems: 'schemaList',
  items: 'schema',
  contains: 'schema',
  properties: 'schemaMap',
  patternProperties: 'schemaMap',
  additionalProperties: 'schema',
  propertyNames: 'schema',
  unevaluatedItems: 'schema',
  unevaluatedProperties: 'schema',
  type: 'type',
  const: 'any',
  enum: 'array',
  multipleOf: 'positive',
  maximum: 'number',
  exclusiveMaximum: 'number',
  minimum: 'number',
  exclusiveMinimum: 'number',
  maxLength: 'count',
  minLength: 'count',
  pattern: 'string',
  maxItems: 'count',
  minItems: 'count',
  uniqueItems: 'boolean',
  maxContains: 'count',
  minContains: 'count',
  maxProperties: 'count',
  minProperties: 'count',
  required: 'stringList',
  dependentRequired: 'requiredMap',
  format: 'string',
  contentEncoding: 'string',
  contentMediaType: 'string',
  contentSchema: 'schema',
  title: 'string',
  description: 'string',
  default: 'any',
  deprecated: 'boolean',
  readOnly: 'boolean',
  writeOnly: 'boolean',
  examples: 'array',
};
const TYPES = new Set(['null', 'boolean', 'object', 'array', 'number', 'string', 'integer']);
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const esc = (k: string) => k.replace(/~/g, '~0').replace(/\//g, '~1');

const HINT: Partial<Record<string, string>> = {
  $dynamicRef: '"$dynamicRef" is not supported; use "$ref" to a "$defs" entry',
  $dynamicAnchor: '"$dynamicAnchor" is not supported; use "$ref" to a "$defs" entry',
  $async: '"$async" schemas are not supported (validation must be synchronous); remove it',
  dependencies: '"dependencies" is from an older draft; use "dependentRequired" or "dependentSchemas"',
  additionalItems: '"additionalItems" is from an older draft; use "prefixItems" with "items"',
};

/**
 * Walk a schema and return the first problem: an unknown keyword (strict, a typo such as
 * `maxLenght` would otherwise be silently ignored), a keyword value of the wrong shape, an unknown `format`, a
 * `$ref` that is not local (`#...`) or points nowhere, a nested `$id`, or a `$schema` other than 2020-12.
 * Depth is capped at 64.
 */
export function schemaProblem(root: unknown): SchemaProblem | undefined {
  const anchors = new Set<string>();
  const refs: { ref: string; where: string }[] = [];
  const walk = (node: unknown, where: string, depth: number): SchemaProblem | undefined => {
    if (depth > 64) return { where, message: 'the schema nests deeper than 64 levels' };
    if (typeof node === 'boolean') return undefined;
    if (!isObj(node)) return { where, message: 'a schema must be an object or a boolean' };
    for (const [k, v] of Object.entries(node)) {
      const at = `${where}/${esc(k)}`;
      const shape = KEYWORDS[k];
      if (shape === undefined)
        return {
          where: at,
          message:
            HINT[k] ??
            `unknown keyword "${k.slice(0, 80)}" (strict draft 2020-12: check the spelling, or move notes into "description")`,
        };
      const p = shapeProblem(shape, v, at, depth, walk);
      if (p) return p;
      if (k === '$schema' && (depth > 0 || (v !== DRAFT_2020_12 && v !== `${DRAFT_2020_12}#`)))
        return {
          where: at,
          message: `only JSON Schema draft 2020-12 is supported; set "$schema": "${DRAFT_2020_12}" or leave it out`,
        };
      if (k === '$id' && depth > 0)
        return {
          where: at,
          message:
            'a nested "$id" is not supported; keep sub-schemas under "$defs" and refer to them with "$ref": "#/$defs/NAME"',
        };
      if (k === '$ref') {
        if (!(v as string).startsWith('#'))
          return {
            where: at,
            message:
              '$ref must point inside the schema ("#/$defs/..."); references to other documents or URLs are not loaded',
          };
        refs.push({ ref: v as string, where: at });
      }
      if (k === '$anchor') anchors.add(v as string);
      if (k === 'format' && !Object.prototype.hasOwnProperty.call(knownFormats, v as string)) {
        return {
          where: at,
          message: `unknown format "${String(v).slice(0, 80)}" (known: ${Object.keys(knownFormats).join(', ')})`,
        };
      }
    }
    return undefined;
  };
  const first = walk(root, '', 0);
  if (first) return first;
  for (const { ref, where } of refs)
    if (!resolves(root, ref, anchors))
      return { where, message: `$ref "${ref.slice(0, 120)}" points to nothing in this schema` };
  return undefined;
}

function shapeProblem(
  shape: Shape,
  v: unknown,
  at: string,
  depth: number,
  walk: (n: unknown, w: string, d: number) => SchemaProblem | undefined,
): SchemaProblem | undefined {
  const bad = (what: string): SchemaProblem => ({ where: at, message: `must be ${what}` });
  switch (shape) {
    case 'schema':
      return walk(v, at, depth + 1);
    case 'schemaMap':
      if (!isObj(v)) return bad('an object of schemas');
      for (const [k, s] of Object.entries(v)) {
        const p = walk(s, `${at}/${esc(k)}`, depth + 1);
        if (p) return p;
      }
      return undefined;
    case 'schemaList':
      if (!Array.isArray(v) || v.length === 0) return bad('a non-empty array of schemas');
      for (let i = 0; i < v.length; i++) {
        const p = walk(v[i], `${at}/${i}`, depth + 1);
        if (p) return p;
      }
      return undefined;
    case 'string':
      return typeof v === 'string' ? undefined : bad('a string');
    case 'stringList':
      return Array.isArray(v) && v.every((x) => typeof x === 'string') && new Set(v).size === v.length
        ? undefined
        : bad('an array of distinct strings');
    case 'number':
      return typeof v === 'number' && Number.isFinite(v) ? undefined : bad('a number');
    case 'count':
      return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? undefined : bad('a whole number, 0 or more');
    case 'positive':
      return typeof v === 'number' && Number.isFinite(v) && v > 0 ? undefined : bad('a number above 0');
    case 'boolean':
      return typeof v === 'boolean' ? undefined : bad('true or false');
    case 'array':
      return Array.isArray(v) ? undefined : bad('an array');
    case 'type': {
      const list = Array.isArray(v) ? v : [v];
      return list.length > 0 &&
        list.every((t) => typeof t === 'string' && TYPES.has(t)) &&
        new Set(list).size === list.length
        ? undefined
        : bad(`one of ${[...TYPES].join(', ')} (or an array of them)`);
    }
    case 'requiredMap':
      return isObj(v) && Object.values(v).every((l) => Array.isArray(l) && l.every((x) => typeof x === 'string'))
        ? undefined
        : bad('an object of string arrays');
    case 'any':
      return undefined;
  }
}

/** Whether a local `$ref` (`#`, `#/json/pointer`, `#anchor`) names something in `root`. */
function resolves(root: unknown, ref: string, anchors: Set<string>): boolean {
  if (ref === '#') return true;
  if (!ref.startsWith('#/')) return anchors.has(ref.slice(1));
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    let part: string;
    try {
      part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    } catch {
      return false;
    }
    if (Array.isArray(node) && /^\d+$/.test(part)) node = node[Number(part)];
    else if (isObj(node) && Object.prototype.hasOwnProperty.call(node, part)) node = node[part];
    else return false;
  }
  return typeof node === 'boolean' || isObj(node);
}
