// Shared helpers of the end-to-end tests: run a command in its own session and collect its output; test side.
import { afterAll, beforeAll, expect } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** The repository root and its `tycli` entry. */
export const ROOT = resolve(import.meta.dirname, '..', '..');
export const BIN = join(ROOT, 'bin', 'tycli.mjs');

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
export function runProcess(
  cmd: string,
  args: string[],
  env: Record<string, string>,
  cwd: string,
  killAfterMs = 60_000,
): Promise<Ran> {
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

/** A test file's scratch folder (made before its tests, removed after) and `tycli` run there. */
export interface CliScratch {
  /** The folder; valid once the file's tests run. */
  readonly dir: string;
  /** `tycli ARGS` with HOME in the folder, a plain PATH and `env` added, in `cwd` (default the folder). */
  tycli(args: string[], env?: Record<string, string>, cwd?: string): Promise<Ran>;
  /** `tycli --home H tool add FILE`, expected to succeed: its stdout (the revision id). */
  add(home: string, file: string): Promise<string>;
}

/** Registers the beforeAll/afterAll hooks of a scratch folder named `prefix-XXXXXX` under the system temp folder. */
export function cliScratch(prefix: string, killAfterMs = 60_000): CliScratch {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), `${prefix}-`));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  const s: CliScratch = {
    get dir() {
      return dir;
    },
    tycli: (args, env = {}, cwd = dir) =>
      runProcess(
        process.execPath,
        [BIN, ...args],
        { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, ...env },
        cwd,
        killAfterMs,
      ),
    add: async (home, file) => {
      const r = await s.tycli(['--home', home, 'tool', 'add', file]);
      expect(r.code, r.stderr).toBe(0);
      return r.stdout.trim();
    },
  };
  return s;
}
