// What a sandbox may send the host, checked by hand exactly as protocol/wire.ts SandboxMessageSchema checks it; core,
// trusted side.
// The host reads every sandbox message through this check, so the channel never loads zod: core/exec/wire-check.test.ts
// holds it to the schema (the same verdict on every message type, every key and every odd value).
import { CAPABILITY_NAMES, PROTOCOL_VERSION } from '../../protocol/names.js';
import type { SandboxMessage } from '../../protocol/wire.js';

type Obj = Record<string, unknown>;
/** Field kinds: a checker of a present value, or `unknown` (any value, the key present: zod's required z.unknown()). */
type Field = { check: (v: unknown) => boolean; optional: boolean } | 'unknown';

/** zod's object test: any non-null object that is not an array (any prototype). */
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
/** z.number(): a finite number; .int(): a safe integer. */
const isId = (v: unknown): boolean => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const str =
  (max: number) =>
  (v: unknown): boolean =>
    typeof v === 'string' && v.length <= max;
const anyStr = (v: unknown): boolean => typeof v === 'string';
const bool = (v: unknown): boolean => typeof v === 'boolean';
const oneOf = (values: readonly unknown[]) => {
  const set = new Set(values);
  return (v: unknown): boolean => set.has(v);
};
const req = (check: (v: unknown) => boolean): Field => ({ check, optional: false });
const opt = (check: (v: unknown) => boolean): Field => ({ check, optional: true });

/**
 * A strict object: every key `for...in` yields (inherited enumerable ones too, as zod iterates) is declared; each
 * declared key read as `v[key]` (inherited values too); an optional field accepts undefined; `unknown` needs the key.
 */
function strictObject(shape: Record<string, Field>): (v: unknown) => boolean {
  const keys = Object.keys(shape);
  return (v) => {
    if (!isObject(v)) return false;
    for (const k in v) if (!Object.prototype.hasOwnProperty.call(shape, k)) return false;
    for (const k of keys) {
      const f = shape[k]!;
      if (f === 'unknown') {
        if (!(k in v)) return false;
        continue;
      }
      const x = v[k];
      if (x === undefined ? !f.optional : !f.check(x)) return false;
    }
    return true;
  };
}

/** protocol/errors.ts WireErrorSchema. */
export const isWireError = strictObject({
  code: req((v) => (typeof v === 'string' && v.length <= 64) || (typeof v === 'number' && Number.isSafeInteger(v))),
  message: req(str(4096)),
  data: opt(() => true),
});

const V = req((v) => v === PROTOCOL_VERSION);
const BY_TYPE: Record<string, (v: unknown) => boolean> = {
  ready: strictObject({ v: V, type: req(anyStr), runtime: req(str(64)), version: opt(str(64)) }),
  loaded: strictObject({ v: V, type: req(anyStr), ok: req(bool), error: opt(isWireError) }),
  result: strictObject({
    v: V,
    type: req(anyStr),
    id: req(isId),
    ok: req(bool),
    json: opt(anyStr),
    error: opt(isWireError),
  }),
  cap: strictObject({
    v: V,
    type: req(anyStr),
    id: req(isId),
    callId: req(isId),
    name: req(oneOf(CAPABILITY_NAMES)),
    params: 'unknown',
  }),
  'cap-cancel': strictObject({ v: V, type: req(anyStr), id: req(isId) }),
  log: strictObject({
    v: V,
    type: req(anyStr),
    level: req(oneOf(['debug', 'info', 'warn', 'error'])),
    text: req(str(8192)),
  }),
};

/**
 * `value` as a SandboxMessage when SandboxMessageSchema accepts it, else undefined: the same verdict as the schema's
 * safeParse (a discriminated union on `type`), without zod. The message is returned as it is (the schema's copy would
 * hold the same values under the same keys).
 */
export function sandboxMessage(value: unknown): SandboxMessage | undefined {
  if (!isObject(value)) return undefined;
  const type = value.type;
  if (typeof type !== 'string' || !Object.prototype.hasOwnProperty.call(BY_TYPE, type)) return undefined;
  return BY_TYPE[type]!(value) ? (value as unknown as SandboxMessage) : undefined;
}
