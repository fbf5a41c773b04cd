// End-to-end tests of the built-in native `python` tool through tycli (built dist/, temp homes, no terminal); test
// side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oneLine, runProcess, type Ran } from './helpers.js';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { revisionId } from '../../core/revisions/registry.js';
import { detectPython, pythonToolManifest } from '../../node/python/native-tool.js';
import { probeSandbox } from '../../node/os-sandbox/probe.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'tycli.mjs');
const PATH = process.env.PATH ?? '/usr/bin:/bin';
const hasPython = detectPython({ env: { PATH } }) !== undefined;
let tmp: string;

/**
 * `node bin/tycli.mjs ARGS` in a new session (no controlling terminal: nobody can answer a question), clean
 * environment.
 */
function tycli(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return runProcess(process.execPath, [BIN, ...args], { PATH, HOME: tmp, ...env }, tmp);
}

const home = (n: string) => join(tmp, `home-${n}`);

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist', 'node', 'cli', 'main.js')))
    throw new Error('dist/ is missing: run `npm run build` before the e2e tests');
  tmp = await mkdtemp(join(tmpdir(), 'tycli-py-e2e-'));
});
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe.skipIf(!hasPython)('tycli and the built-in python tool', () => {
  it('is listed as a built-in with the CID of its manifest, and nothing is written to the store', async () => {
    const want = await revisionId(pythonToolManifest());
    const list = await tycli(['--home', home('list'), 'tool', 'list', '--json']);
    expect(list.code, list.stderr).toBe(0);
    expect(oneLine(list)).toEqual({
      ok: true,
      tools: [{ name: 'python', active: want, revisions: [want], builtin: true }],
    });
    const human = await tycli(['--home', home('list'), 'tool', 'list']);
    expect(human.stdout).toMatch(new RegExp(`^python\\s+${want.slice(9, 21)}\\s+built-in$`, 'm'));
    const show = oneLine(await tycli(['--home', home('list'), 'tool', 'show', `python@${want}`, '--json']));
    expect(show).toMatchObject({
      ok: true,
      name: 'python',
      revision: want,
      active: true,
      manifest: { execution: { kind: 'trusted-native' } },
    });
    const stored = await readdir(join(home('list'), 'store'), { recursive: true });
    expect(stored.filter((f) => f.includes('python'))).toEqual([]);
  });

  it("with --allow 'python(*)' runs the code and returns exitCode, stdout and stderr", async () => {
    const r = await tycli([
      '--home',
      home('allow'),
      '--json',
      '--allow',
      'python(*)',
      'run',
      'python',
      '--args',
      JSON.stringify({ code: 'import sys\nprint(1+1)\nprint("e", file=sys.stderr)' }),
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(oneLine(r)).toMatchObject({
      ok: true,
      revision: await revisionId(pythonToolManifest()),
      result: { exitCode: 0, signal: null, stdout: '2\n', stderr: 'e\n' },
    });
  });

  it('when nobody can answer the approval question, refuses at once with E_CAPABILITY_DENIED and runs nothing', async () => {
    const marker = join(tmp, 'ran-marker');
    // --sandbox off: were the refusal skipped, the code could create the marker on the host.
    const r = await tycli([
      '--home',
      home('refuse'),
      '--json',
      '--sandbox',
      'off',
      'run',
      'python',
      '--args',
      JSON.stringify({ code: `open(${JSON.stringify(marker)}, "w").write("x")` }),
    ]);
    expect(r.code).toBe(1);
    const line = oneLine(r) as { ok: boolean; error: { code: string; message: string } };
    expect(line.ok).toBe(false);
    expect(line.error.code).toBe('E_CAPABILITY_DENIED');
    expect(line.error.message).toContain('the rule that allows it without asking: python(*); ');
    expect(line.error.message).toContain('pass that rule quoted to --allow');
    expect(existsSync(marker)).toBe(false);
  });

  it("a deny rule wins over --allow 'python(*)'", async () => {
    const marker = join(tmp, 'deny-marker');
    const r = await tycli([
      '--home',
      home('deny'),
      '--json',
      '--sandbox',
      'off',
      '--allow',
      'python(*)',
      '--deny',
      'python(*)',
      'run',
      'python',
      '--args',
      JSON.stringify({ code: `open(${JSON.stringify(marker)}, "w").write("x")` }),
    ]);
    expect(r.code).toBe(1);
    expect(oneLine(r)).toMatchObject({ ok: false, error: { code: 'E_CAPABILITY_DENIED' } });
    expect(existsSync(marker)).toBe(false);
  });

  it('each approval decision has its own audit record: ALLOW naming the allow rule, DENY naming the deny rule or the missing answer', async () => {
    const code = JSON.stringify({ code: 'print(1)' });
    expect(
      (await tycli(['--home', home('audit-allow'), '--json', '--allow', 'python(*)', 'run', 'python', '--args', code]))
        .code,
    ).toBe(0);
    expect(
      (await tycli(['--home', home('audit-deny'), '--json', '--deny', 'python(*)', 'run', 'python', '--args', code]))
        .code,
    ).toBe(1);
    expect((await tycli(['--home', home('audit-none'), '--json', 'run', 'python', '--args', code])).code).toBe(1);
    const { readFile: rf } = await import('node:fs/promises');
    // the records as stored (one JSON line each), those of the approval decision only
    const stored = async (h: string) =>
      (await rf(join(h, 'store', '.logs', 'audit'), 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((r) => r.kind === 'python');
    expect(await stored(home('audit-allow'))).toEqual([
      expect.objectContaining({
        decision: 'allow',
        list: 'allow',
        rule: 'python(*)',
        outcome: 'granted',
        tool: 'python',
      }),
    ]);
    expect(await stored(home('audit-deny'))).toEqual([
      expect.objectContaining({
        decision: 'deny',
        list: 'deny',
        rule: 'python(*)',
        outcome: 'denied',
        code: 'E_CAPABILITY_DENIED',
      }),
    ]);
    expect(await stored(home('audit-none'))).toEqual([
      expect.objectContaining({ decision: 'deny', list: 'person', rule: 'no answer (no-channel)', outcome: 'denied' }),
    ]);
  });

  it('arguments are checked against the manifest before anything runs (E_INVALID_ARGS, exit 2)', async () => {
    const r = await tycli([
      '--home',
      home('args'),
      '--json',
      '--allow',
      'python(*)',
      'run',
      'python',
      '--args',
      '{"code":"print(1)","shell":"rm -rf /"}',
    ]);
    expect(r.code).toBe(2);
    expect(oneLine(r)).toMatchObject({ ok: false, error: { code: 'E_INVALID_ARGS' } });
  });

  it('under the OS sandbox the code runs as the sandbox user, without the host home or the CLI environment', async (t) => {
    const probe = await probeSandbox();
    if (!probe.available) t.skip(); // no OS sandbox on this machine
    const code =
      'import os, json\nprint(json.dumps({"uid": os.getuid(), "root": sorted(os.listdir("/")), "env": sorted(os.environ)}))';
    const r = await tycli(
      [
        '--home',
        home('os'),
        '--json',
        '--sandbox',
        'required',
        '--allow',
        'python(*)',
        'run',
        'python',
        '--args',
        JSON.stringify({ code }),
      ],
      { TY_E2E_CANARY: 'canary-value' },
    );
    expect(r.code, r.stderr).toBe(0);
    const result = (oneLine(r) as { result: { stdout: string } }).result;
    const seen = JSON.parse(result.stdout) as { uid: number; root: string[]; env: string[] };
    if (probe.dropTo?.pool) {
      // A root CLI leases each sandbox a uid of its own (node/os-sandbox/uid-pool.ts), never root and never the shared
      // nobody.
      expect(seen.uid).toBeGreaterThanOrEqual(probe.dropTo.pool.base);
      expect(seen.uid).toBeLessThan(probe.dropTo.pool.base + probe.dropTo.pool.count);
    } else if (probe.dropTo) expect(seen.uid).toBe(probe.dropTo.uid);
    expect(seen.root).not.toContain('home');
    expect(seen.root).not.toContain('root');
    expect(seen.env).not.toContain('TY_E2E_CANARY');
    expect(result.stdout).not.toContain('canary-value');
  });
});

describe('tycli without python3 on PATH', () => {
  it('does not offer the python tool', async () => {
    const empty = join(tmp, 'empty-bin');
    const list = await tycli(['--home', home('nopy'), 'tool', 'list', '--json'], { PATH: empty });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).not.toContain('"python"');
    const r = await tycli(
      ['--home', home('nopy'), '--json', '--allow', 'python(*)', 'run', 'python', '--args', '{"code":"print(1)"}'],
      { PATH: empty },
    );
    expect(r.code).toBe(2);
    expect(oneLine(r)).toMatchObject({ ok: false, error: { code: 'E_UNKNOWN_TOOL' } });
  });
});
