// Unit tests for the cross-host naming of browser contracts (node/diagnostics/browser.ts); test side.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BROWSER_GROUPS,
  browserCheckTitles,
  browserGroupOf,
  browserSelected,
  findRepoRoot,
  selectedBrowserChecks,
} from './browser.js';
import { CONTRACTS, formatChecks, selectContracts } from './contracts.js';
import { STORE_CONTRACT } from '../../core/store/contract-suite.js';
import { bundledContract } from '../../browser/diagnostics/bundled-contract.js';
import { clipLine } from '../cli/commands/system/diagnostics.js';

// The browser contract titles as written in the harness (contract entries are indented four spaces).
const source = readFileSync(join(import.meta.dirname, '..', '..', 'browser', 'diagnostics', 'contracts.ts'), 'utf8');
const start = source.indexOf('const contracts: Contract[] = [');
const harness = source.slice(start, source.indexOf('\n];', start));
const titles = [...harness.matchAll(/^ {4}name: (['"])(.+)\1,$/gm)].map((m) => m[2]!.replace(/\\(['"])/g, '$1'));

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

  it('reads every browser check title from the checkout, without a browser, as the page titles them', () => {
    const all = browserCheckTitles()!;
    const beacon = 'no request from a sandbox reached the network (loopback beacon server)';
    expect(all).toEqual([
      bundledContract.name,
      ...titles,
      ...STORE_CONTRACT.map((c) => `store (IndexedDB): ${c.name}`),
      beacon,
    ]);
    expect(browserCheckTitles('/nonexistent')).toBeUndefined();
    // a CLI-only contract name selects no browser check (so --browser starts no Chromium for it)
    expect(selectedBrowserChecks(all, 'sandbox_posture')).toEqual([]);
    expect(selectedBrowserChecks(all, 'os_isolation')).toEqual([]);
    const js = selectedBrowserChecks(all, 'JS-ESCAPE');
    expect(js.length).toBeGreaterThan(2);
    expect(js.every((t) => t.startsWith('js-escape:'))).toBe(true);
    expect(selectedBrowserChecks(all, 'tool_security_contracts')).toContain(beacon);
    // the beacon row only comes beside another check
    expect(selectedBrowserChecks(all, 'loopback beacon server')).toEqual([]);
  });
});

describe('diagnostics detail lines', () => {
  it('are whole in the contract result (--json) and cut at a word with an ellipsis for the terminal', () => {
    const seen = `${'open /etc/passwd: ERR_ACCESS_DENIED '.repeat(12)}end`;
    const [line] = formatChecks('node', 'full', [[true, 'reads nothing', seen]]);
    expect(line).toBe(`PASS node/full reads nothing: ${seen}`);
    const cut = clipLine(line!);
    expect(cut.length).toBeLessThanOrEqual(240);
    expect(cut.endsWith('…')).toBe(true);
    expect(line!.startsWith(cut.slice(0, -1))).toBe(true);
    expect(line![cut.length - 1]).toBe(' '); // cut before a space: no word is split
    expect(clipLine('short line')).toBe('short line');
    const word = 'x'.repeat(500); // no space to cut at: cut at the limit, still marked
    expect(clipLine(word)).toBe(`${'x'.repeat(239)}…`);
  });
});
