// Shared helpers of the fault suite: temp homes, tool manifests, the built CLI in a child process; test side.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const BIN = join(ROOT, 'bin', 'tycli.mjs');

export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `ty-faults-${prefix}-`));
}

/** A sandboxed JavaScript tool manifest (any parameters allowed). */
export function jsTool(name: string, source: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    description: `fault-suite tool ${name}`,
    parameters: { type: 'object' },
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
    ...extra,
  };
}

export async function writeManifest(dir: string, m: Record<string, unknown>): Promise<string> {
  const file = join(dir, `${String(m.name)}-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(file, JSON.stringify(m));
  return file;
}

/** The environment tycli children get: PATH and HOME only (plus `extra`). */
export function cliEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...extra };
}

/** Start `node bin/tycli.mjs ARGS` in its own process group; the caller waits or kills. */
export function startCli(
  args: string[],
  env: Record<string, string>,
  cwd: string,
): ChildProcess & {
  out: () => string;
  err: () => string;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
} {
  const child = spawn(process.execPath, [BIN, ...args], {
    env,
    cwd,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  child.stderr!.on('data', (d) => (err += String(d)));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('close', (code, signal) => r({ code, signal })),
  );
  return Object.assign(child, { out: () => out, err: () => err, done });
}

/** Run the CLI to completion. */
export async function runCli(
  args: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const c = startCli(args, env, cwd);
  const { code } = await c.done;
  return { code, stdout: c.out(), stderr: c.err() };
}

/** Kill a process group, ignoring one that is gone. */
export function killGroup(pid: number | undefined, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    /* gone */
  }
}
