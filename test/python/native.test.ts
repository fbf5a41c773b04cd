// Tests for the native Python tool (node/python/native-tool.ts): detection, session approval, limits, environment; test
// code, trusted side.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  chmodSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  PYTHON_NATIVE_ENTRY,
  PythonTool,
  createPythonNative,
  registerPythonTool,
  detectPython,
  pythonApprovalQuestion,
  pythonToolManifest,
  type PythonSpawnRequest,
} from '../../node/python/native-tool.js';
import type { AskOutcome, Asker } from '../../core/ask/router.js';
import type { Question } from '../../core/exec/runtime.js';
import { ToolManifestSchema } from '../../protocol/manifest.js';
import { ToolRegistry } from '../../core/revisions/registry.js';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';

const python = detectPython();
const base = mkdtempSync(join(tmpdir(), 'ty-py-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

class CountingAsker implements Asker {
  asked: Question[] = [];
  constructor(private readonly answer: AskOutcome) {}
  async ask(q: Question): Promise<AskOutcome> {
    this.asked.push(q);
    await new Promise((r) => setTimeout(r, 5));
    return this.answer;
  }
}
const yes = (): CountingAsker => new CountingAsker({ allow: true, scope: 'session', channel: 'terminal' });

describe('detection', () => {
  it('finds nothing on an empty PATH, and skips a python3 that does not answer the probe', () => {
    expect(detectPython({ env: { PATH: '' } })).toBeUndefined();
    const fake = join(base, 'fakebin');
    mkdirSync(fake);
    writeFileSync(join(fake, 'python3'), '#!/bin/sh\necho "not python"\n');
    chmodSync(join(fake, 'python3'), 0o755);
    expect(detectPython({ env: { PATH: fake } })).toBeUndefined();
  });

  it.skipIf(!python)('resolves the real interpreter behind a shim, with its library prefixes', () => {
    expect(python!.path.startsWith('/')).toBe(true);
    expect(python!.version).toMatch(/^3\.\d+/);
    expect(python!.prefixes.length).toBeGreaterThan(0);
  });

  it("the manifest is a valid trusted-native manifest that says it runs with the user's authority", () => {
    const m = ToolManifestSchema.parse(pythonToolManifest());
    expect(m.execution).toEqual({ kind: 'trusted-native', entry: PYTHON_NATIVE_ENTRY });
    expect(m.description).toContain("user's own authority");
  });

  it('no python3 means no tool is offered', () => {
    const saved = process.env.PATH;
    process.env.PATH = '';
    try {
      expect(createPythonNative({ asker: yes() })).toBeUndefined();
    } finally {
      process.env.PATH = saved;
    }
  });
});

describe.skipIf(!python)('session approval', () => {
  it("asks once before the first run, saying plainly it runs with the user's authority", async () => {
    const asker = yes();
    const tool = new PythonTool({ python: python!, asker });
    const [a, b] = await Promise.all([tool.run({ code: 'print(1)' }), tool.run({ code: 'print(2)' })]);
    expect(a.stdout).toBe('1\n');
    expect(b.stdout).toBe('2\n');
    await tool.run({ code: 'print(3)' });
    expect(asker.asked).toHaveLength(1);
    const text = [asker.asked[0]!.title, ...asker.asked[0]!.details].join('\n');
    expect(text).toMatch(/runs as YOU, with your authority/);
    expect(text).toMatch(/not sandboxed/);
    expect(asker.asked[0]!.suggestedRule).toBe('python(*)');
  });

  it('a refusal runs nothing and names the rule; without an asker it is refused', async () => {
    const marker = join(base, 'ran-marker');
    const code = `open(${JSON.stringify(marker)}, 'w').write('x')`;
    const no = new CountingAsker({ allow: false, reason: 'refused', channel: 'terminal', suggestedRule: 'python(*)' });
    const tool = new PythonTool({ python: python!, asker: no });
    await expect(tool.run({ code })).rejects.toMatchObject({
      code: 'E_CAPABILITY_DENIED',
      message: expect.stringContaining('the rule that allows it without asking: python(*)'),
    });
    expect(existsSync(marker)).toBe(false);
    // A refusal is not remembered as approval: the next call asks again.
    await expect(tool.run({ code })).rejects.toMatchObject({ code: 'E_CAPABILITY_DENIED' });
    expect(no.asked).toHaveLength(2);
    await expect(new PythonTool({ python: python! }).run({ code })).rejects.toMatchObject({
      code: 'E_CAPABILITY_DENIED',
    });
    expect(existsSync(marker)).toBe(false);
  });

  it('a python(*) rule verdict is consulted first: deny refuses without asking, allow skips the question', async () => {
    const asker = yes();
    const denied = new PythonTool({ python: python!, asker, policy: () => 'deny' });
    await expect(denied.run({ code: 'print(1)' })).rejects.toMatchObject({ code: 'E_CAPABILITY_DENIED' });
    const allowed = new PythonTool({ python: python!, asker, policy: async () => 'allow' as const });
    expect((await allowed.run({ code: 'print(1)' })).stdout).toBe('1\n');
    expect(asker.asked).toHaveLength(0);
    const asks = new PythonTool({ python: python!, asker, policy: () => 'ask' });
    await asks.run({ code: 'print(1)' });
    expect(asker.asked).toHaveLength(1);
  });

  it('bad arguments are refused before anyone is asked', async () => {
    const asker = yes();
    const tool = new PythonTool({ python: python!, asker });
    for (const bad of [
      null,
      'print(1)',
      { code: 1 },
      { code: 'x', extra: 1 },
      { code: 'x', stdin: 5 },
      { code: 'x'.repeat(1024 * 1024 + 1) },
    ]) {
      await expect(tool.run(bad)).rejects.toMatchObject({ code: 'E_INVALID_ARGS' });
    }
    expect(asker.asked).toHaveLength(0);
  });

  it('the approval question is shown through the sanitizer like any other (interpreter path included)', () => {
    const q = pythonApprovalQuestion({ path: '/opt/py\u001b[2J/bin/python3', version: '3.12.0', prefixes: [] });
    expect(q.details[0]).toContain('/opt/py');
    expect(q.scopes).toContain('session');
  });
});

describe.skipIf(!python)('running', () => {
  it('returns exit code, stdout and stderr, and passes stdin', async () => {
    const tool = new PythonTool({ python: python!, preapproved: true });
    const r = await tool.run({
      code: 'import sys\ndata = sys.stdin.read()\nprint(data.upper())\nprint("warn", file=sys.stderr)\nsys.exit(3)',
      stdin: 'hello',
    });
    expect(r).toEqual({ exitCode: 3, signal: null, stdout: 'HELLO\n', stderr: 'warn\n' });
  });

  it("gets an almost empty environment, never the CLI's own", async () => {
    process.env.TY_PY_TEST_SECRET = 'sekrit-value';
    try {
      const tool = new PythonTool({ python: python!, preapproved: true });
      const r = await tool.run({
        code: 'import os, json\nprint(json.dumps(sorted(os.environ.keys())))\nprint(os.getcwd() == os.environ["HOME"])',
      });
      const [keysLine, cwdIsHome] = r.stdout.trim().split('\n');
      const keys = JSON.parse(keysLine!) as string[];
      expect(
        keys.filter((k) => !['PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'PYTHONIOENCODING', 'LC_CTYPE'].includes(k)),
      ).toEqual([]);
      expect(r.stdout).not.toContain('sekrit-value');
      expect(cwdIsHome).toBe('True');
    } finally {
      delete process.env.TY_PY_TEST_SECRET;
    }
  });

  it('the working folder is fresh and removed afterwards', async () => {
    const root = join(base, 'work');
    mkdirSync(root);
    const tool = new PythonTool({ python: python!, preapproved: true, workRoot: root });
    const r = await tool.run({ code: 'import os\nopen("left.txt","w").write("x")\nprint(os.listdir("."))' });
    expect(r.stdout).toContain('left.txt');
    expect(readdirSync(root)).toEqual([]);
  });

  it('a run past the timeout is stopped with E_TIMEOUT, with the processes it started', async () => {
    const pidFile = join(base, 'bg.pid');
    const tool = new PythonTool({ python: python!, preapproved: true, timeoutMs: 1500 });
    const code = `import subprocess, time\np = subprocess.Popen(["sleep", "60"])\nopen(${JSON.stringify(pidFile)}, "w").write(str(p.pid))\nwhile True: time.sleep(0.05)`;
    await expect(tool.run({ code })).rejects.toMatchObject({ code: 'E_TIMEOUT' });
    const bg = Number(readFileSync(pidFile, 'utf8'));
    expect(bg).toBeGreaterThan(0);
    // Dead or a zombie (killed, waiting to be reaped by init) both count as stopped.
    const running = (pid: number): boolean => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        return !/^\d+ \(.*\) [ZX]/s.test(stat);
      } catch {
        return false;
      }
    };
    let alive = true;
    for (let i = 0; i < 200 && alive; i++) {
      alive = running(bg);
      if (alive) await new Promise((r) => setTimeout(r, 10));
    }
    expect(alive).toBe(false);
  }, 20_000);

  it('more output than the cap is stopped with E_OUTPUT_LIMIT', async () => {
    const tool = new PythonTool({ python: python!, preapproved: true, outputBytes: 10_000 });
    await expect(tool.run({ code: 'import sys\nwhile True: sys.stdout.write("x" * 4096)' })).rejects.toMatchObject({
      code: 'E_OUTPUT_LIMIT',
    });
  });

  it('an abort stops the run with E_ABORTED', async () => {
    const tool = new PythonTool({ python: python!, preapproved: true });
    const c = new AbortController();
    const p = tool.run({ code: 'import time\nprint("started", flush=True)\ntime.sleep(60)' }, { signal: c.signal });
    setTimeout(() => c.abort(), 200);
    await expect(p).rejects.toMatchObject({ code: 'E_ABORTED' });
  });

  it('the wrap option receives the spawn request and its result is what runs', async () => {
    const seen: PythonSpawnRequest[] = [];
    const tool = new PythonTool({
      python: python!,
      preapproved: true,
      wrap: (s) => {
        seen.push(s);
        return {
          command: '/bin/sh',
          args: ['-c', 'echo WRAPPED; exec "$0" "$@"', s.command, ...s.args],
          env: { ...s.env, WRAPPED_BY: 'test' },
        };
      },
    });
    const r = await tool.run({ code: 'import os\nprint(os.environ.get("WRAPPED_BY"))' });
    expect(r.stdout).toBe('WRAPPED\ntest\n');
    expect(seen).toHaveLength(1);
    expect(seen[0]!.command).toBe(python!.path);
    expect(seen[0]!.args.slice(0, 2)).toEqual(['-I', '-B']);
    expect(seen[0]!.readOnlyPaths).toEqual(python!.prefixes);
    expect(seen[0]!.writablePaths).toHaveLength(1);
    expect(Object.keys(seen[0]!.env).sort()).toEqual(['HOME', 'LANG', 'LC_ALL', 'PATH', 'PYTHONIOENCODING', 'TMPDIR']);
  });

  it('createPythonNative gives the registry function, which asks through the asker', async () => {
    const asker = yes();
    const fn = createPythonNative({ python: python!, asker });
    expect(fn).toBeDefined();
    expect(await fn!({ code: 'print(6*7)' }, { signal: new AbortController().signal })).toMatchObject({
      exitCode: 0,
      stdout: '42\n',
    });
    expect(asker.asked).toHaveLength(1);
  });
});

describe.skipIf(!python)('registering on a host', () => {
  it('installs the python manifest as trusted-native and registers the function under its revision', async () => {
    const registry = new ToolRegistry(new Store(new MemoryStoreBackend()));
    const asker = yes();
    const r = await registerPythonTool(registry, { python: python!, asker });
    expect(r?.activated).toBe(true);
    const resolved = await registry.resolve('python');
    expect(resolved.revision).toBe(r!.revision);
    expect(resolved.manifest.execution.kind).toBe('trusted-native');
    const fn = registry.getNative(r!.revision);
    expect(await fn!({ code: 'print("hi")' }, { signal: new AbortController().signal })).toMatchObject({
      stdout: 'hi\n',
    });
    expect(asker.asked).toHaveLength(1);
  });

  it('offers nothing without an interpreter', async () => {
    const registry = new ToolRegistry(new Store(new MemoryStoreBackend()));
    const saved = process.env.PATH;
    process.env.PATH = '';
    try {
      expect(await registerPythonTool(registry, { asker: yes() })).toBeUndefined();
    } finally {
      process.env.PATH = saved;
    }
    expect(await registry.list()).toEqual([]);
  });
});
