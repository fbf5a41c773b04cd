// Shared helpers of the registration-protocol tests: temp homes, manifests, `tycli serve` over stdio and HTTP; test
// side.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { connectHttp, connectStdio, type ClientOptions, type ProtocolClient } from '../../node/client.js';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const BIN = join(ROOT, 'bin', 'tycli.mjs');

export async function tempHome(tag: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `ty-proto-${tag}-`));
}

/** A clean environment for tycli (no terminal: every spawn goes through setsid). */
export function cleanEnv(home: string): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home };
}

/** A sandboxed JavaScript manifest `name` doubling `x` (the source varies with `k`, so revisions differ). */
export function doubler(name = 'double', k = 2, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    description: `multiplies x by ${k}`,
    parameters: {
      type: 'object',
      properties: { x: { type: 'number' }, wait: { type: 'number' } },
      required: ['x'],
      additionalProperties: false,
    },
    execution: {
      kind: 'sandboxed-code',
      runtime: 'javascript',
      source: `export default async (a) => { console.log('x is', a.x); if (a.wait) await new Promise((r) => setTimeout(r, a.wait)); return a.x * ${k}; };`,
    },
    ...extra,
  };
}

/** `tycli serve` over stdio through the typed client (no controlling terminal). */
export function stdioClient(
  home: string,
  args: string[] = [],
  name = 'tests',
  extra: Partial<ClientOptions> = {},
): Promise<ProtocolClient> {
  return connectStdio(['setsid', process.execPath, BIN, '--home', home, 'serve', ...args], {
    env: cleanEnv(home),
    cwd: home,
    name,
    version: '1.0.0',
    ...extra,
  });
}

export interface HttpServer {
  url: string;
  token: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Start `tycli serve --http 0` and read its URL and token (from the 0600 token file). */
export async function startHttp(home: string, args: string[] = []): Promise<HttpServer> {
  const child = spawn('setsid', [process.execPath, BIN, '--home', home, '--json', 'serve', '--http', '0', ...args], {
    env: cleanEnv(home),
    cwd: home,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d) => (err += String(d)));
  const line = await new Promise<string>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`tycli serve --http did not start: ${err}`)), 30_000);
    child.stdout!.on('data', (d) => {
      out += String(d);
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        res(out.slice(0, nl));
      }
    });
    child.once('exit', (c) => rej(new Error(`tycli serve --http exited ${c}: ${err}`)));
  });
  const info = JSON.parse(line) as { url: string; tokenFile: string };
  const token = (await readFile(info.tokenFile, 'utf8')).trim();
  return {
    url: info.url,
    token,
    child,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

export function httpClient(s: HttpServer, name = 'tests', extra: Partial<ClientOptions> = {}): Promise<ProtocolClient> {
  return connectHttp(s.url, s.token, { name, version: '1.0.0', ...extra });
}

/** Wait until `cond` holds (polled every 50 ms), at most `ms`. */
export async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const t0 = Date.now();
  while (!(await cond())) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The code of a rejected protocol call (`resolved` when it did not reject). */
export async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'resolved';
  } catch (e) {
    return String((e as { code?: unknown }).code ?? e);
  }
}
