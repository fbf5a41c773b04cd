// `tycli sandbox status` and `tycli diagnostics` through the real command table (exit codes, JSON, filter,
// fail-closed); Node host, trusted side.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { main } from '../../node/cli/main.js';
import { setProbeOverrideForTests } from '../../node/os-sandbox/probe.js';

const home = mkdtempSync(join(tmpdir(), 'tysandbox-os-cli-'));
const cwd = mkdtempSync(join(tmpdir(), 'tysandbox-os-cli-cwd-'));
afterAll(() => {
  rmSync(home, { recursive: true, force: true });
  rmSync(cwd, { recursive: true, force: true });
});
afterEach(() => setProbeOverrideForTests(undefined));

async function tycli(...argv: string[]) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c) => (out += String(c)));
  stderr.on('data', (c) => (err += String(c)));
  const code = await main(['--home', home, ...argv], {
    io: { stdout, stderr, stdin: new PassThrough(), interactive: false },
    env: { TYCLI_HOME: home },
    cwd,
  });
  return { code, out, err };
}

describe('tycli sandbox status', () => {
  it('shows the backend, the runtime versions and the posture (JSON)', async () => {
    const r = await tycli('sandbox', 'status', '--json');
    expect(r.code).toBe(0);
    const s = JSON.parse(r.out) as Record<string, any>;
    expect(s).toMatchObject({
      posture: 'auto',
      postureSource: 'default',
      backend: 'bwrap',
      available: true,
      enforced: true,
      notEnforced: [],
    });
    expect(s.version).toMatch(/^bubblewrap /);
    expect(s.runtimes.node.version).toBe(process.versions.node);
    expect(s.runtimes.deno.version).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('reports Pyodide, the sandboxed Python of this host, with its files checked against the manifest', async () => {
    const r = await tycli('sandbox', 'status', '--json');
    const s = JSON.parse(r.out) as { pyodide: { version: string; path: string; verified: boolean } };
    expect(s.pyodide).toMatchObject({ version: expect.stringMatching(/^\d+\.\d+\.\d+$/), verified: true });
    expect(s.pyodide.path).toMatch(/node_modules\/pyodide$/);
    const text = await tycli('sandbox', 'status');
    expect(text.out).toMatch(
      /^pyodide: +\d+\.\d+\.\d+ \(.*\): files match core\/pyodide-manifest\.json; Python revisions run sandboxed/m,
    );
  });

  it('reports the bwrap version and the known advisories that affect it, with what each means for tysandbox', async () => {
    const r = await tycli('sandbox', 'status', '--json');
    const s = JSON.parse(r.out) as {
      version: string;
      bwrap: {
        version: string;
        setuid: boolean;
        advisories: { id: string; fixedIn: string; tysandbox: { exposure: string } }[];
      };
    };
    expect(s.bwrap.version).toBe(/bubblewrap (\S+)/.exec(s.version)?.[1]);
    expect(s.bwrap.setuid).toBe(false);
    const below12 = Number(s.bwrap.version.split('.')[1]) < 12 && s.bwrap.version.startsWith('0.');
    // Debian 12's 0.8.0 (this machine) has GHSA-pxhw-h44j-8pfx; tysandbox is not exposed to it
    expect(s.bwrap.advisories.map((a) => [a.id, a.fixedIn, a.tysandbox.exposure])).toEqual(
      below12 ? [['GHSA-pxhw-h44j-8pfx', '0.12.0', 'not-exposed']] : [],
    );
    const text = await tycli('sandbox', 'status');
    if (below12)
      expect(text.out).toMatch(
        /^advisory: +GHSA-pxhw-h44j-8pfx \/ CVE-2026-87766 affects bubblewrap \d+\.\d+\.\d+ \(fixed in 0\.12\.0\): .*; not exposed through tysandbox: /m,
      );
    else expect(text.out).toMatch(/^advisory: +none known for bubblewrap /m);
  });

  it('text form names the posture and its source', async () => {
    const r = await tycli('sandbox', 'status', '--sandbox', 'required');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/posture: +required \(flag\)/);
    expect(r.out).toMatch(/isolation: enforced/);
  });

  it('without a backend: auto lists what is not enforced; required reports the refusal and exits 1', async () => {
    setProbeOverrideForTests({ platform: 'linux', backend: 'bwrap', available: false, reason: 'simulated: no bwrap' });
    const auto = await tycli('sandbox', 'status');
    expect(auto.code).toBe(0);
    expect(auto.out).toMatch(/isolation: NOT enforced/);
    expect(auto.out).toMatch(/node: network/);
    const req = await tycli('sandbox', 'status', '--sandbox', 'required', '--json');
    expect(req.code).toBe(1);
    expect(JSON.parse(req.out).refusal).toMatch(/^E_SANDBOX_UNAVAILABLE/);
  });

  it('a bad posture is a usage error', async () => {
    const r = await tycli('sandbox', 'status', '--sandbox', 'sometimes');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/E_USAGE/);
  });
});

describe('tycli diagnostics', () => {
  it('--list names the contracts; --filter is case-insensitive', async () => {
    const all = await tycli('diagnostics', '--list');
    expect(all.code).toBe(0);
    for (const n of [
      'tool_security_contracts',
      'os_isolation',
      'os_resource_limits',
      'python_escapes',
      'sandbox_posture',
    ])
      expect(all.out).toContain(n);
    const some = await tycli('diagnostics', '--list', '--filter', 'ISOLATION', '--json');
    expect(JSON.parse(some.out).contracts.map((c: { name: string }) => c.name)).toEqual(['os_isolation']);
  });

  it('runs the filtered contracts and exits 0 when they pass', async () => {
    const r = await tycli('diagnostics', '--filter', 'tool_security', '--json');
    const res = JSON.parse(r.out) as { ok: boolean; contracts: { name: string; ok: boolean }[] };
    expect(res.contracts.map((c) => [c.name, c.ok])).toEqual([['tool_security_contracts', true]]);
    expect(r.code).toBe(0);
  });

  it('runs the Python escape contract and reports the verified Pyodide files', async () => {
    const r = await tycli('diagnostics', '--filter', 'python_escapes', '--json');
    const res = JSON.parse(r.out) as {
      ok: boolean;
      pyodide: { verified: boolean; version: string };
      contracts: { name: string; ok: boolean; detail: string }[];
    };
    expect(res.contracts.map((c) => [c.name, c.ok])).toEqual([['python_escapes', true]]);
    expect(res.contracts[0]!.detail).toMatch(/PASS node\/python /);
    expect(res.contracts[0]!.detail).toMatch(/PASS deno\/python /);
    expect(res.pyodide).toMatchObject({ verified: true });
    expect(r.code).toBe(0);
  }, 240_000);

  it("reports the bwrap version and its advisories, and checks this machine's sandbox command lines (bwrap_setup_paths)", async () => {
    const r = await tycli('diagnostics', '--filter', 'bwrap_setup_paths', '--json');
    const res = JSON.parse(r.out) as {
      bwrap: { version: string; advisories: { id: string }[] };
      contracts: { name: string; ok: boolean; detail: string }[];
    };
    expect(res.bwrap.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(res.contracts.map((c) => [c.name, c.ok])).toEqual([['bwrap_setup_paths', true]]);
    const detail = res.contracts[0]!.detail;
    expect(detail).toMatch(/^PASS -\/bwrap version: \d+\.\d+\.\d+$/m);
    for (const kind of ['node/javascript', 'node/python', 'deno/javascript', 'deno/python'])
      expect(detail).toContain(`PASS ${kind} with read-only, writable and nested folders: no setup path beneath`);
    for (const a of res.bwrap.advisories) expect(detail).toMatch(new RegExp(`^PASS -/bwrap advisory ${a.id} `, 'm'));
    const text = await tycli('diagnostics', '--filter', 'bwrap_setup_paths');
    expect(text.out).toMatch(/^bubblewrap \d+\.\d+\.\d+: /m);
    expect(r.code).toBe(0);
  }, 120_000);

  it('exits 1 with a FAIL row when a contract fails (no backend: os_isolation cannot hold)', async () => {
    setProbeOverrideForTests({ platform: 'linux', backend: 'bwrap', available: false, reason: 'simulated: no bwrap' });
    const r = await tycli('diagnostics', '--filter', 'os_isolation');
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/^FAIL {2}os_isolation$/m);
    expect(r.out).toMatch(/0\/1 contracts passed/);
  });

  it('a filter that matches nothing is a usage error (exit 2)', async () => {
    const r = await tycli('diagnostics', '--filter', 'no-such-contract');
    expect(r.code).toBe(2);
  });
});
