// Every case of /work/shared/cases/mcp-messages.json (and variants of the same kind) against the bridge and a raw peer;
// test side.
import { readFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FIXTURE, FakeGate, addNodeServer, tempHome } from './helpers.js';
import { McpBridge } from '../../node/mcp/bridge.js';
import { serveStream } from '../../node/mcp/serve.js';
import { classify, serverMessageRule } from '../../core/mcp/wire/messages.js';

interface Case {
  message: unknown;
  expect: string;
}
const cases = JSON.parse(readFileSync('/work/shared/cases/mcp-messages.json', 'utf8')) as {
  from_client: Case[];
  from_server: Case[];
};

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
    readonly gate: FakeGate,
  ) {
    this.bridge = new McpBridge({ home, sandbox: 'cases', gate, log: (l) => this.logs.push(l) });
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
    this.toServer.write((typeof m === 'string' ? m : JSON.stringify(m)) + '\n');
  }
  async reply(id: unknown): Promise<Record<string, unknown>> {
    for (let i = 0; i < 500; i++) {
      const r = this.out.find((m) => m.id === id && !('method' in m));
      if (r) return r;
      await new Promise((res) => setTimeout(res, 10));
    }
    throw new Error(`no reply for id ${String(id)}`);
  }
  async call(id: number, name: string, args?: unknown): Promise<Record<string, unknown>> {
    this.send({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: args === undefined ? { name } : { name, arguments: args },
    });
    return this.reply(id);
  }
  /** What reached the fixture server so far. */
  async received(
    id: number,
  ): Promise<{ received: { method: string; hasId: boolean; name?: string }[]; initCaps: unknown }> {
    const r = await this.call(id, 'fx__received', {});
    return JSON.parse((r.result as { content: { text: string }[] }).content[0]!.text);
  }
  async close(): Promise<void> {
    this.toServer.end();
    await this.done;
    await this.bridge.close();
  }
}

let home: string;
let cleanup: () => Promise<void>;
let s: RawSession;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
  // `received` is allowed; `search` and everything else must be asked about
  await addNodeServer(home, 'fx', FIXTURE, [], { allow: ['received'] });
  s = new RawSession(home, new FakeGate(() => true));
  const init = cases.from_client.find((c) => (c.message as { method?: string }).method === 'initialize')!.message;
  s.send(init);
  await s.reply(2);
  s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
});
afterEach(async () => {
  await s.close();
  await cleanup();
});

function errCode(r: Record<string, unknown>): number | undefined {
  return (r.error as { code?: number } | undefined)?.code;
}
/** The stable code of a tool execution error (result.isError), undefined otherwise. */
function toolErrCode(r: Record<string, unknown>): unknown {
  const res = r.result as { isError?: boolean; _meta?: Record<string, unknown> } | undefined;
  return res?.isError === true ? res._meta?.['tysandbox/code'] : undefined;
}

describe('from_client cases', () => {
  it('has every case of the shared file covered below', () => {
    expect(cases.from_client).toHaveLength(8);
    expect(cases.from_server).toHaveLength(6);
  });

  it('batches (with a call inside, empty, or mixed) are refused with -32600 and nothing is forwarded', async () => {
    const variants = [
      cases.from_client[0]!.message,
      cases.from_client[1]!.message,
      [
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'fx__search', arguments: { q: 'x' } } },
      ],
    ];
    for (const v of variants) {
      const before = s.out.length;
      s.send(v);
      const r = await s.reply(null);
      expect(errCode(r)).toBe(-32600);
      s.out.splice(before); // keep replies for the next variant distinct
    }
    const got = await s.received(100);
    expect(got.received.filter((m) => m.method === 'tools/call' && m.name !== 'received')).toEqual([]);
    expect(s.gate.requests.filter((r) => r.target !== 'fx/received')).toHaveLength(0);
  });

  it('a tools/call without an id, or with a null or non-scalar id, is never run nor forwarded', async () => {
    s.send(cases.from_client[2]!.message);
    s.send(cases.from_client[3]!.message);
    s.send({ jsonrpc: '2.0', id: {}, method: 'tools/call', params: { name: 'fx__search', arguments: { q: 'x' } } });
    s.send({ jsonrpc: '2.0', method: 'fx__search', params: { q: 'x' } });
    const r = await s.reply(null);
    expect(errCode(r)).toBe(-32600);
    const got = await s.received(101);
    expect(got.received.filter((m) => m.method === 'tools/call' && m.name !== 'received')).toEqual([]);
    expect(got.received.every((m) => m.method !== 'tools/call' || m.hasId)).toBe(true);
    expect(s.gate.requests.filter((r) => r.target !== 'fx/received')).toHaveLength(0);
    expect(s.logs.some((l) => l.includes('dropped') && l.includes('tools/call'))).toBe(true);
  });

  it('the server receives empty client capabilities', async () => {
    const got = await s.received(102);
    expect(got.initCaps).toEqual({});
  });

  // the shared cases predate MCP 2025-11-25 (SEP-1303): argument errors are tool execution errors now (isError,
  // E_INVALID_ARGS, naming the field), still decided before approval and before forwarding
  it('unlisted fields (bogusProp, __proto__) and missing arguments are tool errors naming the field, before approval and before forwarding', async () => {
    const [bogus, missing, proto] = [cases.from_client[5]!, cases.from_client[6]!, cases.from_client[7]!];
    const rewrite = (m: unknown): string => JSON.stringify(m).replace('"name":"search"', '"name":"fx__search"');
    s.send(rewrite(bogus.message));
    const a = await s.reply(3);
    expect(toolErrCode(a)).toBe('E_INVALID_ARGS');
    expect(JSON.stringify(a)).toContain('bogusProp');
    s.send(rewrite(missing.message));
    const b = await s.reply(4);
    expect(toolErrCode(b)).toBe('E_INVALID_ARGS');
    expect(JSON.stringify(b)).toContain('q');
    s.send(rewrite(proto.message));
    const c = await s.reply(5);
    // a __proto__ key anywhere is refused by the message rules as a malformed request, before any schema
    expect(errCode(c)).toBe(-32602);
    expect(JSON.stringify(c)).toContain('__proto__');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(s.gate.requests.filter((r) => r.target !== 'fx/received')).toHaveLength(0);
    const got = await s.received(103);
    expect(got.received.filter((m) => m.name === 'search')).toEqual([]);
  });

  it('a listed call passes only after the gate says yes; unknown methods fail closed', async () => {
    const ok = await s.call(8, 'fx__search', { q: 'x' });
    expect(JSON.stringify(ok.result)).toContain('found x');
    expect(s.gate.asked.map((r) => r.target)).toEqual(['fx/search']);
    s.send({ jsonrpc: '2.0', id: 9, method: 'x-vendor/run', params: {} });
    expect(errCode(await s.reply(9))).toBe(-32601);
  });

  it('a message over the cap is refused and the session goes on', async () => {
    s.send('{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"pad":"' + 'a'.repeat(8 * 1024 * 1024) + '"}}');
    const r = await s.reply(null);
    expect(errCode(r)).toBe(-32600);
    const got = await s.received(104);
    expect(got.received.some((m) => m.method === 'tools/list')).toBe(true);
  });
});

describe('from_server cases', () => {
  it('each case gets the expected rule (answered error, ping {}, notification passed or dropped)', () => {
    for (const c of cases.from_server) {
      const m = c.message as { id?: number; method: string };
      const rule = serverMessageRule(classify(c.message));
      if (m.method === 'ping')
        expect(rule).toEqual({ action: 'answer', reply: { jsonrpc: '2.0', id: 93, result: {} } });
      else if (m.id !== undefined) expect(rule.action === 'answer' && 'error' in rule.reply).toBe(true);
      else if (m.method.startsWith('notifications/')) expect(rule.action).toBe('pass');
      else expect(rule.action).toBe('drop');
    }
  });

  it('end to end: the peer gets its answers and the client sees only MCP notifications', async () => {
    s.gate.decide = () => true;
    const r = await s.call(20, 'fx__poke', {});
    const answers = JSON.parse((r.result as { content: { text: string }[] }).content[0]!.text) as {
      id: number;
      error?: { code: number };
      result?: unknown;
    }[];
    expect(answers.map((a) => [a.id, a.error?.code ?? a.result])).toEqual([
      [90, -32601],
      [91, -32601],
      [92, -32601],
      [93, {}],
    ]);
    await s.received(105);
    const methods = s.out.map((m) => m.method).filter(Boolean);
    expect(methods).toContain('notifications/tools/list_changed');
    expect(methods).not.toContain('x-vendor/anything');
    expect(
      methods.some((m) => ['sampling/createMessage', 'elicitation/create', 'roots/list', 'ping'].includes(m as string)),
    ).toBe(false);
  });
});
