// Small parsers that mirror a zod schema's checks and output for plain JSON data, so a per-call path needs no zod;
// core, trusted side.
// Each parser returns the value zod's parse would return (objects rebuilt in the schema's key order, present keys only)
// or NO when it cannot vouch for the value: never wider than its schema. Objects of another prototype than JSON.parse
// and a structured clone make (a null prototype, a class, inherited keys) get NO where zod may accept them. A caller
// falls back to the schema on NO, or, without zod on its path (the sandbox channel), refuses: its parser then answers
// as the schema does on every value its transport delivers. Each use is held to its schema by a test.

/** The answer "not vouched for": the caller asks the zod schema, or refuses the value. */
export const NO: unique symbol = Symbol('no');
export type Parse<T = unknown> = (v: unknown) => T | typeof NO;

/** The boolean verdict of `parse` (for a caller that keeps the value as given): true when it is not NO. */
export const accepts =
  <T>(parse: Parse<T>) =>
  (v: unknown): v is T =>
    parse(v) !== NO;

/** A plain JSON object: prototype Object.prototype, no own `__proto__` key (zod treats that key specially). */
const isPlain = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' &&
  v !== null &&
  Object.getPrototypeOf(v) === Object.prototype &&
  !Object.prototype.hasOwnProperty.call(v, '__proto__');

/** z.string() with .min/.max (UTF-16 length, as zod counts) and .regex. */
export const str =
  (o: { min?: number; max?: number; re?: RegExp } = {}): Parse<string> =>
  (v) =>
    typeof v === 'string' &&
    (o.min === undefined || v.length >= o.min) &&
    (o.max === undefined || v.length <= o.max) &&
    (o.re === undefined || o.re.test(v))
      ? v
      : NO;
/** z.number() (finite) with .int() (safe integer), .positive(), .nonnegative(), .min, .max. */
export const num =
  (o: { int?: boolean; positive?: boolean; nonnegative?: boolean; min?: number; max?: number } = {}): Parse<number> =>
  (v) =>
    typeof v === 'number' &&
    Number.isFinite(v) &&
    (!o.int || Number.isSafeInteger(v)) &&
    (!o.positive || v > 0) &&
    (!o.nonnegative || v >= 0) &&
    (o.min === undefined || v >= o.min) &&
    (o.max === undefined || v <= o.max)
      ? v
      : NO;
export const bool: Parse<boolean> = (v) => (typeof v === 'boolean' ? v : NO);
/** z.enum / z.literal. */
export const oneOf = <T>(values: readonly T[]): Parse<T> => {
  const set = new Set<unknown>(values);
  return (v) => (set.has(v) ? (v as T) : NO);
};
/** z.unknown(): any value, as is. */
export const unknown: Parse = (v) => v;
/** z.array(item) with .min/.max: a new array of the parsed items. */
export const arr =
  <T>(item: Parse<T>, o: { min?: number; max?: number } = {}): Parse<T[]> =>
  (v) => {
    if (!Array.isArray(v) || (o.min !== undefined && v.length < o.min) || (o.max !== undefined && v.length > o.max))
      return NO;
    const out: T[] = new Array(v.length);
    for (let i = 0; i < v.length; i++) {
      const x = item(v[i]);
      if (x === NO) return NO;
      out[i] = x;
    }
    return out;
  };
/** z.union(options): the output of the first option that accepts the value (zod tries them in order). */
export const either =
  <T>(...options: Parse<T>[]): Parse<T> =>
  (v) => {
    for (const o of options) {
      const x = o(v);
      if (x !== NO) return x;
    }
    return NO;
  };
/** z.record(z.string(), z.unknown()): a copy with the same keys in the same order. */
export const record: Parse<Record<string, unknown>> = (v) => (isPlain(v) ? { ...v } : NO);

/** `.superRefine(fn)` where fn throws for a bad value: the parsed value when `check` does not throw, else NO. */
export const refine =
  <T>(parse: Parse<T>, check: (v: T) => unknown): Parse<T> =>
  (v) => {
    const x = parse(v);
    if (x === NO) return NO;
    try {
      check(x);
    } catch {
      return NO;
    }
    return x;
  };

/**
 * A field of strictObject: required, optional (absent or undefined), with a default (`.default(value)`), or present
 * with any value (a required z.unknown()).
 */
export interface Field {
  parse: Parse;
  optional: boolean;
  /** The key must be present; its value may be anything, undefined too (zod's required z.unknown()). */
  present?: boolean;
  /** The value an absent or undefined field takes (zod's `.default`): present in the output. */
  fallback?: { value: unknown };
}
export const req = (parse: Parse): Field => ({ parse, optional: false });
export const opt = (parse: Parse): Field => ({ parse, optional: true });
export const withDefault = (parse: Parse, value: unknown): Field => ({ parse, optional: true, fallback: { value } });
/** z.unknown() as a required field: the key present, any value (undefined included), kept as is. */
export const present: Field = { parse: unknown, optional: false, present: true };

/**
 * z.strictObject(shape): no key beyond the shape; a new object with the present keys in the shape's order (zod's
 * output order), an optional or `present` key present as undefined kept as undefined, a defaulted key always present.
 */
export function strictObject<T = Record<string, unknown>>(shape: Record<string, Field>): Parse<T> {
  const keys = Object.keys(shape);
  return (v) => {
    if (!isPlain(v)) return NO;
    for (const k in v) if (!Object.prototype.hasOwnProperty.call(shape, k)) return NO;
    const out: Record<string, unknown> = {};
    for (const k of keys) {
      const f = shape[k]!;
      const has = Object.prototype.hasOwnProperty.call(v, k);
      if (!has || v[k] === undefined) {
        if (!f.optional && !(f.present && has)) return NO;
        if (f.fallback) out[k] = f.fallback.value;
        else if (has) out[k] = undefined;
        continue;
      }
      const x = f.parse(v[k]);
      if (x === NO) return NO;
      out[k] = x;
    }
    return out as T;
  };
}

/** z.discriminatedUnion(key, options): the option named by `v[key]`. */
export const byKey =
  <T>(key: string, options: Record<string, Parse>): Parse<T> =>
  (v) => {
    if (!isPlain(v)) return NO;
    const k = v[key];
    return typeof k === 'string' && Object.prototype.hasOwnProperty.call(options, k)
      ? (options[k]!(v) as T | typeof NO)
      : NO;
  };
