// Team-gateway test harness: tycli instances (each its own home, as on its own machine) on one PostgreSQL store, the
// CLI against that store, tool manifests; test side.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const BIN = join(ROOT, 'bin', 'tycli.mjs');

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** A tycli home of its own (a "machine"), with user settings. */
export function machine(settings: Record<string, unknown> = {}): string {
  const home = mkdtempSync(join(tmpdir(), 'ty-gw-'));
  mkdirSync(join(home, 'config'), { recursive: true, mode: 0o700 });
  writeFileSync(join(home, 'config', 'settings.json'), JSON.stringify(settings), { mode: 0o600 });
  return home;
}

/** The environment of a tycli process on the shared store (no terminal: it runs in its own session). */
export function env(url: string, extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmpdir(), TYCLI_STORE: url, ...extra };
}

/** Run `tycli --home HOME ARGS` to the end (setsid: no controlling terminal). */
export function tycli(home: string, args: string[], e: Record<string, string>, killAfterMs = 60_000): Promise<Ran> {
  return new Promise((res, rej) => {
    const child = spawn('setsid', [process.execPath, BIN, '--home', home, ...args], {
      env: e,
      cwd: home,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.on('error', rej);
    child.on('close', (code) => {
      clearTimeout(timer);
      res({ code: code ?? 128, stdout, stderr });
    });
  });
}

/** The one JSON line of a `--json` command. @throws when it failed or printed something else */
export function jsonOf(r: Ran): Record<string, unknown> {
  const line = r.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    throw new Error(`not one JSON line (exit ${r.code}): ${r.stdout}\n${r.stderr}`);
  }
}

export interface Instance {
  home: string;
  /** `http://127.0.0.1:PORT/PATH` */
  url: string;
  /** `http://127.0.0.1:PORT` */
  base: string;
  port: number;
  child: ChildProcess;
  stderr(): string;
  /** SIGTERM and wait. */
  stop(): Promise<void>;
  /** SIGKILL the whole process group (the instance and its sandboxes), as a machine dying would. */
  kill9(): Promise<void>;
}

/**
 * Start `tycli [--json] ARGS` (a server printing `{"ok":true,"url":...}` first) in its own process group, with
 * `ulimit -n NOFILE` when given.
 */
export async function startInstance(
  home: string,
  args: string[],
  e: Record<string, string>,
  o: { nofile?: number } = {},
): Promise<Instance> {
  const argv = [BIN, '--home', home, '--json', ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  const script = `${o.nofile ? `ulimit -n ${o.nofile} && ` : ''}exec '${process.execPath}' ${argv}`;
  const child = spawn('/bin/sh', ['-c', script], {
    env: e,
    cwd: home,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d) => (err += String(d)));
  const line = await new Promise<string>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`the instance did not start: ${err}`)), 60_000);
    child.stdout!.on('data', (d) => {
      out += String(d);
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        res(out.slice(0, nl));
      }
    });
    child.once('exit', (c) => {
      clearTimeout(timer);
      rej(new Error(`the instance exited ${c}: ${err}`));
    });
  });
  const info = JSON.parse(line) as { url: string };
  const u = new URL(info.url);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    home,
    url: info.url,
    base: `${u.protocol}//${u.host}`,
    port: Number(u.port),
    child,
    stderr: () => err,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          /* gone */
        }
      }, 15_000);
      await exited;
      clearTimeout(t);
    },
    async kill9() {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
      await exited;
    },
  };
}

/** A sandboxed JavaScript tool `name` whose source is `body` (an async function of `a`, the arguments). */
export function tool(name: string, body: string, params: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    description: `${name} (gateway tests)`,
    parameters: { type: 'object', properties: params, additionalProperties: false },
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source: `export default async (a) => { ${body} };` },
  };
}
