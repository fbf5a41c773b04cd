// Finding 5 as reported, end to end: the built `tycli mcp serve` (stdio and --http) with `mcp add --timeout` in front
// of a server written with the MCP SDK; after a crash, a timeout or a cancel the next call is answered; test side.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { ROOT, groupAlive, tempHome } from './helpers.js';

const TYCLI = join(ROOT, 'bin/tycli.mjs');
const STEPS = join(ROOT, 'test/mcp/peers/steps-server.mjs');
type Step = 'ok' | 'crash' | 'freeze' | 'cancel';

let home: string;
let cleanup: () => Promise<void>;
const ends: (() => Promise<void>)[] = [];
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
  // as a person would: the server's call timeout 1 s, its one tool allowed without a question
  const add = spawnSync(
    process.execPath,
    [TYCLI, '--home', home, 'mcp', 'add', 's', '--allow', 'step', '--timeout', '1000', '--', process.execPath, STEPS],
    { cwd: ROOT, encoding: 'utf8' },
  );
  expect(add.status, add.stderr).toBe(0);
});
afterEach(async () => {
  for (const e of ends.splice(0).reverse()) await e();
  await cleanup();
});

/** A 1.x SDK client connected to `tycli mcp serve` over stdio, or to `tycli mcp serve --http 0` (its announced URL). */
async function open(via: 'stdio' | 'http'): Promise<Client> {
  const client = new Client({ name: `renewal-${via}`, version: '1' }, { capabilities: {} });
  if (via === 'stdio') {
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [TYCLI, '--home', home, 'mcp', 'serve', '--sandbox', 'r'],
        cwd: ROOT,
        stderr: 'pipe',
      }),
    );
    ends.push(() => client.close());
    return client;
  }
  const proc: ChildProcess = spawn(
    process.execPath,
    [TYCLI, '--home', home, '--json', 'mcp', 'serve', '--sandbox', 'r', '--http', '0'],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  ends.push(async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const gone = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await gone;
  });
  let out = '';
  const line = await new Promise<string>((resolve, reject) => {
    proc.stdout!.on('data', (c) => {
      out += String(c);
      const i = out.indexOf('\n');
      if (i >= 0) resolve(out.slice(0, i));
    });
    proc.once('exit', (code) => reject(new Error(`mcp serve --http exited ${code}`)));
  });
  const info = JSON.parse(line) as { url: string; tokenFile: string };
  const token = readFileSync(info.tokenFile, 'utf8').trim();
  await client.connect(
    new StreamableHTTPClientTransport(new URL(info.url), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  ends.push(() => client.close().catch(() => undefined));
  return client;
}

/** Run `steps` in order; every ok must be answered by a live server (its pid), every fault refused with its code. */
async function run(client: Client, steps: Step[]): Promise<number[]> {
  const pids: number[] = [];
  let faultBefore: Step | undefined;
  for (const [i, step] of steps.entries()) {
    const ac = new AbortController();
    const call = client.callTool(
      { name: 's__step', arguments: { do: step === 'cancel' ? 'freeze' : step } },
      undefined,
      {
        signal: ac.signal,
        timeout: 60_000,
      },
    );
    if (step === 'cancel') setTimeout(() => ac.abort('cancelled by the test'), 200);
    const got = await call.then(
      (r) => ({ ok: (r.content as { text: string }[])[0]!.text }),
      (e: unknown) => ({ e }),
    );
    const where = `step ${i + 1} (${steps.slice(0, i + 1).join(', ')})`;
    if (step === 'ok') {
      expect('ok' in got ? got.ok : String((got as { e: unknown }).e), where).toMatch(/^ok \d+$/);
      const pid = Number((got as { ok: string }).ok.slice(3));
      const last = pids.at(-1);
      // a crash or a timeout ended the old server; a cancelled call leaves its session (and server) as it was
      if (last !== undefined && (faultBefore === 'crash' || faultBefore === 'freeze'))
        expect(pid, where).not.toBe(last);
      if (last !== undefined && faultBefore === 'cancel') expect(pid, where).toBe(last);
      pids.push(pid);
    } else if (step !== 'cancel') {
      expect('e' in got, where).toBe(true);
      const e = (got as { e: unknown }).e;
      expect(e, where).toBeInstanceOf(McpError);
      const m = e as McpError;
      expect(m.code, where).not.toBe(-32001);
      expect([m.code, (m.data as { code?: string } | undefined)?.code], where).toEqual(
        step === 'crash' ? [-32012, 'E_MCP_CRASHED'] : [-32011, 'E_MCP_TIMEOUT'],
      );
    } else expect('e' in got, where).toBe(true);
    faultBefore = step === 'ok' ? undefined : step;
  }
  return pids;
}

async function allGone(pids: number[]): Promise<number[]> {
  for (let i = 0; i < 400 && pids.some(groupAlive); i++) await new Promise((r) => setTimeout(r, 25));
  return pids.filter(groupAlive);
}

describe.skipIf(!existsSync(join(ROOT, 'dist/cli/tycli.cjs')))('renewal through the built tycli mcp serve', () => {
  it('stdio: ok, crash, ok, freeze, ok (the reported sequence), then timeouts and crashes back to back: every ok answered, never -32001', async () => {
    const client = await open('stdio');
    const steps: Step[] = ['ok', 'crash', 'ok', 'freeze', 'ok', 'freeze', 'freeze', 'ok', 'crash', 'crash', 'ok'];
    steps.push('freeze', 'crash', 'ok', 'cancel', 'ok');
    const pids = await run(client, steps);
    expect(new Set(pids).size).toBe(6);
    await client.close();
    expect(await allGone(pids)).toEqual([]);
  }, 120_000);

  it('--http: ok, cancel, ok, crash, ok, freeze, ok (the reported cancel, crash, hang): every ok answered, never -32001', async () => {
    const client = await open('http');
    const pids = await run(client, ['ok', 'cancel', 'ok', 'crash', 'ok', 'freeze', 'ok', 'cancel', 'freeze', 'ok']);
    expect(new Set(pids).size).toBe(4);
    // the servers that crashed or hung are gone while mcp serve runs on (the last one still serves)
    expect(await allGone([...new Set(pids)].slice(0, -1))).toEqual([]);
    expect(groupAlive(pids.at(-1)!)).toBe(true);
    await client.close();
  }, 120_000);
});
