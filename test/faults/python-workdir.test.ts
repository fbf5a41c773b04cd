// Fault suite: native Python's working folder is removed after its whole process tree is gone, on every exit path; test
// side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmod, mkdir, readdir, readlink, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliEnv, runCli, tempDir } from './helpers.js';
import { PythonTool, detectPython } from '../../node/python/native-tool.js';

const python = detectPython();
let tmp: string;
beforeAll(async () => {
  tmp = await tempDir('pywork');
  await chmod(tmp, 0o755); // a root CLI runs sandboxes as uid 65534: it must reach the work root
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

// Writes a file, leaves a session-leader child (setsid: outside the process group) writing into the folder, then hangs.
const ESCAPING =
  "import os, time\nopen('a.txt','w').write('x')\nif os.fork() == 0:\n    os.setsid()\n    while True:\n        open('b.txt','a').write('y'); time.sleep(0.05)\ntime.sleep(100)\n";

/** Processes whose working folder is under `root` (Linux /proc). */
async function users(root: string): Promise<number[]> {
  const out: number[] = [];
  for (const p of (await readdir('/proc').catch(() => [] as string[])).filter((n) => /^\d+$/.test(n))) {
    const cwd = await readlink(`/proc/${p}/cwd`).catch(() => '');
    if (cwd.startsWith(`${root}/`)) out.push(Number(p));
  }
  return out;
}

async function workRoot(name: string): Promise<string> {
  const d = join(tmp, name);
  await mkdir(d, { recursive: true });
  await chmod(d, 0o1777);
  return d;
}

describe('native Python working folder (python3 from .ci/system-deps)', () => {
  it("a timeout (the tool's own) leaves neither the folder nor the escaped child", async () => {
    const root = await workRoot('direct');
    const tool = new PythonTool({ python: python!, preapproved: true, timeoutMs: 1500, workRoot: root });
    await expect(tool.run({ code: ESCAPING })).rejects.toMatchObject({ code: 'E_TIMEOUT' });
    expect(await readdir(root)).toEqual([]);
    expect(await users(root)).toEqual([]);
  });

  it('an abort leaves neither the folder nor the escaped child', async () => {
    const root = await workRoot('abort');
    const tool = new PythonTool({ python: python!, preapproved: true, timeoutMs: 30_000, workRoot: root });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 1000);
    await expect(tool.run({ code: ESCAPING }, { signal: ac.signal })).rejects.toMatchObject({ code: 'E_ABORTED' });
    expect(await readdir(root)).toEqual([]);
    expect(await users(root)).toEqual([]);
  });

  it.each(['off', 'auto'])(
    'tycli run python --timeout 1500 (--sandbox %s): the CLI exits right after E_TIMEOUT and leaves nothing behind',
    async (posture) => {
      const root = await workRoot(`cli-${posture}`);
      const args = join(tmp, `args-${posture}.json`);
      await writeFile(args, JSON.stringify({ code: ESCAPING }));
      const r = await runCli(
        [
          '--home',
          join(tmp, `home-${posture}`),
          '--sandbox',
          posture,
          '--allow',
          'python(*)',
          '--json',
          'run',
          'python',
          '--args',
          `@${args}`,
          '--timeout',
          '1500',
        ],
        cliEnv(tmp, { TMPDIR: root }),
        tmp,
      );
      expect(r.stdout).toContain('E_TIMEOUT');
      expect(await readdir(root)).toEqual([]);
      expect(await users(root)).toEqual([]);
    },
  );

  it('a folder left by a host killed with SIGKILL is swept on the next run', async () => {
    const root = await workRoot('swept');
    const stale = join(root, 'ty-python-4194303999-abcdef'); // a pid that cannot be alive
    await mkdir(stale);
    await writeFile(join(stale, 'left.txt'), 'x');
    const tool = new PythonTool({ python: python!, preapproved: true, timeoutMs: 10_000, workRoot: root });
    expect(await tool.run({ code: 'print(1)' })).toMatchObject({ exitCode: 0 });
    expect(await readdir(root)).toEqual([]);
  });
});
