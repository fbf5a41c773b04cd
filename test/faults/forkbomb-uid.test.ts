// Fault suite: without a user namespace (no bubblewrap), RLIMIT_NPROC is per uid, so only distinct leased uids keep a
// fork bomb from blocking a concurrent tool; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UidPool, SANDBOX_UID_BASE } from '../../node/os-sandbox/uid-pool.js';
import { killGroup } from './helpers.js';

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => ok(p)) as string;
const PRLIMIT = ['/usr/bin/prlimit', '/bin/prlimit'].find((p) => ok(p)) as string;
const PYTHON = ['/usr/bin/python3', '/bin/python3'].find((p) => ok(p)) as string;
function ok(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

const NPROC = 16;
// Forks until the kernel refuses, keeps every child alive (holding the limit) until stdin closes.
const BOMB =
  'import os, sys\nn = 0\ntry:\n  while n < 1000:\n    pid = os.fork()\n    if pid == 0:\n    ' +
  '  sys.stdin.read(); os._exit(0)\n    n += 1\nexcept OSError as e:\n  print(n, e.__class__.__name__, ' +
  'flush=True)\nsys.stdin.read()\n';
const FORK_ONCE =
  'import os\ntry:\n  pid = os.fork()\nexcept OSError as e:\n  print("fork failed", e.__class__.__name__); raise SystemExit(0)\nif pid == 0: os._exit(0)\nos.waitpid(pid, 0)\nprint("forked ok")\n';

/**
 * The no-namespace sandbox prefix of a root CLI: setpriv to the uid, then prlimit, then the runtime (as
 * bwrap.ts/limits.ts build it, minus bwrap).
 */
function runAs(uid: number, code: string): ChildProcess & { out: () => string } {
  const c = spawn(
    SETPRIV,
    [
      `--reuid=${uid}`,
      `--regid=${uid}`,
      '--clear-groups',
      '--inh-caps=-all',
      '--',
      PRLIMIT,
      `--nproc=${NPROC}:${NPROC}`,
      '--',
      PYTHON,
      '-I',
      '-c',
      code,
    ],
    { cwd: '/', env: {}, detached: true, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let out = '';
  c.stdout!.on('data', (d) => (out += String(d)));
  return Object.assign(c, { out: () => out });
}
const exited = (c: ChildProcess) => new Promise<void>((r) => (c.exitCode !== null ? r() : c.once('close', () => r())));
async function until(cond: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
}

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'ty-faults-uid-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('per-sandbox uid: a process limit that binds per sandbox without a user namespace', () => {
  it.each([
    [
      'one shared uid for all sandboxes (what a root CLI did: uid 65534 for every sandbox): the concurrent tool cannot fork',
      true,
    ],
    [
      'a distinct leased uid per sandbox (UidPool): the concurrent tool forks while the bomb holds its whole limit',
      false,
    ],
  ])(
    '%s',
    async (_name, shared) => {
      expect(process.geteuid?.(), 'this test switches uids: it needs root').toBe(0);
      expect(SETPRIV && PRLIMIT && PYTHON, 'needs setpriv, prlimit and python3').toBeTruthy();
      const pool = new UidPool({ dir: join(tmp, shared ? 'shared' : 'distinct') });
      const a = pool.acquire();
      const b = shared ? a : pool.acquire();
      expect(a.uid).toBeGreaterThanOrEqual(SANDBOX_UID_BASE);
      const bomb = runAs(a.uid, BOMB);
      try {
        await until(() => bomb.out().includes('\n'), 30_000);
        const [held, err] = bomb.out().trim().split(' ');
        expect(err).toBe('BlockingIOError');
        expect(Number(held)).toBeGreaterThanOrEqual(NPROC - 2); // the bomb holds (nearly) its whole limit now
        const other = runAs(b.uid, FORK_ONCE);
        other.stdin!.end();
        await exited(other);
        if (shared) expect(other.out()).toContain('fork failed BlockingIOError');
        else expect(other.out()).toContain('forked ok');
      } finally {
        bomb.stdin!.end();
        await Promise.race([exited(bomb), new Promise((r) => setTimeout(r, 5000))]);
        killGroup(bomb.pid);
        a.release();
        b.release();
      }
    },
    60_000,
  );
});
