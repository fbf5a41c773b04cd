// End-to-end: `tycli diagnostics --browser` runs the browser contracts in Debian's Chromium and reports both hosts in
// one table; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess, type Ran } from './helpers.js';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');
let tmp: string;

/** `node BIN ARGS` in a new session with a clean environment; the whole group is killed after 120 s. */
function tycli(bin: string, args: string[]): Promise<Ran> {
  return runProcess(
    process.execPath,
    [bin, '--home', join(tmp, 'home'), ...args],
    { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp },
    tmp,
    120_000,
  );
}

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist', 'node', 'cli', 'main.js')))
    throw new Error('dist/ is missing: run `npm run build` before the e2e tests');
  tmp = await mkdtemp(join(tmpdir(), 'tycli-diag-'));
});
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('tycli diagnostics --browser', () => {
  it.skipIf(!existsSync('/usr/bin/chromium'))(
    'runs the selected browser contract in Chromium and reports it under its cross-host name (--json)',
    async () => {
      const r = await tycli(join(ROOT, 'bin', 'tycli.mjs'), [
        'diagnostics',
        '--browser',
        '--filter',
        'origin is',
        '--json',
      ]);
      expect(r.code, r.stderr).toBe(0);
      const lines = r.stdout.split('\n').filter(Boolean);
      expect(lines).toHaveLength(1);
      const res = JSON.parse(lines[0]!) as {
        ok: boolean;
        hosts: string[];
        contracts: { host: string; name: string; check?: string; ok: boolean; detail: string }[];
      };
      expect(res.ok).toBe(true);
      expect(res.hosts).toEqual(['cli', 'browser']);
      expect(res.contracts.length).toBeGreaterThan(0);
      for (const c of res.contracts) {
        expect(c).toMatchObject({ host: 'browser', name: 'tool_security_contracts', ok: true });
        expect(c.check?.startsWith('origin is "null"')).toBe(true);
      }
      // --list --browser (titles read from the sources, no browser) names exactly the checks the page ran
      const listed = JSON.parse(
        (
          await tycli(join(ROOT, 'bin', 'tycli.mjs'), [
            'diagnostics',
            '--browser',
            '--list',
            '--filter',
            'origin is',
            '--json',
          ])
        ).stdout,
      ) as { contracts: { host: string; checks?: string[] }[] };
      expect(listed.contracts.filter((c) => c.host === 'browser').flatMap((c) => c.checks ?? [])).toEqual(
        res.contracts.map((c) => c.check),
      );
    },
  );

  it.skipIf(!existsSync('/usr/bin/chromium'))(
    '--frame srcdoc runs the contracts with srcdoc sandbox frames under the documented page policy',
    async () => {
      const r = await tycli(join(ROOT, 'bin', 'tycli.mjs'), [
        'diagnostics',
        '--browser',
        '--frame',
        'srcdoc',
        '--filter',
        'sandbox attribute',
        '--json',
      ]);
      expect(r.code, r.stderr).toBe(0);
      const res = JSON.parse(r.stdout.trim()) as {
        ok: boolean;
        contracts: { host: string; ok: boolean; detail: string }[];
      };
      expect(res.ok).toBe(true);
      const browserRows = res.contracts.filter((c) => c.host === 'browser');
      expect(browserRows.length).toBeGreaterThan(0);
      expect(browserRows.every((c) => c.ok && c.detail.includes('srcdoc document'))).toBe(true);
      // --frame takes srcdoc, and only with --browser
      for (const args of [
        ['--browser', '--frame', 'blob'],
        ['--frame', 'srcdoc'],
      ]) {
        const bad = await tycli(join(ROOT, 'bin', 'tycli.mjs'), ['diagnostics', ...args, '--json']);
        expect(bad.code).toBe(2);
        expect(JSON.parse(bad.stdout.trim())).toMatchObject({ ok: false, error: { code: 'E_USAGE' } });
      }
    },
  );

  it('outside a source checkout, fails with E_SANDBOX_UNAVAILABLE and a plain message, not a stack', async () => {
    // An installed copy: the compiled code and the launcher, without test/browser.
    const inst = join(tmp, 'installed');
    for (const d of ['dist/node', 'dist/core', 'dist/protocol', 'bin', 'package.json'])
      await cp(join(ROOT, d), join(inst, d), { recursive: true });
    await symlink(join(ROOT, 'node_modules'), join(inst, 'node_modules'));
    const r = await tycli(join(inst, 'bin', 'tycli.mjs'), [
      'diagnostics',
      '--browser',
      '--filter',
      'origin is',
      '--json',
    ]);
    expect(r.code).toBe(1);
    const line = JSON.parse(r.stdout.trim()) as { ok: boolean; error: { code: string; message: string } };
    expect(line).toMatchObject({ ok: false, error: { code: 'E_SANDBOX_UNAVAILABLE' } });
    expect(line.error.message).toContain('source checkout');
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/\n\s+at /);
  });
});
