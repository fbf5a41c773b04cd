// The bridge's error paths against a raw client and a real fixture server: bad params, a second initialize, an oversize
// server reply, schema regexes, local names with "__", a SIGKILLed serve; test side.
import { spawn } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CallToolResult, Tool } from '@modelcontextprotocol/server';
import { FIXTURE, FakeGate, ROOT, addNodeServer, tempHome } from './helpers.js';
import { McpBridge, type LocalTools } from '../../node/mcp/bridge.js';
import { serveStream } from '../../node/mcp/serve.js';

let home: string;
let cleanup: () => Promise<void>;
let session: RawSession | undefined;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
});
afterEach(async () => {
  await session?.close();
  session = undefined;
  await cleanup();
});

/** A raw client session: write lines, collect every line the bridge writes back. */
class RawSession {
  out: Record<string, unknown>[] = [];
  logs: string[] = [];
  private buf = '';
  readonly toServer = new PassThrough();
  readonly fromServer = new PassThrough();
  readonly bridge: McpBridge;
  readonly done: Promise<void>;
  constructor(
    home: string,
    local?: LocalTools,
    readonly gate = new FakeGate(() => true),
  ) {
    this.bridge = new McpBridge({
      home,
      sandbox: 'errors',
      gate,
      log: (l) => this.logs.push(l),
      ...(local ? { local } : {}),
    });
    this.done = serveStream(this.bridge, this.toServer, this.fromServer, (r) => this.logs.push(`dropped ${r}`));
    this.fromServer.on('data', (c: Buffer) => {
      this.buf += c.toString();
      let i: number;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        this.out.push(JSON.parse(this.buf.slice(0, i)));
        this.buf = this.buf.slice(i + 1);
      }
    });
  }
  send(m: unknown): void {
    this.toServer.write(JSON.stringify(m) + '\n');
  }
  async reply(id: unknown): Promise<Record<string, unknown>> {
    for (;;) {
      const r = this.out.find((m) => m.id === id && !('method' in m));
      if (r) return r;
      await new Promise((res) => setTimeout(res, 10));
    }
  }
  async request(id: number, method: string, params?: unknown): Promise<Record<string, unknown>> {
    this.send(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params });
    return this.reply(id);
  }
  async init(): Promise<void> {
    const r = await this.request(0, 'initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'raw', version: '1' },
    });
    expect(r.result).toBeDefined();
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }
  async close(): Promise<void> {
    this.toServer.end();
    await this.done;
    await this.bridge.close();
  }
}

const errorOf = (r: Record<string, unknown>) => r.error as { code: number; message: string; data?: { code?: string } };
const textOf = (r: Record<string, unknown>) => ((r.result as CallToolResult).content[0] as { text: string }).text;

describe('client request errors (C7)', () => {
  it('bad tools/call params get -32602 with a short message, never -32603 or a zod issue dump', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    session = new RawSession(home);
    await session.init();
    const bad: [unknown, RegExp][] = [
      [
        { name: 'fx__search', arguments: ['q'] },
        /^invalid params for tools\/call: params\.arguments: .*expected record/,
      ],
      [{ name: 42, arguments: {} }, /^invalid params for tools\/call: params\.name: .*expected string/],
      [{ arguments: {} }, /^invalid params for tools\/call: params\.name: /],
      [{ name: 'fx__search', arguments: 'q=1' }, /^invalid params for tools\/call: params\.arguments: /],
    ];
    let id = 10;
    for (const [params, where] of bad) {
      const e = errorOf(await session.request(++id, 'tools/call', params));
      expect(e.code).toBe(-32602);
      expect(e.data?.code).toBe('E_INVALID_ARGS');
      expect(e.message).toMatch(where);
      expect(e.message.length).toBeLessThan(260);
      expect(e.message).not.toMatch(/[[{]\s*"|\n|invalid_type|"path"/);
    }
    // other gated methods too
    const rr = errorOf(await session.request(++id, 'resources/read', { uri: 7 }));
    expect([rr.code, rr.message]).toEqual([
      -32602,
      expect.stringMatching(/^invalid params for resources\/read: params\.uri: /),
    ]);
    const pg = errorOf(await session.request(++id, 'prompts/get', { name: 'fx__p', arguments: [1] }));
    expect(pg.code).toBe(-32602);
    // a good call still works on the same session
    expect(textOf(await session.request(++id, 'tools/call', { name: 'fx__search', arguments: { q: 'ok' } }))).toBe(
      'found ok',
    );
  });

  it('a second initialize on the same session is refused with -32600', async () => {
    session = new RawSession(home);
    await session.init();
    const again = errorOf(
      await session.request(5, 'initialize', {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'raw', version: '1' },
      }),
    );
    expect(again.code).toBe(-32600);
    expect(again.message).toMatch(/already initialized/);
    // the session goes on
    expect((await session.request(6, 'ping')).result).toEqual({});
  });

  it('an oversize server reply fails with E_MCP_OVERSIZE (-32015) naming the 8 MiB cap, and the next call starts a fresh server session', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    session = new RawSession(home);
    await session.init();
    const first = JSON.parse(
      textOf(await session.request(1, 'tools/call', { name: 'fx__received', arguments: {} })),
    ) as { pgid: number };
    const big = errorOf(await session.request(2, 'tools/call', { name: 'fx__big', arguments: { n: 9 * 1024 * 1024 } }));
    expect([big.code, big.data?.code]).toEqual([-32015, 'E_MCP_OVERSIZE']);
    expect(big.message).toMatch(/over 8 MiB/);
    expect(big.message).not.toMatch(/Connection closed/);
    // the next call is answered by a new server process (a stuck session would hit the test timeout)
    const next = JSON.parse(
      textOf(await session.request(3, 'tools/call', { name: 'fx__received', arguments: {} })),
    ) as { pgid: number };
    expect(next.pgid).not.toBe(first.pgid);
    expect(textOf(await session.request(4, 'tools/call', { name: 'fx__search', arguments: { q: 'after' } }))).toBe(
      'found after',
    );
  }, 20_000);
});

describe('server schemas with regexes (S2)', () => {
  it('a catastrophic pattern is checked in linear time; a mismatch is a tool error; tools whose patterns need backtracking are hidden and refused with -32602', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none', env: { FX_SCHEMAS: '1' } });
    session = new RawSession(home);
    await session.init();
    const names = ((await session.request(1, 'tools/list')).result as { tools: Tool[] }).tools.map((t) => t.name);
    expect(names).toContain('fx__redos');
    expect(names).toContain('fx__search');
    expect(names).not.toContain('fx__backref');
    expect(names).not.toContain('fx__lookout');
    const hidden = session.logs.filter((l) => l.includes('hidden:unsupported-schema'));
    expect(hidden.some((l) => l.includes('"name":"backref"') && l.includes('backreference'))).toBe(true);
    expect(hidden.some((l) => l.includes('"name":"lookout"'))).toBe(true);
    // 10 000 characters against (a+)+$: a backtracking engine would not finish within the test timeout
    const evil = (
      await session.request(2, 'tools/call', { name: 'fx__redos', arguments: { s: 'a'.repeat(10_000) + '!' } })
    ).result as { isError?: boolean; content: { text: string }[] };
    expect(evil.isError).toBe(true);
    expect(evil.content[0]?.text).toMatch(/pattern/);
    expect(textOf(await session.request(3, 'tools/call', { name: 'fx__redos', arguments: { s: 'aaaa' } }))).toBe(
      'got 4',
    );
    const refused = errorOf(await session.request(4, 'tools/call', { name: 'fx__backref', arguments: { s: 'aa' } }));
    expect(refused.code).toBe(-32602);
    expect(refused.message).toMatch(/not offered.*backreference/);
  }, 20_000);
});

describe('server tool names and descriptions', () => {
  it('a tool whose name carries control characters is not offered; descriptions pass on with hidden characters made visible', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none', env: { FX_NAMES: '1' } });
    session = new RawSession(home);
    await session.init();
    const tools = ((await session.request(1, 'tools/list')).result as { tools: Tool[] }).tools;
    const names = tools.map((t) => t.name);
    expect(names).toContain('fx__fine');
    expect(names.some((n) => n.startsWith('fx__esc'))).toBe(false);
    const fine = tools.find((t) => t.name === 'fx__fine')!;
    expect(fine.description).toBe('desc \\x1b[2J with \\u202e bidi\nsecond line');
    expect(session.logs.some((l) => l.includes('hidden:unsupported-schema') && l.includes('its name is not'))).toBe(
      true,
    );
  }, 20_000);
});

describe('local tool names with the server separator (C6)', () => {
  it('a registered tool named SERVER__TOOL is never offered or called; the bridged server keeps its name', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none' });
    const called: string[] = [];
    const local: LocalTools = {
      async list() {
        return [
          { name: 'fx__search', inputSchema: { type: 'object' } },
          { name: 'loc__x', inputSchema: { type: 'object' } },
          { name: 'plain', inputSchema: { type: 'object' } },
        ] as Tool[];
      },
      async call(name) {
        called.push(name);
        return { content: [{ type: 'text', text: `local ${name}` }] };
      },
    };
    session = new RawSession(home, local);
    await session.init();
    const names = ((await session.request(1, 'tools/list')).result as { tools: Tool[] }).tools.map((t) => t.name);
    expect(names.filter((n) => n === 'fx__search')).toHaveLength(1); // the bridged one only
    expect(names).not.toContain('loc__x');
    expect(names).toContain('plain');
    expect(session.logs.filter((l) => l.includes('hidden:name-has-separator')).length).toBe(2);
    expect(textOf(await session.request(2, 'tools/call', { name: 'fx__search', arguments: { q: 's' } }))).toBe(
      'found s',
    );
    const e = errorOf(await session.request(3, 'tools/call', { name: 'loc__x', arguments: {} }));
    expect(e.code).toBe(-32602);
    expect(e.data?.code).toBe('E_UNKNOWN_TOOL');
    expect(e.message).toMatch(/not offered over MCP/);
    expect(textOf(await session.request(4, 'tools/call', { name: 'plain', arguments: {} }))).toBe('local plain');
    expect(called).toEqual(['plain']);
  });
});

describe('approval questions show what is approved', () => {
  it('tools/call carries its checked arguments as the preview; a call with none carries none', async () => {
    await addNodeServer(home, 'fx', FIXTURE);
    const gate = new FakeGate(() => true);
    session = new RawSession(home, undefined, gate);
    await session.init();
    expect(textOf(await session.request(1, 'tools/call', { name: 'fx__search', arguments: { q: 'rm -rf /' } }))).toBe(
      'found rm -rf /',
    );
    expect(textOf(await session.request(2, 'tools/call', { name: 'fx__received', arguments: {} }))).toContain(
      'received',
    );
    expect(gate.requests.map((r) => [r.target, r.preview])).toEqual([
      ['fx/search', 'arguments: {"q":"rm -rf /"}'],
      ['fx/received', undefined],
    ]);
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('a SIGKILLed tycli mcp serve (S5)', () => {
  it.skipIf(process.platform !== 'linux')(
    'takes its bridged server with it (setpriv --pdeathsig)',
    async () => {
      // FX_KEEP: the server has a timer, so it would not exit on its own when its stdin closes
      await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none', env: { FX_KEEP: '1' } });
      const serve = spawn(
        process.execPath,
        ['--import', 'tsx', join(ROOT, 'test/mcp/cli-entry.ts'), '--home', home, 'mcp', 'serve'],
        { cwd: ROOT, stdio: ['pipe', 'pipe', 'ignore'] },
      );
      let serverPid: number | undefined;
      try {
        let buf = '';
        const lines: Record<string, unknown>[] = [];
        serve.stdout.on('data', (c: Buffer) => {
          buf += c.toString();
          let i: number;
          while ((i = buf.indexOf('\n')) >= 0) {
            lines.push(JSON.parse(buf.slice(0, i)));
            buf = buf.slice(i + 1);
          }
        });
        const request = async (id: number, method: string, params: unknown) => {
          serve.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
          for (;;) {
            const r = lines.find((m) => m.id === id);
            if (r) return r;
            await new Promise((res) => setTimeout(res, 20));
          }
        };
        await request(0, 'initialize', {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        });
        serve.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
        const info = JSON.parse(textOf(await request(1, 'tools/call', { name: 'fx__received', arguments: {} }))) as {
          pgid: number;
        };
        serverPid = info.pgid;
        expect(alive(serverPid)).toBe(true);
        serve.kill('SIGKILL');
        await new Promise((res) => serve.once('exit', res));
        // the kernel delivers the death signal at once; up to 10 s allowed for the process to be reaped
        for (let i = 0; i < 500 && alive(serverPid); i++) await new Promise((res) => setTimeout(res, 20));
        expect(alive(serverPid)).toBe(false);
      } finally {
        if (serve.exitCode === null && serve.signalCode === null) serve.kill('SIGKILL');
        if (serverPid !== undefined && alive(serverPid)) process.kill(-serverPid, 'SIGKILL');
      }
    },
    30_000,
  );
});
