// Shared helpers of the end-to-end tests: run a command in its own session and collect its output; test side.
import { expect } from 'vitest';
import { spawn } from 'node:child_process';

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Run `cmd ARGS` with exactly `env`, in `cwd`, in a new session (setsid: no controlling terminal, so nothing can
 * ask the person running the tests). The whole process group is killed after `killAfterMs`. Never throws for a
 * non-zero exit; a signal death reports code 128.
 */
export function runProcess(cmd: string, args: string[], env: Record<string, string>, cwd: string, killAfterMs = 60_000): Promise<Ran> {
  return new Promise((res, rej) => {
    const child = spawn(cmd, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
    }, killAfterMs);
    child.on('error', rej);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      res({ code: code ?? (signal ? 128 : -1), stdout, stderr });
    });
  });
}

/** The one JSON line printed with --json (fails the test when there is not exactly one). */
export function oneLine(r: Ran): Record<string, unknown> {
  const lines = r.stdout.split('\n').filter(Boolean);
  expect(lines, `stdout: ${r.stdout} stderr: ${r.stderr}`).toHaveLength(1);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}
