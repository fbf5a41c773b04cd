// Elicitation answered by a person: `tycli mcp proxy` in front of an SDK server that asks for input mid-call, answered
// with `tycli answer`; test side.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ROOT, addNodeServer, tempHome } from './helpers.js';

const FIXTURE = join(ROOT, 'test/mcp/peers/elicit-server.mjs');
const ENTRY = join(ROOT, 'test/mcp/cli-entry.ts');
const SECRET = 'SECRET-VALUE-9f3k';
let home: string;
let cleanup: () => Promise<void>;
const children: ChildProcess[] = [];
const clients: Client[] = [];

beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
  await addNodeServer(home, 'asker', FIXTURE, [], { ask: 'none' });
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  for (const p of children.splice(0)) {
    if (p.exitCode !== null || p.signalCode !== null) continue;
    const gone = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    await gone;
  }
  await cleanup();
});

const cli = (...rest: string[]) => ['--import', 'tsx', ENTRY, '--home', home, ...rest];

/** Run one tycli command to its end. */
function run(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, cli(...args), { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    p.stdout!.on('data', (c) => (stdout += String(c)));
    p.stderr!.on('data', (c) => (stderr += String(c)));
    p.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * `tycli --json questions --watch`: the store is live while it runs; resolves each waiting question's JSON as it comes.
 */
async function watcher(): Promise<{ next: () => Promise<Record<string, unknown>> }> {
  const p = spawn(process.execPath, cli('--json', 'questions', '--watch'), {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  children.push(p);
  const waiting: Record<string, unknown>[] = [];
  const wakers: (() => void)[] = [];
  let buf = '';
  p.stdout!.on('data', (c) => {
    buf += String(c);
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = JSON.parse(buf.slice(0, i)) as Record<string, unknown>;
      buf = buf.slice(i + 1);
      if (line.event === 'waiting') waiting.push(line);
      wakers.splice(0).forEach((w) => w());
    }
  });
  // ready once its lock socket is in the store's folder
  const dir = join(home, 'state', 'questions');
  for (let i = 0; i < 400 && !(await readdir(dir).catch(() => [] as string[])).some((n) => n.startsWith('watch-')); i++)
    await new Promise((r) => setTimeout(r, 50));
  return {
    next: async () => {
      while (waiting.length === 0) await new Promise<void>((r) => wakers.push(r));
      return waiting.shift()!;
    },
  };
}

/** An SDK client connected to `tycli mcp proxy asker` (with `flags` before the command). */
async function proxy(...flags: string[]): Promise<Client> {
  const client = new Client({ name: 'sdk-client', version: '1' }, { capabilities: { elicitation: {} } });
  // the client itself would answer an elicitation: it must never be asked
  client.setRequestHandler((await import('@modelcontextprotocol/sdk/types.js')).ElicitRequestSchema, async () => {
    throw new Error('the MCP client was asked');
  });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: cli(...flags, 'mcp', 'proxy', 'asker'),
      cwd: ROOT,
      stderr: 'pipe',
    }),
  );
  clients.push(client);
  return client;
}

const textOf = (r: unknown): string => (r as { content: { text: string }[] }).content[0]?.text ?? '';

async function auditRecords(): Promise<Record<string, unknown>[]> {
  const r = await run('--json', 'audit');
  return (JSON.parse(r.stdout) as { records: Record<string, unknown>[] }).records.filter(
    (x) => x.kind === 'mcp-elicit',
  );
}

describe('elicitation answered by a person through mcp proxy', () => {
  it('with mcp-elicit(asker): the form shows only the named fields, sanitized; tycli answer fills it; a bad answer is refused and the question keeps waiting; nothing secret is logged', async () => {
    const w = await watcher();
    const client = await proxy('--allow', 'mcp-elicit(asker)');
    const call = client.callTool({ name: 'profile', arguments: {} }, undefined, { timeout: 90_000 });
    const q = await w.next();
    const form = q.form as { message: string; fields: { name: string; secret: boolean }[] };
    expect(form.fields.map((f) => f.name)).toEqual(['name', 'age', 'subscribe', 'color', 'api_token']);
    expect(form.fields.find((f) => f.name === 'api_token')?.secret).toBe(true);
    // keywords outside the restricted schema are never kept, so never shown
    expect(JSON.stringify(q)).not.toContain('HIDDEN-');
    const shown = await run('questions');
    expect(shown.stdout).toContain('MCP server asker asks you for input');
    expect(shown.stdout).toContain('Please fill in your profile.\\x1b[2J\\u202eevil');
    expect(shown.stdout).toContain('age (integer, required): Age [≥ 0, ≤ 150]');
    expect(shown.stdout).toContain('--field api_token=');
    expect(shown.stdout).not.toMatch(/[\u001b\u202e]/);
    expect(shown.stdout).not.toContain('HIDDEN-');
    // (d) an answer that does not fit the form: refused with a clear error, the question still waits
    const bad = await run(
      'answer',
      String(q.id),
      'yes',
      '--field',
      'name=Ada',
      '--field',
      'age=old',
      '--field',
      `api_token=${SECRET}`,
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('age: expected a whole number');
    const unknown = await run(
      'answer',
      String(q.id),
      'yes',
      '--field',
      'name=Ada',
      '--field',
      'age=36',
      '--field',
      `api_token=${SECRET}`,
      '--field',
      'extra=1',
    );
    expect(unknown.stderr).toContain('the form has no field "extra"');
    const good = await run(
      'answer',
      String(q.id),
      'yes',
      '--field',
      'name=Ada',
      '--field',
      'age=36',
      '--field',
      `api_token=${SECRET}`,
    );
    expect(good.code).toBe(0);
    const text = textOf(await call);
    expect(text).toBe(
      `action=accept content=${JSON.stringify({ name: 'Ada', age: 36, subscribe: false, color: 'green', api_token: SECRET })} declared={"form":{}}`,
    );

    // declined by the person
    const second = client.callTool({ name: 'profile', arguments: {} }, undefined, { timeout: 90_000 });
    const q2 = await w.next();
    expect((await run('answer', String(q2.id), 'no')).code).toBe(0);
    expect(textOf(await second)).toMatch(/^action=decline content=null/);

    const recs = await auditRecords();
    expect(recs.map((r) => (r.elicit as { action: string }).action)).toEqual(['accept', 'decline']);
    expect(recs[0]).toMatchObject({
      tool: 'asker',
      target: 'asker',
      rule: 'mcp-elicit(asker)',
      channel: 'questions',
      elicit: { fields: ['name', 'age', 'subscribe', 'color', 'api_token'], secret: ['api_token'] },
    });
    // the request log is written in batches: complete once the proxy has stopped
    await client.close();
    const trail =
      JSON.stringify(await run('--json', 'audit')) + (await readFile(join(home, 'state', 'mcp-requests.log'), 'utf8'));
    expect(trail).not.toContain(SECRET);
    expect(trail).not.toContain('Ada');
  }, 120_000);

  it('without a rule the elicitation is refused toward the server, no one is asked, the client never sees it; it is audited', async () => {
    await watcher();
    const client = await proxy();
    const text = textOf(await client.callTool({ name: 'profile', arguments: {} }));
    expect(text).toMatch(/^refused: MCP error -32601: elicitation from asker was refused: no allow rule/);
    expect(text).toContain('mcp-elicit(asker)');
    expect(JSON.parse((await run('--json', 'questions')).stdout).questions).toEqual([]);
    const recs = await auditRecords();
    expect(recs).toHaveLength(1);
    expect(recs[0]).toMatchObject({
      decision: 'deny',
      outcome: 'denied',
      code: 'E_CAPABILITY_DENIED',
      elicit: { action: 'refused', fields: [] },
    });
  }, 60_000);

  it('with the rule but nobody able to answer: declined at once; a schema that is not a flat form is refused; sampling stays refused', async () => {
    const client = await proxy('--allow', 'mcp-elicit(asker)');
    expect(textOf(await client.callTool({ name: 'profile', arguments: {} }))).toMatch(
      /^action=decline content=null declared=\{"form":\{\}\}/,
    );
    const recs = await auditRecords();
    expect(recs[0]).toMatchObject({ decision: 'allow', elicit: { action: 'decline', reason: 'no-channel' } });
    expect(textOf(await client.callTool({ name: 'nested', arguments: {} }))).toMatch(
      /^refused: MCP error -32602: .*field address/,
    );
    expect(textOf(await client.callTool({ name: 'sample', arguments: {} }))).toMatch(
      /^refused: MCP error -32601: the bridge refuses server-to-client requests \(sampling\/createMessage\)/,
    );
  }, 60_000);
});
