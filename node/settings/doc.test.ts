// docs/settings.md names every settings key the schema accepts (the reference cannot fall behind); Node host, test
// side.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { SettingsSchema } from './schema.js';

/**
 * Dotted key paths of a zod object schema (optional wrappers unwrapped; arrays of objects as `key.*[].field` are
 * skipped).
 */
function keys(schema: z.ZodType, prefix = ''): string[] {
  let s: z.ZodType = schema;
  while (s instanceof z.ZodOptional || s instanceof z.ZodDefault) s = (s as z.ZodOptional<z.ZodType>).unwrap();
  if (!(s instanceof z.ZodObject)) return [prefix];
  return Object.entries((s as z.ZodObject<Record<string, z.ZodType>>).shape).flatMap(([k, v]) =>
    keys(v, prefix ? `${prefix}.${k}` : k),
  );
}

describe('docs/settings.md', () => {
  it('has a row for every key of the settings schema', () => {
    const doc = readFileSync(join(resolve(import.meta.dirname, '..', '..'), 'docs', 'settings.md'), 'utf8');
    const all = keys(SettingsSchema);
    expect(all.length).toBeGreaterThan(10);
    for (const k of all) expect(doc, k).toContain(`| \`${k}\` |`);
  });
});
