// Keeps test/fixtures/cases in step with the shared failure cases the project was given, when they are beside the
// checkout.
import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';

const ours = new URL('../fixtures/cases/', import.meta.url);
const shared = new URL('../../../shared/cases/', import.meta.url);

describe('failure cases', () => {
  it('every case file is vendored and parses', () => {
    const files = readdirSync(ours).filter((f) => f.endsWith('.json'));
    expect(files.sort()).toEqual([
      'browser.json',
      'fetch-targets.json',
      'js-escapes.json',
      'mcp-messages.json',
      'os-sandbox.json',
      'prompt-text.json',
    ]);
    for (const f of files) expect(() => JSON.parse(readFileSync(new URL(f, ours), 'utf8'))).not.toThrow();
  });
  // Runs only where the shared cases sit beside the checkout (the project's CI lays them there); a lone clone has only
  // the vendored copy.
  it.runIf(existsSync(shared))('matches ../shared/cases byte for byte', () => {
    for (const f of readdirSync(shared).filter((f) => f.endsWith('.json'))) {
      expect(readFileSync(new URL(f, ours), 'utf8'), f).toBe(readFileSync(new URL(f, shared), 'utf8'));
    }
  });
});
