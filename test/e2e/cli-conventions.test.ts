// End-to-end tests of tycli's output conventions: one JSON envelope, --version/-V, did-you-mean, colour, completion;
// test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { oneLine, runProcess, type Ran } from './helpers.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'tycli.mjs');
const TOOL = join(ROOT, 'tools/examples/multi-file/manifest.json');
let tmp: string;
let h: string;

function tycli(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return runProcess(
    process.execPath,
    [BIN, ...args],
    { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp, ...env },
    tmp,
  );
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'tycli-conv-'));
  h = join(tmp, 'home');
  const r = await tycli(['--home', h, 'tool', 'add', TOOL]);
  if (r.code !== 0) throw new Error(r.stderr);
});
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('--json envelope', () => {
  it('every listing prints exactly one line {"ok":true,...} with structured fields; errors {"ok":false,"error":{...}}', async () => {
    const cases: [string[], string][] = [
      [['tool', 'list'], 'tools'],
      [['tool', 'list', '--revisions'], 'revisions'],
      [['secret', 'list'], 'secrets'],
      [['permissions', 'list'], 'decisions'],
      [['resume'], 'paused'],
      [['questions'], 'questions'],
      [['mcp', 'list'], 'servers'],
      [['tool', 'gc', '--dry-run'], 'removed'],
    ];
    for (const [args, field] of cases) {
      const r = await tycli(['--home', h, '--json', ...args]);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      const o = oneLine(r);
      expect(Object.keys(o)[0], args.join(' ')).toBe('ok');
      expect(o.ok).toBe(true);
      expect(Array.isArray(o[field]), `${args.join(' ')} .${field}`).toBe(true);
    }
    const err = await tycli(['--home', h, '--json', 'tool', 'show', 'nosuch']);
    expect(err.code).toBe(2);
    expect(oneLine(err)).toEqual({
      ok: false,
      error: { code: 'E_UNKNOWN_TOOL', message: expect.stringContaining('no tool named "nosuch"') },
    });
  });
});

describe('--version', () => {
  it('is listed in --help; --version and -V print it; --json gives the envelope', async () => {
    const help = await tycli(['--help']);
    expect(help.stdout).toMatch(/^\s+-V, --version\s+print the version/m);
    const { version } = JSON.parse(
      await (await import('node:fs/promises')).readFile(join(ROOT, 'package.json'), 'utf8'),
    ) as { version: string };
    expect((await tycli(['--version'])).stdout).toBe(`tycli ${version}\n`);
    expect((await tycli(['-V'])).stdout).toBe(`tycli ${version}\n`);
    expect(oneLine(await tycli(['--json', '--version']))).toEqual({ ok: true, name: 'tycli', version });
  });
});

describe('did you mean', () => {
  it('suggests the nearest tool, command and option', async () => {
    const tool = await tycli(['--home', h, 'run', 'unit-convrt', '--args', '{}']);
    expect(tool.code).toBe(2);
    expect(tool.stderr).toMatch(
      /^error\[E_UNKNOWN_TOOL\]: no tool named "unit-convrt" is installed; did you mean 'unit-convert'\?/,
    );
    expect((await tycli(['--home', h, 'tool', 'show', 'Unit-Convert'])).stderr).toContain(
      "did you mean 'unit-convert'?",
    );
    const far = await tycli(['--home', h, 'run', 'zzzzzz', '--args', '{}']);
    expect(far.stderr).not.toContain('did you mean');
    expect(far.stderr).toContain('add it with: tycli tool add MANIFEST.json');
    const cmd = await tycli(['--home', h, 'tool', 'lst']);
    expect(cmd.stderr).toContain("did you mean 'tycli tool list'?");
    const opt = await tycli(['--home', h, 'tool', 'remove', 'unit-convert', '--aprove-removal']);
    expect(opt.code).toBe(2);
    expect(opt.stderr).toMatch(
      /^error\[E_USAGE\]: Unknown option '--aprove-removal'; did you mean '--approve-removal'\?/,
    );
    expect((await tycli(['--home', h, 'tool', 'list', '--revision'])).stderr).toContain("did you mean '--revisions'?");
  });
});

describe('colour', () => {
  it('only on a TTY or with FORCE_COLOR; NO_COLOR turns it off', async () => {
    const plain = await tycli(['--home', h, 'run', 'nosuch']);
    expect(plain.stderr.startsWith('error[E_UNKNOWN_TOOL]')).toBe(true);
    const forced = await tycli(['--home', h, 'run', 'nosuch'], { FORCE_COLOR: '1' });
    expect(forced.stderr.startsWith('\u001b[31merror[E_UNKNOWN_TOOL]\u001b[0m: ')).toBe(true);
    const { colorEnabled } = await import('../../node/cli/output.js');
    const tty = { isTTY: true } as unknown as NodeJS.WritableStream;
    const pipe = { isTTY: false } as unknown as NodeJS.WritableStream;
    const ctx = (env: Record<string, string>) => ({ env, io: { stdout: tty } as never });
    expect(colorEnabled(ctx({}), tty)).toBe(true);
    expect(colorEnabled(ctx({}), pipe)).toBe(false);
    expect(colorEnabled(ctx({ NO_COLOR: '1' }), tty)).toBe(false);
    expect(colorEnabled(ctx({ NO_COLOR: '' }), tty)).toBe(true);
    expect(colorEnabled(ctx({ TERM: 'dumb' }), tty)).toBe(false);
    expect(colorEnabled(ctx({ FORCE_COLOR: '1', NO_COLOR: '1' }), pipe)).toBe(true);
    expect(colorEnabled(ctx({ FORCE_COLOR: '0' }), tty)).toBe(false);
  });
});

describe('tycli completion', () => {
  it('bash completes command words and options from the command table', async () => {
    const script = (await tycli(['completion', 'bash'])).stdout;
    const complete = async (words: string[]) => {
      const r = await runProcess(
        'bash',
        [
          '-c',
          `${script}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _tycli; printf '%s\\n' "\${COMPREPLY[@]}"`,
        ],
        { PATH: process.env.PATH ?? '' },
        tmp,
      );
      return r.stdout.split('\n').filter(Boolean);
    };
    expect(await complete(['tycli', 'to'])).toEqual(['token', 'tool']);
    expect(await complete(['tycli', 'tool', 'r'])).toEqual(['remove']);
    expect(await complete(['tycli', 'tool', 'remove', '--appr'])).toEqual(['--approve-removal']);
    expect(await complete(['tycli', 'completion', 'x'])).toEqual([]);
    const fish = (await tycli(['completion', 'fish'])).stdout;
    expect(fish).toContain(
      "complete -c tycli -n '__fish_seen_subcommand_from tool' -a 'add list show activate remove gc diff settings'",
    );
    expect((await tycli(['completion', 'zsh'])).stdout).toMatch(/^#compdef tycli/);
    expect((await tycli(['completion', 'tcsh'])).code).toBe(2);
  });
});

describe.runIf(process.platform === 'linux' && existsSync('/usr/bin/script'))(
  'on a terminal (util-linux script gives tycli a pseudo-terminal)',
  () => {
    const underPty = (args: string[]): Promise<Ran> =>
      runProcess(
        '/usr/bin/script',
        ['-qec', [process.execPath, BIN, ...args].map((a) => `'${a}'`).join(' '), '/dev/null'],
        { PATH: process.env.PATH ?? '', HOME: tmp },
        tmp,
        120_000,
      );

    it('mcp serve says on stderr that it is waiting; through a pipe it says nothing', async () => {
      const tty = await underPty(['--home', h, 'mcp', 'serve']);
      expect(tty.stdout).toContain(
        'tycli mcp serve: MCP bridge on stdio (client context "default"), waiting for an MCP client on stdin',
      );
      const piped = await tycli(['--home', h, 'mcp', 'serve']);
      expect(piped.stderr).toBe('');
      expect(piped.stdout).toBe('');
    });

    it('diagnostics shows progress on a TTY, and none through a pipe', async () => {
      const tty = await underPty(['--home', h, 'diagnostics', '--filter', 'mediated_fetch']);
      expect(tty.stdout).toContain('[1/1] cli: mediated_fetch');
      const piped = await tycli(['--home', h, 'diagnostics', '--filter', 'mediated_fetch']);
      expect(piped.stderr).not.toContain('[1/1]');
      expect(piped.stdout).toContain('PASS  mediated_fetch');
    });
  },
);

describe('sandbox status', () => {
  it('names the Python the built-in python tool really runs', async () => {
    const s = oneLine(await tycli(['--home', h, '--json', 'sandbox', 'status'])) as {
      runtimes: { python?: { path: string } };
    };
    if (!s.runtimes.python) return; // no python3 here: nothing to name (the row says "not found")
    const r = oneLine(
      await tycli([
        '--home',
        h,
        '--json',
        '--allow',
        'python(*)',
        'run',
        'python',
        '--args',
        '{"code":"import sys; print(sys.executable)"}',
      ]),
    );
    expect((r.result as { stdout: string }).stdout.trim()).toBe(s.runtimes.python.path);
  });
});
