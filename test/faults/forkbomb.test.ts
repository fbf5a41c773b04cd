// Fault suite: a fork-bombing tool reaches its own process limit while a concurrent tool keeps working; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmod, mkdir, readdir, readlink, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliEnv, jsTool, runCli, startCli, tempDir, writeManifest, killGroup } from './helpers.js';
import { probeSandbox } from '../../node/os-sandbox/probe.js';
import { SANDBOX_UID_BASE, SANDBOX_UID_COUNT } from '../../node/os-sandbox/uid-pool.js';

let tmp: string;
beforeAll(async () => {
  tmp = await tempDir('forkbomb');
  await chmod(tmp, 0o755);
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

// Forks until the kernel refuses, keeps every child alive 10 s (holding the limit), then reports how far it got.
const BOMB =
  'import os, time\nn = 0\nkids = []\ntry:\n  while n < 5000:\n    pid = os.fork()\n    if pid ' +
  '== 0:\n      time.sleep(10); os._exit(0)\n    kids.append(pid); n += 1\nexcept OSError as e:\n ' +
  ' print(n, e.__class__.__name__, flush=True)\nfor k in kids:\n  os.waitpid(k, 0)\n';

async function usersOf(root: string): Promise<number> {
  let n = 0;
  for (const p of (await readdir('/proc').catch(() => [] as string[])).filter((x) => /^\d+$/.test(x))) {
    if ((await readlink(`/proc/${p}/cwd`).catch(() => '')).startsWith(`${root}/`)) n++;
  }
  return n;
}

describe('per-sandbox process limit', () => {
  it('a fork-bombing tool stops at its own RLIMIT_NPROC while a concurrent JavaScript tool and a concurrent forking tool keep working', async () => {
    const probe = await probeSandbox();
    expect(probe.available, `this test needs the OS sandbox (bubblewrap): ${probe.reason ?? ''}`).toBe(true);
    const home = join(tmp, 'home');
    const work = join(tmp, 'work');
    await mkdir(work);
    await chmod(work, 0o1777);
    const env = cliEnv(tmp, { TMPDIR: work });
    const add = await runCli(
      [
        '--home',
        home,
        'tool',
        'add',
        await writeManifest(tmp, jsTool('steady', 'export default async (a) => ({ twice: a.n * 2 });')),
      ],
      env,
      tmp,
    );
    expect(add.code, add.stderr).toBe(0);
    const bombArgs = join(tmp, 'bomb.json');
    await writeFile(bombArgs, JSON.stringify({ code: BOMB }));
    const bomb = startCli(
      [
        '--home',
        home,
        '--allow',
        'python(*)',
        '--json',
        'run',
        'python',
        '--args',
        `@${bombArgs}`,
        '--timeout',
        '60000',
      ],
      env,
      tmp,
    );
    try {
      // Wait until the bomb holds (nearly) its whole limit: its processes work in the python folder.
      const end = Date.now() + 30_000;
      while ((await usersOf(work)) < 100 && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      expect(await usersOf(work)).toBeGreaterThanOrEqual(100);
      const steady = await runCli(['--home', home, '--json', 'run', 'steady', '--args', '{"n":21}'], env, tmp);
      expect(JSON.parse(steady.stdout.trim())).toMatchObject({ ok: true, result: { twice: 42 } });
      const forkArgs = join(tmp, 'fork.json');
      await writeFile(
        forkArgs,
        JSON.stringify({
          code: 'import os\npids = [os.fork() for _ in range(1)]\nif pids[0] == 0: os._exit(0)\nos.waitpid(pids[0], 0)\nprint("forked ok", os.getuid())',
        }),
      );
      const forked = await runCli(
        ['--home', home, '--allow', 'python(*)', '--json', 'run', 'python', '--args', `@${forkArgs}`],
        env,
        tmp,
      );
      expect(forked.stdout).toContain('forked ok');
      if (process.geteuid?.() === 0) {
        // A root CLI runs each sandbox as its own leased uid (node/os-sandbox/uid-pool.ts), never the shared nobody.
        const uid = Number(/forked ok (\d+)/.exec(forked.stdout)?.[1]);
        expect(uid).toBeGreaterThanOrEqual(SANDBOX_UID_BASE);
        expect(uid).toBeLessThan(SANDBOX_UID_BASE + SANDBOX_UID_COUNT);
      }
      const done = await bomb.done;
      expect(done.code, bomb.err()).toBe(0);
      const out = JSON.parse(bomb.out().trim()) as { result: { stdout: string } };
      expect(out.result.stdout).toMatch(/^\d+ BlockingIOError/);
      expect(Number(out.result.stdout.split(' ')[0])).toBeLessThan(128);
    } finally {
      killGroup(bomb.pid);
    }
  }, 120_000);
});
