// A shortcut for the commonest JSON Schema (an object of plainly typed fields) that can only say "valid": anything else
// goes to the full validator; core, trusted side.

/**
 * Keywords that annotate and never change whether a value is valid (JSON Schema 2020-12 "Meta-Data"; the same in drafts
 * 4 to 2019-09).
 */
const ANNOTATIONS: ReadonlySet<string> = new Set([
  'title',
  'description',
  'default',
  'examples',
  '$comment',
  'deprecated',
  'readOnly',
  'writeOnly',
]);
const OBJECT_KEYS: ReadonlySet<string> = new Set([
  '$schema',
  'type',
  'properties',
  'required',
  'additionalProperties',
  ...ANNOTATIONS,
]);
const isPlain = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const own = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

/** Strictly narrower than each type's JSON Schema meaning: a value these accept, every draft's `type` accepts. */
const TYPES: Readonly<Record<string, (v: unknown) => boolean>> = {
  string: (v) => typeof v === 'string',
  boolean: (v) => typeof v === 'boolean',
  number: (v) => typeof v === 'number' && Number.isFinite(v),
  integer: (v) => typeof v === 'number' && Number.isSafeInteger(v),
};

/**
 * For a schema `{type: "object", properties: {NAME: {type: T}, ...}, required?: [...], additionalProperties?: boolean}`
 * (T one of string, boolean, number, integer; annotations such as `description` anywhere allowed), a check that
 * answers true only for values every JSON Schema validator accepts against it: an object with the required fields
 * present, each listed field of its type, no unlisted field where additionalProperties is false. False is no
 * verdict: the caller then asks the full validator (for the answer and its message). Undefined for any other schema.
 */
export function simpleObjectCheck(schema: unknown): ((value: unknown) => boolean) | undefined {
  if (!isPlain(schema) || schema.type !== 'object') return undefined;
  for (const k of Object.keys(schema)) if (!OBJECT_KEYS.has(k)) return undefined;
  const extra = schema.additionalProperties;
  if (extra !== undefined && typeof extra !== 'boolean') return undefined;
  const props = schema.properties ?? {};
  if (!isPlain(props)) return undefined;
  const fields: [string, (v: unknown) => boolean][] = [];
  for (const name of Object.keys(props)) {
    const p = props[name];
    if (!isPlain(p) || typeof p.type !== 'string' || !own(TYPES, p.type)) return undefined;
    for (const k of Object.keys(p)) if (k !== 'type' && !ANNOTATIONS.has(k)) return undefined;
    fields.push([name, TYPES[p.type]!]);
  }
  const required = schema.required ?? [];
  if (!Array.isArray(required) || !required.every((r) => typeof r === 'string')) return undefined;
  const closed = extra === false;
  return (value) => {
    if (!isPlain(value) || Object.getPrototypeOf(value) !== Object.prototype) return false;
    for (const r of required as string[]) if (!own(value, r)) return false;
    for (const [name, ok] of fields) if (own(value, name) && !ok(value[name])) return false;
    if (closed) for (const k of Object.keys(value)) if (!own(props, k)) return false;
    return true;
  };
}
