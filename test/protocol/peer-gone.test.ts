// tycli serve over stdio when its client goes away: runs in flight are cancelled and nothing is left running; test
// side.
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { BIN, cleanEnv, doubler, tempHome, until } from './helpers.js';

const line = (id: number | string, method: string, params: unknown) =>
  JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n';
const init = line(1, 'initialize', { protocolVersion: 'tysandbox/1', client: { name: 'gone', version: '1' } });

/** Pids of live processes whose command line mentions `text` (the test's own home path). */
function processesMentioning(text: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8');
      const state = /^State:\s+(\S)/m.exec(readFileSync(`/proc/${d}/status`, 'utf8'))?.[1];
      if (cmd.includes(text) && state !== 'Z') out.push(Number(d));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

/** Run a client program (node -e) under setsid; resolve with its stdout once it exits. */
function client(home: string, program: string): Promise<string> {
  const c = spawn('setsid', [process.execPath, '-e', program], {
    env: { ...cleanEnv(home), BIN, HOME_DIR: home, EXEC: process.execPath },
    cwd: home,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  c.stdout.on('data', (d) => (out += String(d)));
  return new Promise((r) => c.once('exit', () => r(out)));
}

/** Sleeps 60 s and writes nothing meanwhile (a log line would fail on the dead pipe and end serve anyway). */
const quietSleeper = {
  name: 'slow',
  description: 'sleeps a minute',
  parameters: { type: 'object', properties: {}, additionalProperties: false },
  execution: {
    kind: 'sandboxed-code',
    runtime: 'javascript',
    source: 'export default async () => { await new Promise((r) => setTimeout(r, 60_000)); return 1; };',
  },
};

describe('tycli serve: a client that goes away', () => {
  /**
   * A client that starts serve with `spawnExpr` (its parent, or through a wrapper), adds a silent 60 s tool, starts a
   * run and dies by SIGKILL once the run has started; then serve and its sandbox must be gone (generous bound: the run
   * would otherwise hold them for 60 s).
   */
  async function killedMidRun(tag: string, spawnExpr: string): Promise<void> {
    const home = await tempHome(tag);
    const program = `
      const { spawn } = require('node:child_process');
      const s = ${spawnExpr};
      let buf = '';
      s.stdout.on('data', (d) => {
        buf += d;
        if (buf.includes('"method":"$/progress"')) { process.stdout.write(String(s.pid) + '\\n', () => process.kill(process.pid, 'SIGKILL')); }
      });
      s.stdin.write(${JSON.stringify(init + line('add', 'tool/add', { manifest: quietSleeper }) + line('run', 'tool/run', { ref: 'slow', arguments: {}, timeoutMs: 120_000 }))});
    `;
    const out = await client(home, program);
    expect(Number(out.trim()), `client output: ${out}`).toBeGreaterThan(0);
    await until(() => processesMentioning(home).length === 0, `serve (${tag}) and its sandbox to be gone`, 15_000);
    expect(processesMentioning(home)).toEqual([]);
  }

  it('killed mid-run (kill -9): serve cancels the run, destroys its sandbox and exits; no process is left', async () => {
    await killedMidRun(
      'peer-gone',
      "spawn(process.env.EXEC, [process.env.BIN, '--home', process.env.HOME_DIR, 'serve'], { stdio: ['pipe', 'pipe', 'ignore'] })",
    );
  });

  it('killed mid-run behind a wrapper that passes its pipes through (sh -c, as npx and launchers do): serve still notices and exits', async () => {
    // `; true` keeps sh alive as serve's parent (no exec), so the parent check alone would not see the client go
    await killedMidRun(
      'peer-gone-sh',
      `spawn('/bin/sh', ['-c', '"$0" "$1" --home "$2" serve; true', process.env.EXEC, process.env.BIN, process.env.HOME_DIR], { stdio: ['pipe', 'pipe', 'ignore'] })`,
    );
  });

  it('a client that writes its requests and closes its end still gets every answer (serve < requests)', async () => {
    const home = await tempHome('peer-eof');
    const program = `
      const { spawn } = require('node:child_process');
      const s = spawn(process.env.EXEC, [process.env.BIN, '--home', process.env.HOME_DIR, 'serve'], { stdio: ['pipe', 'pipe', 'ignore'] });
      let buf = '';
      s.stdout.on('data', (d) => (buf += d));
      s.once('exit', (code) => process.stdout.write(JSON.stringify({ code, buf })));
      s.stdin.end(${JSON.stringify(init + line('add', 'tool/add', { manifest: doubler('later') }) + line('run', 'tool/run', { ref: 'later', arguments: { x: 21, wait: 1500 } }))});
    `;
    const { code, buf } = JSON.parse(await client(home, program)) as { code: number; buf: string };
    expect(code).toBe(0);
    const answers = buf
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id?: unknown; result?: unknown });
    expect(answers.find((a) => a.id === 'run')?.result).toMatchObject({ result: 42 });
  });
});
