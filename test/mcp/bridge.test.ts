// The MCP bridge against real peers (server-everything over stdio, a raw JSON-RPC fixture server); test side.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  EVERYTHING,
  FIXTURE,
  FakeGate,
  addNodeServer,
  connect,
  groupAlive,
  tempHome,
  toolError,
  type Connected,
  mcpRefusal,
} from './helpers.js';
import { buildDefinition, saveDefinition, removeDefinition } from '../../node/mcp/definitions.js';

let home: string;
let cleanup: () => Promise<void>;
let conn: Connected | undefined;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
});
afterEach(async () => {
  await conn?.close();
  conn = undefined;
  await cleanup();
});

function text(r: unknown): string {
  const c = (r as { content: { type: string; text: string }[] }).content[0];
  return c?.text ?? '';
}
const codeOf = mcpRefusal;

describe('bridge with server-everything over stdio', () => {
  it('the server receives exactly the snapshot plus --env, and empty client capabilities', async () => {
    await addNodeServer(home, 'everything', EVERYTHING, ['stdio'], {
      env: { MY_TOKEN: 'tok-123' },
      allow: ['get-env'],
    });
    conn = await connect({ home, sandbox: 't' });
    const tools = (await conn.client.listTools()).tools.map((t) => t.name);
    expect(tools).toContain('everything__echo');
    expect(tools).toContain('everything__get-env');
    // the client declared sampling/elicitation/roots; server-everything offers these tools only to clients that declare
    // them
    expect(tools.some((n) => n.includes('trigger-sampling-request'))).toBe(false);
    expect(tools.some((n) => n.includes('elicitation'))).toBe(false);
    expect(tools.some((n) => n.includes('get-roots-list'))).toBe(false);
    const env = JSON.parse(text(await conn.client.callTool({ name: 'everything__get-env', arguments: {} }))) as Record<
      string,
      string
    >;
    const allowed = new Set([
      'PATH',
      'HOME',
      'USER',
      'LOGNAME',
      'LANG',
      'LANGUAGE',
      'TMPDIR',
      'SSH_AUTH_SOCK',
      'DISPLAY',
      'WAYLAND_DISPLAY',
      'DBUS_SESSION_BUS_ADDRESS',
      'MY_TOKEN',
    ]);
    for (const k of Object.keys(env)) expect(allowed.has(k) || /^LC_/.test(k), `unexpected ${k}`).toBe(true);
    expect(env.MY_TOKEN).toBe('tok-123');
    expect(env.PATH).toBe(process.env.PATH);
    expect(env.NODE_EXTRA_CA_CERTS).toBeUndefined();
    // the log holds names, never arguments or answers
    expect(conn.logs.join('\n')).not.toContain('tok-123');
    expect(conn.logs.some((l) => l.includes('"method":"tools/call"') && l.includes('get-env'))).toBe(true);
  });

  it('a call no rule allows goes to the gate with the server hints, and a refusal is an error with a stable code', async () => {
    await addNodeServer(home, 'everything', EVERYTHING, ['stdio']);
    const gate = new FakeGate(() => false);
    conn = await connect({ home, sandbox: 't', gate });
    const r = await codeOf(conn.client.callTool({ name: 'everything__get-env', arguments: {} }));
    expect(r.stable).toBe('E_CAPABILITY_DENIED');
    expect(gate.requests).toHaveLength(1);
    expect(gate.requests[0]).toMatchObject({
      kind: 'mcp',
      target: 'everything/get-env',
      principal: 'mcp:t',
      hints: { readOnlyHint: true, destructiveHint: false },
    });
    gate.decide = () => true;
    const ok = await conn.client.callTool({ name: 'everything__echo', arguments: { message: 'hi' } });
    expect(text(ok)).toContain('hi');
    expect(gate.requests).toHaveLength(2);
  });

  it('without a rule and without anyone to ask, a call is refused (E_APPROVAL_REQUIRED)', async () => {
    await addNodeServer(home, 'everything', EVERYTHING, ['stdio']);
    conn = await connect({ home, sandbox: 't' });
    expect((await codeOf(conn.client.callTool({ name: 'everything__echo', arguments: { message: 'x' } }))).stable).toBe(
      'E_APPROVAL_REQUIRED',
    );
  });

  it('unlisted and missing arguments are tool execution errors (isError, E_INVALID_ARGS) before the gate is asked', async () => {
    await addNodeServer(home, 'everything', EVERYTHING, ['stdio']);
    const gate = new FakeGate(() => true);
    conn = await connect({ home, sandbox: 't', gate });
    const a = await toolError(
      conn.client.callTool({ name: 'everything__echo', arguments: { message: 'x', bogusProp: true } }),
    );
    expect(a.code).toBe('E_INVALID_ARGS');
    expect(a.text).toContain('bogusProp');
    const b = await toolError(conn.client.callTool({ name: 'everything__echo' } as never));
    expect(b.code).toBe('E_INVALID_ARGS');
    expect(b.text).toContain('message');
    expect(gate.requests).toHaveLength(0);
  });

  it('resources/read and prompts/get are gated too; listings pass', async () => {
    await addNodeServer(home, 'everything', EVERYTHING, ['stdio']);
    const gate = new FakeGate(() => false);
    conn = await connect({ home, sandbox: 't', gate });
    const res = (await conn.client.listResources()).resources;
    expect(res.length).toBeGreaterThan(0);
    const prompts = (await conn.client.listPrompts()).prompts;
    expect(prompts.length).toBeGreaterThan(0);
    expect((await codeOf(conn.client.readResource({ uri: res[0]!.uri }))).stable).toBe('E_CAPABILITY_DENIED');
    const simple = prompts.find((p) => !p.arguments?.some((x) => x.required)) ?? prompts[0]!;
    expect((await codeOf(conn.client.getPrompt({ name: simple.name }))).stable).toBe('E_CAPABILITY_DENIED');
    expect(gate.requests.map((r) => r.kind)).toEqual(['mcp-resource', 'mcp-prompt']);
    gate.decide = () => true;
    const read = await conn.client.readResource({ uri: res[0]!.uri });
    expect(read.contents.length).toBeGreaterThan(0);
  });

  it('progress reaches its caller and the server log messages pass, marked with the server name', async () => {
    await addNodeServer(home, 'everything', EVERYTHING, ['stdio'], { ask: 'none' });
    conn = await connect({ home, sandbox: 't' });
    const progress: number[] = [];
    const r = await conn.client.callTool(
      { name: 'everything__trigger-long-running-operation', arguments: { duration: 0.2, steps: 2 } },
      undefined,
      { onprogress: (p) => void progress.push(p.progress) },
    );
    expect(JSON.stringify(r)).toContain('completed');
    expect(progress).toEqual([1, 2]);
    const logs: unknown[] = [];
    conn.client.fallbackNotificationHandler = async (n) => void logs.push(n);
    await conn.client.callTool({ name: 'everything__toggle-simulated-logging', arguments: {} });
    for (let i = 0; i < 100 && logs.length === 0; i++) await new Promise((res) => setTimeout(res, 20));
    expect(logs[0]).toMatchObject({ method: 'notifications/message', params: { logger: 'everything' } });
  });

  it('stopping the session leaves no process of the server group behind', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    conn = await connect({ home, sandbox: 't' });
    const info = JSON.parse(text(await conn.client.callTool({ name: 'fx__received', arguments: {} }))) as {
      pgid: number;
      cwd: string;
    };
    expect(info.cwd).toBe('/');
    expect(groupAlive(info.pgid)).toBe(true);
    await conn.close();
    conn = undefined;
    expect(groupAlive(info.pgid)).toBe(false);
  });
});

describe('server-to-client rules with a raw peer', () => {
  it('ping is answered {}, sampling/elicitation/roots are refused outside, only MCP notifications pass', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    conn = await connect({ home, sandbox: 't' });
    const seen: string[] = [];
    conn.client.fallbackNotificationHandler = async (n) => {
      seen.push(n.method);
    };
    const answers = JSON.parse(text(await conn.client.callTool({ name: 'fx__poke', arguments: {} }))) as {
      id: number;
      result?: unknown;
      error?: { code: number };
    }[];
    expect(answers.map((a) => a.id)).toEqual([90, 91, 92, 93]);
    for (const a of answers.slice(0, 3)) expect(a.error?.code).toBe(-32601);
    expect(answers[3]).toEqual({ jsonrpc: '2.0', id: 93, result: {} });
    await new Promise((r) => setTimeout(r, 100));
    // the client never saw a server request; it saw the list change and the log message, not the vendor notification
    expect(
      conn.transport.raw.some(
        (m) =>
          (m as { method?: string }).method?.startsWith('sampling') ||
          (m as { method?: string }).method === 'roots/list',
      ),
    ).toBe(false);
    expect(
      conn.transport.raw.some((m) => (m as { method?: string }).method === 'notifications/tools/list_changed'),
    ).toBe(true);
    expect(conn.transport.raw.some((m) => (m as { method?: string }).method === 'x-vendor/anything')).toBe(false);
    expect(conn.logs.some((l) => l.includes('x-vendor/anything') && l.includes('dropped'))).toBe(true);
    const info = JSON.parse(text(await conn.client.callTool({ name: 'fx__received', arguments: {} }))) as {
      initCaps: unknown;
    };
    expect(info.initCaps).toEqual({});
  });
});

describe('definitions change under a live session', () => {
  it('re-adding with another environment ends the old session (told it is gone); removing refuses the next call', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    conn = await connect({ home, sandbox: 't' });
    const first = JSON.parse(text(await conn.client.callTool({ name: 'fx__received', arguments: {} }))) as {
      pgid: number;
    };
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none', env: { NEW_TOKEN: 'x' } });
    const gone = await codeOf(conn.client.callTool({ name: 'fx__received', arguments: {} }));
    expect(gone.message).toContain('gone');
    expect(groupAlive(first.pgid)).toBe(false);
    const second = JSON.parse(text(await conn.client.callTool({ name: 'fx__received', arguments: {} }))) as {
      pgid: number;
    };
    expect(second.pgid).not.toBe(first.pgid);
    expect(await removeDefinition(home, 'fx')).toBe(true);
    const removed = await codeOf(conn.client.callTool({ name: 'fx__received', arguments: {} }));
    expect(removed.stable).toBe('E_UNKNOWN_TOOL');
    expect(groupAlive(second.pgid)).toBe(false);
  });

  it('the approval policy is reloaded on every call', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { allow: ['search'] });
    conn = await connect({ home, sandbox: 't' });
    expect(text(await conn.client.callTool({ name: 'fx__search', arguments: { q: 'a' } }))).toBe('found a');
    const def = buildDefinition({
      name: 'fx',
      command: [process.execPath, FIXTURE],
      folder: (await import('./helpers.js')).ROOT,
      processEnv: process.env,
      allow: [],
    });
    await saveDefinition(home, def);
    expect((await codeOf(conn.client.callTool({ name: 'fx__search', arguments: { q: 'a' } }))).stable).toBe(
      'E_APPROVAL_REQUIRED',
    );
  });
});

describe('bridge with server-filesystem over stdio', () => {
  it('hints reach the question and never skip asking; argument checks use the server schema', async () => {
    const { mkdtemp, readFile, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { FILESYSTEM } = await import('./helpers.js');
    const dir = await mkdtemp(join(tmpdir(), 'tymcp-fs-'));
    try {
      await addNodeServer(home, 'fs', FILESYSTEM, [dir]);
      const gate = new FakeGate((r) => r.target === 'fs/write_file');
      conn = await connect({ home, sandbox: 't', gate });
      const names = (await conn.client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('fs__write_file');
      // readOnlyHint does not skip asking: the gate is asked and says no
      expect((await codeOf(conn.client.callTool({ name: 'fs__list_allowed_directories', arguments: {} }))).stable).toBe(
        'E_CAPABILITY_DENIED',
      );
      expect(gate.requests[0]?.hints).toEqual({ readOnlyHint: true, openWorldHint: false });
      const file = join(dir, 'a.txt');
      await conn.client.callTool({ name: 'fs__write_file', arguments: { path: file, content: 'written' } });
      expect(gate.requests[1]?.hints).toMatchObject({ destructiveHint: true, readOnlyHint: false });
      expect(await readFile(file, 'utf8')).toBe('written');
      const bad = await toolError(
        conn.client.callTool({ name: 'fs__write_file', arguments: { path: file, content: 'x', mode: '777' } }),
      );
      expect(bad.code).toBe('E_INVALID_ARGS');
      expect(bad.text).toContain('mode');
      const missing = await toolError(conn.client.callTool({ name: 'fs__write_file', arguments: { path: file } }));
      expect(missing.code).toBe('E_INVALID_ARGS');
      expect(gate.requests).toHaveLength(2);
      expect(await readFile(file, 'utf8')).toBe('written');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('refusals count toward the pause', () => {
  it("after maxRefusals of the bridge's own refusals the tool is paused, even for calls its rules allow", async () => {
    const { PauseTracker } = await import('../../core/policy/pause.js');
    const { Store } = await import('../../core/store/contract.js');
    const { MemoryStoreBackend } = await import('../../core/store/memory.js');
    const pause = new PauseTracker(new Store(new MemoryStoreBackend()), { maxRefusals: 3, windowMs: 60_000 });
    await addNodeServer(home, 'fx', FIXTURE, [], { allow: ['search'] });
    conn = await connect({ home, sandbox: 't', pause });
    for (let i = 0; i < 3; i++)
      expect((await toolError(conn.client.callTool({ name: 'fx__search', arguments: { q: 'x', bad: i } }))).code).toBe(
        'E_INVALID_ARGS',
      );
    const paused = await codeOf(conn.client.callTool({ name: 'fx__search', arguments: { q: 'x' } }));
    expect(paused.stable).toBe('E_PAUSED');
    // named as the setting a person acts on, never as a command line (the client's user is not at tycli's)
    expect(paused.message).toContain('a person can resume fx__search');
    expect(paused.message).not.toMatch(/tycli |--allow/);
    // another tool of the same server is not paused
    expect((await codeOf(conn.client.callTool({ name: 'fx__received', arguments: {} }))).stable).toBe(
      'E_APPROVAL_REQUIRED',
    );
    await pause.resume('fx__search');
    expect(text(await conn.client.callTool({ name: 'fx__search', arguments: { q: 'y' } }))).toBe('found y');
  });
});

describe('a server that cannot start', () => {
  it('is refused with E_MCP naming no host path, and holds no place', async () => {
    await saveDefinition(
      home,
      buildDefinition({
        name: 'nope',
        command: ['/nonexistent/tymcp-server'],
        folder: '/',
        processEnv: { PATH: '/usr/bin' },
        ask: 'none',
      }),
    );
    conn = await connect({ home, sandbox: 't' });
    expect((await conn.client.listTools()).tools.filter((t) => t.name.startsWith('nope__'))).toEqual([]);
    const r = await codeOf(conn.client.callTool({ name: 'nope__x', arguments: {} }));
    expect(r.stable).toBe('E_MCP');
    expect(r.message).not.toContain('/nonexistent');
    expect(conn.bridge.pool.size).toBe(0);
  });
});
