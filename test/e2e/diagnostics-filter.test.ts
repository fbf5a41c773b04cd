// tycli diagnostics --filter: empty filters refused, browser check titles listed and matched, no Chromium for a
// CLI-only filter; test side.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { cliScratch, oneLine } from './helpers.js';

const s = cliScratch('tycli-diag-filter', 120_000);
const diag = (...args: string[]) => s.tycli(['--home', join(s.dir, 'home'), ...args]);

describe('tycli diagnostics --filter', () => {
  it('an empty or blank filter is E_USAGE, never "run everything"', async () => {
    for (const f of ['', '  ']) {
      for (const extra of [[], ['--browser']]) {
        const r = await diag('diagnostics', '--filter', f, ...extra);
        expect(r.code).toBe(2);
        expect(r.stderr).toContain('error[E_USAGE]: --filter needs TEXT');
        expect(r.stdout).toBe('');
      }
    }
  });

  it('--browser --list shows the browser check titles the filter matches, under their contract', async () => {
    const all = oneLine(await diag('--json', 'diagnostics', '--browser', '--list')) as {
      contracts: { host: string; name: string; checks?: string[] }[];
    };
    const sandbox = all.contracts.find((c) => c.host === 'browser' && c.name === 'tool_security_contracts')!;
    expect(sandbox.checks!.length).toBeGreaterThan(5);
    // a filter that only a title holds (no contract name contains it) lists that check
    const byTitle = oneLine(
      await diag('--json', 'diagnostics', '--browser', '--list', '--filter', 'Proxy result'),
    ) as typeof all;
    expect(byTitle.contracts).toEqual([
      {
        host: 'browser',
        name: 'tool_security_contracts',
        requirement: expect.any(String),
        checks: ['js-escape: a Proxy result or a Proxy fetch init fails inside the sandbox; no trap runs on the host'],
      },
    ]);
    const text = await diag('diagnostics', '--browser', '--list', '--filter', 'js-escape');
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^browser +tool_security_contracts /m);
    expect(text.stdout).toContain(' - js-escape: hostile errors');
  });

  it('no match on either host names contract names and check titles', async () => {
    for (const extra of [[], ['--list']]) {
      const r = await diag('diagnostics', '--browser', '--filter', 'no-such-check-anywhere', ...extra);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(
        'error[E_USAGE]: no contract name or browser check title contains "no-such-check-anywhere"',
      );
    }
  });

  it('a CLI-only filter with --browser runs the CLI contract and starts no Chromium', async () => {
    const r = await diag('--json', 'diagnostics', '--browser', '--filter', 'sandbox_posture');
    expect(r.code, r.stderr).toBe(0);
    const j = oneLine(r) as { ok: boolean; browser?: string; contracts: { host: string; name: string }[] };
    expect(j.browser).toBe('not started: no browser check matches the filter');
    expect(j.contracts.map((c) => `${c.host}:${c.name}`)).toEqual(['cli:sandbox_posture']);
    const text = await diag('diagnostics', '--browser', '--filter', 'sandbox_posture');
    expect(text.stdout).toContain('browser: not started (no browser check matches "sandbox_posture")');
  }, 120_000);
});
