// The bridge's own rules, run against both hosts' upstream transports: the command line's (a child process over stdio)
// and the fetch-based Streamable HTTP one core gives every host; test side.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CreateMessageRequestSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { McpBridge as CoreBridge, type BridgeOptions } from '../../core/mcp/bridge/bridge.js';
import { GuardedLineTransport } from '../../core/mcp/wire/guarded-transport.js';
import { serveSession } from '../../core/mcp/wire/serve-session.js';
import { streamableHttpConnector } from '../../core/mcp/upstream/transport.js';
import type { McpDefinition, McpDefinitionSource } from '../../core/mcp/server-definition.js';
import { McpBridge as NodeBridge } from '../../node/mcp/bridge.js';
import { EVERYTHING, FakeGate, addNodeServer, tempHome } from './helpers.js';

/** A client Transport talking to a GuardedLineTransport in the same process (what a page's MessagePort would carry). */
class LinePair implements Transport {
  onclose?: () => void;
  onerror?: (e: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(m: T) => void;
  readonly server: GuardedLineTransport;
  private buf = '';
  constructor(onDropped: (r: string) => void) {
    this.server = new GuardedLineTransport((text) => {
      this.buf += text;
      let i: number;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        queueMicrotask(() => this.onmessage?.(JSON.parse(line)));
      }
    }, onDropped);
  }
  async start(): Promise<void> {}
  async send(m: JSONRPCMessage): Promise<void> {
    this.server.receive(new TextEncoder().encode(JSON.stringify(m) + '\n'));
  }
  async close(): Promise<void> {
    this.server.end();
    this.onclose?.();
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** A memory source, as a host without a settings folder keeps definitions. */
function memorySource(defs: McpDefinition[]): McpDefinitionSource {
  const m = new Map(defs.map((d) => [d.name, d]));
  return {
    list: async () => [...m.keys()].sort(),
    load: async (n) => m.get(n),
    loadSync: (n) => m.get(n),
    fingerprint: (d) => JSON.stringify([d.url ?? null, d.command ?? null, d.args, d.env]),
  };
}

interface Harness {
  name: string;
  /** A bridge whose server "ev" is server-everything with `allow` as its rule. */
  bridge(opts: Omit<BridgeOptions, 'source' | 'connect'>, allow: string[]): Promise<CoreBridge>;
}

let httpPeer: ChildProcess | undefined;
let httpUrl = '';
const homes: (() => Promise<void>)[] = [];

const harnesses: Harness[] = [
  {
    name: 'command line: a child process over stdio (nodeConnector)',
    async bridge(opts, allow) {
      const t = await tempHome();
      homes.push(t.cleanup);
      await addNodeServer(t.home, 'ev', EVERYTHING, ['stdio'], { allow });
      return new NodeBridge({ ...opts, home: t.home });
    },
  },
  {
    name: 'any host: Streamable HTTP over fetch (core streamableHttpConnector)',
    async bridge(opts, allow) {
      const def: McpDefinition = {
        v: 1,
        name: 'ev',
        url: httpUrl,
        args: [],
        env: { TYMCP_HEADER_1: 'X-Test: 1' },
        allow,
        ask: 'default',
        shared: false,
        folder: '',
      };
      // the page's own fetch: every request is seen here (a browser host passes window.fetch)
      const seen: string[] = [];
      const connect = streamableHttpConnector({
        fetch: (input, init) => {
          seen.push(String(input));
          return fetch(input, init);
        },
      });
      const b = new CoreBridge({ ...opts, source: memorySource([def]), connect });
      (b as unknown as { seen: string[] }).seen = seen;
      return b;
    },
  },
];

beforeAll(async () => {
  const port = await freePort();
  httpPeer = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port) },
    stdio: 'ignore',
    detached: true,
  });
  httpUrl = `http://127.0.0.1:${port}/mcp`;
  for (let i = 0; i < 200; i++) {
    const ok = await fetch(httpUrl, { method: 'GET' }).then(
      () => true,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('server-everything did not listen');
}, 30_000);

afterAll(async () => {
  if (httpPeer?.pid !== undefined) {
    try {
      process.kill(-httpPeer.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  for (const c of homes.splice(0)) await c();
});

describe.each(harnesses)('the bridge over $name', (h) => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  async function start(
    allow: string[],
    gate = new FakeGate(() => false),
  ): Promise<{ client: Client; gate: FakeGate; logs: string[]; dropped: string[]; bridge: CoreBridge }> {
    const logs: string[] = [];
    const dropped: string[] = [];
    const bridge = await h.bridge({ sandbox: 't', gate, log: (l) => logs.push(l) }, allow);
    const pair = new LinePair((r) => dropped.push(r));
    const done = serveSession(bridge, pair.server);
    const client = new Client(
      { name: 'test', version: '1' },
      { capabilities: { sampling: {}, elicitation: {}, roots: {} } },
    );
    await client.connect(pair);
    close = async () => {
      await client.close().catch(() => undefined);
      await done;
      await bridge.close();
    };
    return { client, gate, logs, dropped, bridge };
  }

  it('offers SERVER__TOOL; a call the definition allows passes the gate as preapproved and is audited by it; one no rule allows is asked and refused', async () => {
    const { client, gate, logs, bridge } = await start(['echo']);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('ev__echo');
    expect(names).toContain('ev__get-env');
    const r = await client.callTool({ name: 'ev__echo', arguments: { message: 'both hosts' } });
    expect(JSON.stringify(r.content)).toContain('both hosts');
    const echoReq = gate.requests.find((q) => q.target === 'ev/echo');
    expect(echoReq?.preapproved?.rule).toBe('ev: --allow echo');
    expect(echoReq?.revision).toMatch(/^mcp:ev:[0-9a-z"[\]:,./-]{1,16}:sha256-/);
    await expect(client.callTool({ name: 'ev__get-env', arguments: {} })).rejects.toThrow(/denied ev\/get-env/);
    expect(gate.asked.map((q) => q.target)).toEqual(['ev/get-env']);
    // one log line per request, never the arguments
    const calls = logs.map((l) => JSON.parse(l) as Record<string, string>).filter((l) => l.method === 'tools/call');
    expect(calls.map((l) => [l.name, l.outcome])).toEqual([
      ['echo', 'ok'],
      ['get-env', 'refused:E_CAPABILITY_DENIED'],
    ]);
    expect(logs.join('\n')).not.toContain('both hosts');
    // the fetch-based transport used the fetch it was given (a page's own)
    const seen = (bridge as unknown as { seen?: string[] }).seen;
    if (seen !== undefined) expect(seen.filter((u) => u === httpUrl).length).toBeGreaterThan(2);
  }, 60_000);

  it('an argument the tool does not list is a tool error before anything is asked or sent', async () => {
    const { client, gate } = await start([]);
    const r = await client.callTool({ name: 'ev__echo', arguments: { message: 'x', extra: 'unlisted' } });
    expect(r.isError).toBe(true);
    expect(JSON.stringify(r.content)).toMatch(/extra/);
    expect(gate.requests).toEqual([]);
  }, 60_000);

  it('resource URIs are tymcp://ev/... and read back through the gate to the right server', async () => {
    const { client, gate } = await start(['resources/read']);
    const list = (await client.listResources()).resources;
    expect(list.length).toBeGreaterThan(0);
    expect(list.every((r) => r.uri.startsWith('tymcp://ev/'))).toBe(true);
    const uri = list[0]!.uri;
    const read = await client.readResource({ uri });
    expect(read.contents[0]?.uri).toBe(uri);
    expect(gate.requests.map((q) => [q.kind, q.preapproved?.rule])).toEqual([
      ['mcp-resource', 'ev: --allow resources/read'],
    ]);
    await expect(client.readResource({ uri: 'demo://resource/static/document/x' })).rejects.toThrow(/tymcp/);
  }, 60_000);

  it('progress of a long call reaches the client before its result', async () => {
    const { client } = await start(['trigger-long-running-operation']);
    const seen: number[] = [];
    const r = await client.callTool(
      { name: 'ev__trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } },
      undefined,
      { onprogress: (p) => seen.push(p.progress) },
    );
    expect(r.isError).not.toBe(true);
    expect(seen).toEqual([1, 2, 3]);
  }, 60_000);

  it('the client capabilities never reach the server and its sampling request never reaches the client', async () => {
    const { client } = await start(['trigger-sampling-request']);
    const asked: unknown[] = [];
    client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
      asked.push(req);
      return { model: 'm', role: 'assistant', content: { type: 'text', text: 'leaked' } };
    });
    const r = await client.callTool({ name: 'ev__trigger-sampling-request', arguments: { prompt: 'hi' } }).then(
      (x) => JSON.stringify(x),
      (e: Error) => e.message,
    );
    expect(asked).toEqual([]);
    expect(r).not.toContain('leaked');
  }, 60_000);
});
