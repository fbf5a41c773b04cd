// Tests for the Node hook runner (real /bin/sh commands) and the gate driving it; trusted side.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeHookRunner } from './hooks.js';
import { PermissionGate, StoreDecisions, type HookSpec } from '../../core/policy/gate.js';
import { compilePolicy } from '../../core/policy/permissions.js';
import { StoreAuditLog } from '../../core/audit/trail.js';
import { PauseTracker } from '../../core/policy/pause.js';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tycli-hooks-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const hook = (command: string, timeoutMs = 5000, event: HookSpec['event'] = 'preToolUse'): HookSpec => ({
  event,
  matcher: '*',
  command,
  timeoutMs,
  scope: 'user',
  index: 0,
});

/** Running (a zombie, killed but not yet reaped by init, counts as gone). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

/** Wait (bounded) for a killed process to be reaped. */
async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

describe('NodeHookRunner', () => {
  it('passes the payload on stdin and reports exit 0 with stdout', async () => {
    const r = await new NodeHookRunner({ cwd: dir }).run(hook('cat; echo " $TYCLI_HOOK_EVENT"'), '{"a":1}');
    expect(r).toMatchObject({ exitCode: 0, stdout: '{"a":1} preToolUse\n', timedOut: false });
  });

  it('reports exit 2 with stderr, and other codes as they are', async () => {
    const runner = new NodeHookRunner({ cwd: dir });
    expect(await runner.run(hook('echo "no deploys on friday" >&2; exit 2'), '{}')).toMatchObject({
      exitCode: 2,
      stderr: 'no deploys on friday\n',
    });
    expect(await runner.run(hook('exit 7'), '{}')).toMatchObject({ exitCode: 7 });
  });

  it('a hook that ignores stdin is fine', async () => {
    const big = 'x'.repeat(512 * 1024);
    expect(await new NodeHookRunner({ cwd: dir }).run(hook('exit 0'), big)).toMatchObject({ exitCode: 0 });
  });

  it('kills the hook and its whole process group on timeout', async () => {
    const pidFile = join(dir, 'pid');
    const r = await new NodeHookRunner({ cwd: dir }).run(hook(`sleep 30 & echo $! > ${pidFile}; wait`, 300), '{}');
    expect(r.timedOut).toBe(true);
    expect(r.exitCode).toBeNull();
    const pid = Number((await readFile(pidFile, 'utf8')).trim());
    expect(await gone(pid)).toBe(true);
  });

  it('leaves nothing running after a hook that exits with a background child', async () => {
    const pidFile = join(dir, 'pid');
    const r = await new NodeHookRunner({ cwd: dir }).run(
      hook(`sleep 30 >/dev/null 2>&1 & echo $! > ${pidFile}; exit 0`),
      '{}',
    );
    expect(r.exitCode).toBe(0);
    const pid = Number((await readFile(pidFile, 'utf8')).trim());
    expect(await gone(pid)).toBe(true);
  });

  it('caps captured output', async () => {
    const r = await new NodeHookRunner({ cwd: dir, maxOutputBytes: 1000 }).run(
      hook('head -c 100000 /dev/zero | tr "\\0" a'),
      '{}',
    );
    expect(r.stdout.length).toBe(1000);
  });

  it('a shell that cannot start is exitCode null with an error, never a throw', async () => {
    const r = await new NodeHookRunner({ cwd: dir, shell: join(dir, 'no-such-shell') }).run(hook('true'), '{}');
    expect(r.exitCode).toBeNull();
    expect(r.error).toBeTruthy();
  });
});

describe('gate + real hooks', () => {
  const SECRET = 'sk-live-canary-5531';
  function gateWith(hooks: { preToolUse?: HookSpec[]; postToolUse?: HookSpec[] }) {
    const store = new Store(new MemoryStoreBackend());
    return new PermissionGate({
      config: () => ({ policy: compilePolicy([]), hooks }),
      audit: new StoreAuditLog(store),
      pause: new PauseTracker(store),
      decisions: new StoreDecisions(store),
      hooks: new NodeHookRunner({ cwd: dir }),
      withheld: () => [SECRET],
    });
  }
  const req = {
    principal: 'cli:user',
    kind: 'tool' as const,
    toolName: 'deploy',
    revision: 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy',
  };

  it('the stdin payload never holds a secret value', async () => {
    const file = join(dir, 'stdin.json');
    const gate = gateWith({ preToolUse: [hook(`cat > ${file}`)] });
    await gate.run({ ...req, hookPayload: { env: 'prod', auth: `Bearer ${SECRET}` } }, async () => 'done');
    const stdin = await readFile(file, 'utf8');
    expect(JSON.parse(stdin)).toMatchObject({
      event: 'preToolUse',
      tool: { name: 'deploy' },
      input: { env: 'prod', auth: 'Bearer <withheld>' },
    });
    expect(stdin).not.toContain(SECRET);
  });

  it('exit 2 blocks with the reason; a timeout fails closed; post-hook output becomes feedback', async () => {
    let ran = false;
    await expect(
      gateWith({ preToolUse: [hook('echo "frozen" >&2; exit 2')] }).run(req, async () => (ran = true)),
    ).rejects.toMatchObject({ code: 'E_HOOK_BLOCKED', message: expect.stringContaining('frozen') });
    await expect(
      gateWith({ preToolUse: [hook('sleep 5', 200)] }).run(req, async () => (ran = true)),
    ).rejects.toMatchObject({ code: 'E_HOOK_FAILED' });
    expect(ran).toBe(false);
    const r = await gateWith({
      postToolUse: [hook('echo "checked"; exit 1', 5000, 'postToolUse'), hook('echo ok', 5000, 'postToolUse')],
    }).run(req, async () => 42);
    expect(r.value).toBe(42);
    expect(r.feedback?.[0]).toContain('exited with 1');
  });
});
