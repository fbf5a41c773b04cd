// Unit tests for the cross-host naming of browser contracts (node/diagnostics/browser.ts); test side.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BROWSER_GROUPS, browserGroupOf, browserSelected, findRepoRoot } from './browser.js';
import { CONTRACTS, selectContracts } from './contracts.js';

// The browser contract titles as written in the harness (contract entries are indented four spaces).
const harness = readFileSync(join(import.meta.dirname, '..', '..', 'test', 'browser', 'harness.ts'), 'utf8');
const titles = [...harness.matchAll(/^ {4}name: '(.+)',$/gm)].map((m) => m[1]!.replace(/\\'/g, "'"));

describe('cross-host contract names', () => {
  it('every browser contract in the harness belongs to a named group', () => {
    expect(titles.length).toBeGreaterThan(10);
    expect(titles.filter((t) => browserGroupOf(t) === 'browser_other')).toEqual([]);
    expect(browserGroupOf('store (IndexedDB): put then get')).toBe('store_contract');
  });

  it('a group present on both hosts has the same name as the CLI contract', () => {
    const cliNames = new Set(CONTRACTS.map((c) => c.name));
    const shared = BROWSER_GROUPS.map((g) => g.name).filter((n) => cliNames.has(n));
    expect(shared).toEqual(['tool_security_contracts', 'mediated_fetch', 'python_escapes']);
    // --filter tool_security_contracts selects the CLI contract and the browser sandbox contracts.
    expect(selectContracts('cli', 'tool_security_contracts').map((c) => c.name)).toEqual(['tool_security_contracts']);
    const chosen = titles.filter((t) => browserSelected(t, 'tool_security_contracts'));
    expect(chosen.length).toBeGreaterThan(5);
    expect(chosen.every((t) => browserGroupOf(t) === 'tool_security_contracts')).toBe(true);
    expect(chosen.some((t) => t.startsWith('js-escape'))).toBe(true);
    expect(titles.filter((t) => browserSelected(t, 'python_sandbox')).every((t) => t.startsWith('python:'))).toBe(true);
  });

  it('a filter also matches a browser title, case-insensitively', () => {
    expect(titles.filter((t) => browserSelected(t, 'JS-ESCAPE')).length).toBeGreaterThan(2);
    expect(titles.filter((t) => browserSelected(t, 'no-such-contract'))).toEqual([]);
  });

  it('finds the source checkout from here', () => {
    expect(findRepoRoot()).toBe(join(import.meta.dirname, '..', '..'));
    expect(findRepoRoot('/')).toBeUndefined();
  });
});
