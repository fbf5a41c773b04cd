// The hand parse of settings files never accepts what SettingsSchema refuses, and returns the schema's output (defaults
// too); trusted side.
import { describe, expect, it } from 'vitest';
import { SettingsSchema } from './schema.js';
import { NO } from '../../core/schema/hand.js';
import { plainSettingsParse } from './check.js';

const full = {
  permissions: {
    mode: 'standard',
    allow: ['fetch(read:https://api.example.com)', 'tool(csv-stats)'],
    deny: ['python(*)'],
    ask: [],
    alwaysAsk: ['secret(API_KEY)'],
  },
  hooks: {
    preToolUse: [{ matcher: 'csv-*', command: 'echo pre', timeoutMs: 5000 }, { command: 'echo any' }],
    postToolUse: [{ matcher: '*', command: 'true' }],
    permissionRequest: [],
  },
  ask_wait: 120_000,
  session_idle: 300_000,
  ask: { dialog: 'off' },
  sandbox: 'required',
  runtime: 'deno',
  pause: { maxRefusals: 10, windowMs: 60_000 },
};
const bases: Record<string, unknown>[] = [
  {},
  full,
  { permissions: { allow: ['tool(csv-stats)'] } },
  { sandbox: 'auto' },
  { hooks: { preToolUse: [{ command: 'x', matcher: undefined }] } },
];
const odd: unknown[] = [
  undefined,
  null,
  true,
  0,
  1,
  -1,
  1.5,
  999,
  1000,
  10_000,
  10_001,
  600_000,
  600_001,
  86_400_000,
  86_400_001,
  NaN,
  '',
  'x',
  '*',
  'strict',
  'unrestricted',
  'auto',
  'off',
  'required',
  'node',
  'deno',
  'x'.repeat(2049),
  'x'.repeat(8193),
  'fetch(read:https://a.example)',
  'fetch(',
  'fetch(bogus:https://a.example)',
  '(',
  [],
  ['csv-stats'],
  ['fetch('],
  [{ command: 'c' }],
  [{ command: '' }],
  [{ command: 'c', extra: 1 }],
  {},
  { a: 1 },
  Object.create(null),
  JSON.parse('{"__proto__": {"a": 1}}'),
];

/** Every path of object keys in `v` (arrays: their first item). */
function* paths(v: unknown, at: string[] = []): Generator<string[]> {
  if (Array.isArray(v)) {
    if (v.length > 0) yield* paths(v[0], [...at, '0']);
    return;
  }
  if (v === null || typeof v !== 'object') return;
  for (const k of Object.keys(v)) {
    yield [...at, k];
    yield* paths((v as Record<string, unknown>)[k], [...at, k]);
  }
}
function setAt(v: unknown, path: string[], x: unknown, drop = false): unknown {
  const copy = structuredClone(v) as Record<string, unknown>;
  let o: Record<string, unknown> = copy;
  for (const k of path.slice(0, -1)) o = (o[k] ??= {}) as Record<string, unknown>;
  const last = path[path.length - 1]!;
  if (drop) delete o[last];
  else o[last] = x;
  return copy;
}

describe('plainSettingsParse (hand parse of SettingsSchema)', () => {
  it("accepts only what the schema accepts, with the schema's output (defaults, keys in its order)", () => {
    const variants: unknown[] = [...odd, ...bases];
    for (const b of bases) {
      for (const p of [...paths(b), ['extra'], ['permissions', 'extra'], ['hooks', 'extra']]) {
        variants.push(setAt(b, p, undefined, true));
        for (const x of odd) variants.push(setAt(b, p, x));
      }
    }
    let accepted = 0;
    for (const v of variants) {
      const hand = plainSettingsParse(v);
      if (hand === NO) continue;
      accepted++;
      const schema = SettingsSchema.safeParse(v);
      if (!schema.success)
        throw new Error(
          `hand accepted what the schema refuses: ${typeof v} ${JSON.stringify(v)?.slice(0, 300)} ${JSON.stringify(hand)} ${JSON.stringify(schema.error.issues).slice(0, 300)}`,
        );
      if (schema.success) expect(JSON.stringify(hand)).toBe(JSON.stringify(schema.data));
    }
    expect(accepted).toBeGreaterThan(100);
    for (const b of bases) expect(plainSettingsParse(b), JSON.stringify(b)).not.toBe(NO);
  });

  it('fills in the hook defaults as the schema does', () => {
    const r = plainSettingsParse({ hooks: { preToolUse: [{ command: 'echo hi' }] } });
    expect(r).toEqual({ hooks: { preToolUse: [{ matcher: '*', command: 'echo hi', timeoutMs: 60_000 }] } });
  });
});
