// MCP namespaces: several servers' tools merged into actions with a `kind` selector (offered schema, target choice);
// core, trusted side.
import { z } from 'zod';

/** One target of an action: the `kind` value that selects it, and the server tool it forwards to (name kept). */
export const NamespaceTargetSchema = z.strictObject({
  kind: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/, 'a kind is 1-32 of a-z, 0-9, _ and -'),
  server: z.string().regex(/^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,31}$/),
  tool: z.string().min(1).max(256),
});
export const NamespaceActionSchema = z
  .strictObject({
    name: z.string().regex(/^[a-zA-Z0-9_-]{1,48}$/),
    description: z.string().max(2048).optional(),
    /** `read` actions may be broadcast; `mutation` actions always select exactly one target. */
    access: z.enum(['read', 'mutation']),
    /** Read only: a call without `kind` goes to every target, results joined under each kind. */
    broadcast: z.boolean().optional(),
    targets: z.array(NamespaceTargetSchema).min(1).max(16),
  })
  .refine((a) => !(a.broadcast && a.access !== 'read'), { message: 'only read actions may be broadcast' })
  .refine((a) => new Set(a.targets.map((t) => t.kind)).size === a.targets.length, {
    message: 'each target needs its own kind',
  });
export const NamespaceSchema = z.strictObject({
  v: z.literal(1),
  name: z.string().regex(/^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,31}$/),
  actions: z.array(NamespaceActionSchema).min(1).max(64),
});
export type Namespace = z.infer<typeof NamespaceSchema>;
export type NamespaceAction = z.infer<typeof NamespaceActionSchema>;
export type NamespaceTarget = z.infer<typeof NamespaceTargetSchema>;

type Schema = Record<string, unknown>;
function isObj(v: unknown): v is Schema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The one flat schema offered for an action: every target's properties (the first target to list a
 * property gives its schema), `kind` naming each target, and required only what every target requires
 * (plus `kind` unless the action is a broadcast read). Unlisted fields are not allowed.
 * Discovery only: each call is checked against its chosen target's own schema.
 */
export function mergedSchema(action: NamespaceAction, schemas: ReadonlyMap<string, unknown>): Schema {
  const properties: Schema = Object.create(null) as Schema;
  let required: string[] | undefined;
  for (const t of action.targets) {
    const s = schemas.get(t.kind);
    const props = isObj(s) && isObj(s.properties) ? s.properties : {};
    for (const [k, v] of Object.entries(props)) if (k !== 'kind' && !(k in properties)) properties[k] = v;
    const req =
      isObj(s) && Array.isArray(s.required) ? s.required.filter((x): x is string => typeof x === 'string') : [];
    required = required === undefined ? req : required.filter((r) => req.includes(r));
  }
  const kinds = action.targets.map((t) => t.kind);
  const out: Schema = {
    type: 'object',
    properties: {
      kind: {
        type: 'string',
        enum: kinds,
        description: `which provider: ${kinds.join(', ')}${action.broadcast ? ' (omit to ask all)' : ''}`,
      },
      ...properties,
    },
    additionalProperties: false,
  };
  const req = [...(action.broadcast ? [] : ['kind']), ...(required ?? [])];
  if (req.length > 0) out.required = req;
  return out;
}

export type TargetChoice =
  | { ok: true; targets: NamespaceTarget[]; args: Record<string, unknown> }
  | { ok: false; code: 'E_INVALID_ARGS'; message: string };

/**
 * Pick the target(s) for a call from its `kind` and strip `kind` from the arguments (a new object; the
 * rest of the fields are checked later against each chosen target's own schema).
 */
export function chooseTargets(action: NamespaceAction, args: unknown): TargetChoice {
  const a = args === undefined ? {} : args;
  if (!isObj(a)) return { ok: false, code: 'E_INVALID_ARGS', message: 'arguments must be an object' };
  const kinds = action.targets.map((t) => t.kind);
  const rest: Record<string, unknown> = {};
  for (const k of Object.keys(a))
    if (k !== 'kind')
      Object.defineProperty(rest, k, { value: a[k], enumerable: true, writable: true, configurable: true });
  const kind = a.kind;
  if (kind === undefined) {
    if (action.broadcast) return { ok: true, targets: [...action.targets], args: rest };
    return { ok: false, code: 'E_INVALID_ARGS', message: `"kind" is required: one of ${kinds.join(', ')}` };
  }
  const t = typeof kind === 'string' ? action.targets.find((x) => x.kind === kind) : undefined;
  if (t === undefined)
    return { ok: false, code: 'E_INVALID_ARGS', message: `"kind" must be one of ${kinds.join(', ')}` };
  return { ok: true, targets: [t], args: rest };
}
