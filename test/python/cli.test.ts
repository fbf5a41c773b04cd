// Sandboxed Python (Pyodide) on the command line: real Node and Deno sandbox processes under bubblewrap, verified
// assets; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliContractHost } from '../../node/diagnostics/cli-host.js';
import { NodeSandboxRuntime, packageRoot, runnerFiles } from '../../node/sandbox/runtime.js';
import { pyodideAssets, pyodideAssetsIn, PYTHON_RUNNER_FLAG } from '../../node/python/sandbox.js';
import { DEFAULT_LIMITS } from '../../core/exec/runtime.js';

let host: CliContractHost;
beforeAll(async () => {
  // posture required: if bubblewrap stopped working these tests fail instead of passing unsandboxed.
  host = await CliContractHost.create({ posture: 'required' });
});

const SUM = [
  'import sys',
  'def main(args, ctx):',
  '    return {"sum": sum(range(args["n"] + 1)), "version": sys.version.split()[0], "platform": sys.platform}',
].join('\n');

describe.each(['node', 'deno'] as const)('Python on the %s sandbox under bubblewrap', (engine) => {
  it('runs a Python revision in Pyodide (no Python interpreter involved) and returns JSON data', async () => {
    const r = await host.runTool({ engine, runtime: 'python', source: SUM, args: { n: 100 } });
    expect(r).toEqual({
      ok: true,
      value: { sum: 5050, version: expect.stringMatching(/^3\.\d+\.\d+$/), platform: 'emscripten' },
    });
  });
});

describe('the Python sandbox command', () => {
  const spec = (engine: 'node' | 'deno') => ({
    revision: 'bagaaierasords4njcts6vs7qvdjfcvgnume4hqohf65zsfguprqphs3icwea',
    manifest: {
      name: 'p',
      description: '',
      parameters: {},
      execution: { kind: 'sandboxed-code' as const, runtime: 'python' as const, source: SUM, engine },
    },
    limits: DEFAULT_LIMITS,
  });
  it('grants exactly the runner files and the manifest-listed Pyodide files, read-only, and disallows code from strings', () => {
    const assets = pyodideAssets(packageRoot());
    const node = new NodeSandboxRuntime({ engine: 'node' }).command(spec('node'));
    const reads = node.args
      .filter((a) => a.startsWith('--allow-fs-read='))
      .map((a) => a.slice('--allow-fs-read='.length));
    // the entry, the captured built-ins, the guest core, the runner (no code cache: V8 would reject it under Python's
    // flags), the Python guest and its memory limit
    const runner = runnerFiles('node', { codeCache: false });
    expect(reads.slice(0, runner.length)).toEqual(runner);
    expect(reads.some((r) => r.endsWith('.cache'))).toBe(false);
    expect(reads.slice(runner.length + 2).sort()).toEqual(Object.values(assets.paths).sort());
    expect(reads[runner.length]).toMatch(/core\/guest\/python\.mjs$/);
    expect(reads[runner.length + 1]).toMatch(/core\/guest\/python-limits\.mjs$/);
    expect(node.args).toContain('--disallow-code-generation-from-strings');
    expect(
      node.args.some(
        (a) => a.startsWith('--allow-fs-write') || a === '--allow-child-process' || a === '--allow-worker',
      ),
    ).toBe(false);
    expect(node.env).toEqual({});
    expect(node.writablePaths).toEqual([]);
    expect(node.readOnlyPaths).toEqual(expect.arrayContaining(Object.values(assets.paths)));
    const arg = node.args.find((a) => a.startsWith(PYTHON_RUNNER_FLAG))!;
    const carried = JSON.parse(Buffer.from(arg.slice(PYTHON_RUNNER_FLAG.length), 'base64').toString('utf8')) as {
      files: unknown;
    };
    expect(carried.files).toEqual(
      JSON.parse(readFileSync(join(packageRoot(), 'core', 'pyodide-manifest.json'), 'utf8')).files,
    );
    const deno = new NodeSandboxRuntime({ engine: 'deno' }).command(spec('deno'));
    expect(deno.args).toContain(`--allow-read=${Object.values(assets.paths).join(',')}`);
    expect(deno.args.find((a) => a.startsWith('--v8-flags='))).toMatch(/--disallow-code-generation-from-strings/);
    // A JavaScript revision gets none of it.
    const js = new NodeSandboxRuntime({ engine: 'node' }).command({
      ...spec('node'),
      manifest: {
        ...spec('node').manifest,
        execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default () => 1' },
      },
    });
    expect(js.args.filter((a) => a.startsWith('--allow-fs-read='))).toEqual(
      runnerFiles('node').map((f) => `--allow-fs-read=${f}`),
    );
    expect(js.args).not.toContain('--disallow-code-generation-from-strings');
  });
});

describe('Pyodide files are verified by sha-256 against core/pyodide-manifest.json', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tysandbox-pyodide-'));
    chmodSync(dir, 0o755); // a root CLI's sandbox runs as an unprivileged uid
    const a = pyodideAssets(packageRoot());
    for (const [name, p] of Object.entries(a.paths)) copyFileSync(p, join(dir, name));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('the installed package matches the manifest the browser build uses', () => {
    const a = pyodideAssets(packageRoot());
    expect(Object.keys(a.files).sort()).toEqual([
      'pyodide-lock.json',
      'pyodide.asm.mjs',
      'pyodide.asm.wasm',
      'pyodide.mjs',
      'python_stdlib.zip',
    ]);
    expect(a.version).toBe(JSON.parse(readFileSync(join(a.dir, 'package.json'), 'utf8')).version);
  });

  it('an altered file is refused with E_INTEGRITY on the host before any process starts, and in the sandbox when it changes after the host checked it', async () => {
    const assets = pyodideAssetsIn(packageRoot(), dir);
    const wrap = host.plan.wrap!;
    const rt = new NodeSandboxRuntime({ engine: 'node', wrap, pyodide: assets });
    const s = {
      revision: 'bagaaierasords4njcts6vs7qvdjfcvgnume4hqohf65zsfguprqphs3icwea',
      manifest: {
        name: 'p',
        description: '',
        parameters: {},
        execution: { kind: 'sandboxed-code' as const, runtime: 'python' as const, source: SUM },
      },
      limits: DEFAULT_LIMITS,
    };
    const lock = join(dir, 'pyodide-lock.json');
    const when = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000); // whole seconds: restorable exactly
    utimesSync(lock, when, when);
    // Intact copy: runs (and the host remembers the files as checked).
    const ok = await rt.start(s);
    expect(
      await ok.call(
        { n: 3 },
        { signal: new AbortController().signal, limits: DEFAULT_LIMITS, onCapability: async () => null },
      ),
    ).toMatchObject({ sum: 6 });
    await ok.destroy('done');
    // Same size, same mtime, same inode, other bytes: the host's cached check passes; the sandbox's own check refuses.
    const ino = statSync(lock).ino;
    const bytes = readFileSync(lock);
    bytes[10] = bytes[10] === 0x20 ? 0x09 : 0x20;
    writeFileSync(lock, bytes);
    utimesSync(lock, when, when);
    expect(statSync(lock).ino).toBe(ino);
    await expect(rt.start(s)).rejects.toMatchObject({
      code: 'E_INTEGRITY',
      message: expect.stringMatching(/^Python runtime file pyodide-lock\.json does not match its sha-256/),
    });
    // A changed file the host sees as changed: E_INTEGRITY from the host, no process.
    utimesSync(lock, when, new Date(when.getTime() + 5000));
    await expect(rt.start(s)).rejects.toMatchObject({
      code: 'E_INTEGRITY',
      message: expect.stringContaining('pyodide-lock.json'),
    });
  });
});

describe('the retained Python sandbox and the start progress', () => {
  it('keeps the initialized interpreter: only the first call of a revision starts Pyodide', async () => {
    const { createNodeHost } = await import('../../node/host/host.js');
    const { PassThrough } = await import('node:stream');
    const tmp = mkdtempSync(join(tmpdir(), 'tysandbox-pyret-'));
    const events: string[] = [];
    const h = await createNodeHost({
      home: join(tmp, 'home'),
      globals: { sandbox: 'required', allow: [], deny: [] },
      io: { stdout: new PassThrough(), stderr: new PassThrough(), stdin: new PassThrough(), interactive: false },
      python: false,
      env: {},
      cwd: tmp,
      onStartProgress: (e) => events.push(e.phase),
    });
    try {
      const source = [
        'import js',
        'n = 0',
        'def main(args, ctx):',
        '    global n',
        '    n += 1',
        '    return {"origin": js.performance.timeOrigin, "n": n}',
      ].join('\n');
      await h.registry.install({
        name: 'pyret',
        description: '',
        parameters: { type: 'object' },
        execution: { kind: 'sandboxed-code', runtime: 'python', source },
      });
      const a = await h.invoker.invoke('pyret', {});
      const b = await h.invoker.invoke('pyret', {});
      expect(a).toMatchObject({ ok: true, result: { n: 1 } });
      // Same process (same time origin), fresh module namespace (n starts over: no retainState), one start.
      expect(b).toMatchObject({
        ok: true,
        result: { n: 1, origin: (a as { result: { origin: number } }).result.origin },
      });
      expect(events).toEqual(['start', 'done']);
    } finally {
      await h.close();
      rmSync(tmp, { recursive: true, force: true });
    }
  }, 180_000);

  it.runIf(existsSync('/usr/bin/script'))(
    'tycli run on a terminal shows a progress line while Pyodide loads, and none with --json',
    async () => {
      const tmp = mkdtempSync(join(tmpdir(), 'tysandbox-pytty-'));
      const m = join(tmp, 'm.json');
      writeFileSync(
        m,
        JSON.stringify({
          name: 'pytty',
          description: '',
          parameters: { type: 'object' },
          execution: {
            kind: 'sandboxed-code',
            runtime: 'python',
            source: 'def main(args, ctx):\n    return "py-" + str(6 * 7)',
          },
        }),
      );
      const bin = join(packageRoot(), 'bin', 'tycli.mjs');
      const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp };
      const onTty = (args: string) =>
        spawnSync(
          '/usr/bin/script',
          ['-qec', `${process.execPath} ${bin} --home ${join(tmp, 'home')} ${args}`, '/dev/null'],
          { cwd: tmp, env, encoding: 'utf8', timeout: 120_000 },
        ).stdout;
      try {
        expect(
          spawnSync(process.execPath, [bin, '--home', join(tmp, 'home'), 'tool', 'add', m], { env, encoding: 'utf8' })
            .status,
        ).toBe(0);
        const human = onTty('--sandbox required run pytty');
        expect(human).toMatch(/Starting Python \(Pyodide \d+\.\d+\.\d+\) in the sandbox… \d+\.\d s/);
        expect(human).toContain('\r\x1b[2K'); // erased before the result
        expect(human).toContain('py-42');
        const json = onTty('--sandbox required --json run pytty');
        expect(json).not.toContain('Starting Python');
        expect(JSON.parse(json.trim())).toMatchObject({ ok: true, result: 'py-42' });
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    },
    240_000,
  );
});

describe('no Python interpreter needed', () => {
  it('tycli adds and runs a sandboxed Python revision with no python3 on PATH (bubblewrap required)', () => {
    const tmp = mkdtempSync(join(tmpdir(), 'tysandbox-nopy-'));
    try {
      const bin = join(tmp, 'empty-bin');
      mkdirSync(bin);
      const m = join(tmp, 'm.json');
      writeFileSync(
        m,
        JSON.stringify({
          name: 'pynopy',
          description: '',
          parameters: { type: 'object' },
          execution: { kind: 'sandboxed-code', runtime: 'python', source: SUM },
        }),
      );
      const env = { PATH: bin, HOME: tmp };
      const tycli = (...a: string[]) =>
        spawnSync(
          process.execPath,
          [join(packageRoot(), 'bin', 'tycli.mjs'), '--home', join(tmp, 'home'), '--json', ...a],
          { env, encoding: 'utf8', timeout: 180_000 },
        );
      expect(tycli('tool', 'add', m).status).toBe(0);
      const list = tycli('tool', 'list');
      expect(list.stdout).not.toContain('"python"'); // the native built-in is not offered without python3
      const r = tycli('--sandbox', 'required', 'run', 'pynopy', '--args', '{"n":10}');
      expect(JSON.parse(r.stdout.trim())).toMatchObject({ ok: true, result: { sum: 55, platform: 'emscripten' } });
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }, 240_000);
});
