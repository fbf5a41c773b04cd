// `mcp serve --http` in the 2026-07-28 era: stateless requests, the standard headers checked against the body, the
// message rules per request, and a 2025 client on the same listener; test side.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyHttp } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { checkStandardHeaders, decodeHeaderValue } from '../../core/mcp/wire/http-headers.js';
import { McpBridge } from '../../node/mcp/bridge.js';
import { serveHttp, type HttpServeHandle } from '../../node/mcp/serve-http.js';
import { EVERYTHING, FakeGate, ROOT, addNodeServer, tempHome } from './helpers.js';

const MODERN = join(ROOT, 'test/mcp/peers/modern-server.mjs');
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
  'io.modelcontextprotocol/clientCapabilities': { sampling: {}, elicitation: {} },
};
let home: string;
let cleanup: () => Promise<void>;
let bridge: McpBridge;
let http: HttpServeHandle;
let gate: FakeGate;
let logs: string[];
let dropped: string[];

beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
  await addNodeServer(home, 'ev', EVERYTHING, ['stdio'], { allow: ['echo'] });
  await addNodeServer(home, 'modern', MODERN, [], { allow: ['echo', 'ask'] });
  gate = new FakeGate(() => false);
  logs = [];
  dropped = [];
  bridge = new McpBridge({ home, sandbox: 'h', gate, log: (l) => logs.push(l) });
  http = await serveHttp(bridge, { port: 0, onDropped: (r) => dropped.push(r) });
});
afterEach(async () => {
  await http.close();
  await bridge.close();
  await cleanup();
});

/** POST one raw message with the standard headers given. */
async function post(
  body: unknown,
  headers: Record<string, string>,
): Promise<{ status: number; json: Record<string, unknown> | undefined }> {
  const res = await fetch(http.url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${http.token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const data = text.split('\n').find((l) => l.startsWith('data: '));
  const raw = data !== undefined ? data.slice(6) : text;
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { status: res.status, json };
}
const call = (name: string, args: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id: 7,
  method: 'tools/call',
  params: { name, arguments: args, _meta: ENVELOPE },
});
const std = (method: string, name?: string) => ({
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': method,
  ...(name !== undefined ? { 'mcp-name': name } : {}),
});

describe('mcp serve --http, 2026-07-28', () => {
  it('a 2.x client negotiates 2026-07-28 (no session), calls through the gate, a 2025-era server behind it; a 1.x client on the same listener gets a 2025 session', async () => {
    const client = new Client({ name: 'modern', version: '1' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(http.url), {
        requestInit: { headers: { authorization: `Bearer ${http.token}` } },
      }),
    );
    try {
      expect(client.getProtocolEra()).toBe('modern');
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      expect(
        JSON.stringify((await client.callTool({ name: 'ev__echo', arguments: { message: 'stateless' } })).content),
      ).toContain('stateless');
      expect(
        JSON.stringify((await client.callTool({ name: 'modern__echo', arguments: { text: 'both' } })).content),
      ).toContain('echo both (protocol 2026-07-28)');
      await expect(client.callTool({ name: 'ev__get-env', arguments: {} })).rejects.toThrow(/denied ev\/get-env/);
      expect(gate.asked.map((q) => q.target)).toEqual(['ev/get-env']);
      // no 2025 session was opened for it
      expect(http.sessions).toBe(0);
    } finally {
      await client.close();
    }
    const legacy = new LegacyClient({ name: 'legacy', version: '1' });
    const t = new LegacyHttp(new URL(http.url), {
      requestInit: { headers: { authorization: `Bearer ${http.token}` } },
    });
    await legacy.connect(t);
    try {
      expect(t.sessionId).toBeTruthy();
      expect(
        JSON.stringify((await legacy.callTool({ name: 'ev__echo', arguments: { message: 'stateful' } })).content),
      ).toContain('stateful');
    } finally {
      await legacy.close();
    }
  }, 90_000);

  it('Mcp-Name, Mcp-Method or MCP-Protocol-Version that disagree with the body (or are missing) get HTTP 400 / -32020 and nothing is run', async () => {
    const bad: [string, Record<string, string>][] = [
      ['Mcp-Name names another tool', std('tools/call', 'ev__get-env')],
      ['Mcp-Name missing', std('tools/call')],
      ['Mcp-Method names another method', { ...std('tools/list', 'ev__echo') }],
      ['Mcp-Method missing', { 'mcp-protocol-version': '2026-07-28', 'mcp-name': 'ev__echo' }],
      ['MCP-Protocol-Version missing', { 'mcp-method': 'tools/call', 'mcp-name': 'ev__echo' }],
      [
        "MCP-Protocol-Version not the envelope's",
        { ...std('tools/call', 'ev__echo'), 'mcp-protocol-version': '2026-08-01' },
      ],
      ['a malformed base64 sentinel', std('tools/call', '=?base64?***?=')],
    ];
    for (const [why, headers] of bad) {
      const r = await post(call('ev__echo', { message: 'm' }), headers);
      expect({ why, status: r.status, code: (r.json?.error as { code?: number } | undefined)?.code }).toEqual({
        why,
        status: 400,
        code: -32020,
      });
    }
    expect(gate.requests).toEqual([]);
    expect(logs.filter((l) => l.includes('"tools/call"'))).toEqual([]);
    // the same request with agreeing headers (the name as a base64 sentinel too) is served
    const ok = await post(call('ev__echo', { message: 'agreed' }), std('tools/call', `=?base64?${btoa('ev__echo')}?=`));
    expect(ok.status).toBe(200);
    expect(JSON.stringify(ok.json)).toContain('agreed');
    expect(gate.requests.map((q) => q.target)).toEqual(['ev/echo']);
  }, 60_000);

  it("the message rules hold per request: a batch, a null id and an unknown method are refused; the envelope's client capabilities never reach a server", async () => {
    const batch = await post([call('ev__echo', { message: 'a' })], std('tools/call', 'ev__echo'));
    expect((batch.json?.error as { code?: number } | undefined)?.code).toBe(-32600);
    const nullId = await post({ ...call('ev__echo', { message: 'a' }), id: null }, std('tools/call', 'ev__echo'));
    expect(nullId.json?.result).toBeUndefined();
    const unknown = await post(
      { jsonrpc: '2.0', id: 3, method: 'x-vendor/run', params: { _meta: ENVELOPE } },
      std('x-vendor/run'),
    );
    expect({ status: unknown.status, code: (unknown.json?.error as { code?: number } | undefined)?.code }).toEqual({
      status: 404,
      code: -32601,
    });
    // methods 2026-07-28 removed are HTTP 404 / -32601 to a stateless request, never run
    for (const method of ['initialize', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe']) {
      const r = await post(
        {
          jsonrpc: '2.0',
          id: 4,
          method,
          params: {
            uri: 'tymcp://ev/x',
            level: 'info',
            protocolVersion: '2026-07-28',
            capabilities: {},
            clientInfo: { name: 'c', version: '1' },
            _meta: ENVELOPE,
          },
        },
        std(method, method.startsWith('resources/') ? 'tymcp://ev/x' : undefined),
      );
      expect({ method, status: r.status, code: (r.json?.error as { code?: number } | undefined)?.code }).toEqual({
        method,
        status: 404,
        code: -32601,
      });
    }
    expect(http.sessions).toBe(0);
    expect(gate.requests).toEqual([]);
    // a multi-round-trip tool asking the client for input: the bridge declares no capabilities upstream,
    // so no elicitation reaches the client; the call fails instead
    const asked = await post(call('modern__ask', {}), std('tools/call', 'modern__ask'));
    expect(JSON.stringify(asked.json)).not.toContain('type your password');
    expect(asked.json?.error ?? (asked.json?.result as { isError?: boolean } | undefined)?.isError).toBeTruthy();
  }, 60_000);

  it('argument cases of the shared message file hold per stateless request: unlisted fields (bogusProp, ' +
    '__proto__) and missing arguments are tool errors naming the field, before approval and before ' +
    'forwarding', async () => {
    const text = (r: { json: Record<string, unknown> | undefined }) => JSON.stringify(r.json?.result ?? r.json?.error);
    const isError = (r: { json: Record<string, unknown> | undefined }) =>
      (r.json?.result as { isError?: boolean } | undefined)?.isError;
    const bogus = await post(call('ev__echo', { message: 'a', bogusProp: 1 }), std('tools/call', 'ev__echo'));
    expect(isError(bogus)).toBe(true);
    expect(text(bogus)).toContain('bogusProp');
    // an own "__proto__" key, as a raw JSON body carries it
    const proto = await post(
      call('ev__echo', JSON.parse('{"message":"a","__proto__":{"polluted":true}}') as Record<string, unknown>),
      std('tools/call', 'ev__echo'),
    );
    // refused where the request is read (before any tool lookup): -32602 naming the field
    expect(proto.json?.error).toMatchObject({ code: -32602, data: { code: 'E_INVALID_ARGS' } });
    expect(text(proto)).toContain('arguments.__proto__');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const missing = await post(call('ev__echo', {}), std('tools/call', 'ev__echo'));
    expect(isError(missing)).toBe(true);
    expect(text(missing)).toContain('message');
    expect(gate.requests).toEqual([]);
  }, 60_000);
});

describe('standard header checks (core)', () => {
  it('decode sentinels and compare name, method and version with the body', () => {
    expect(decodeHeaderValue(`=?base64?${btoa('a b')}?=`)).toBe('a b');
    expect(decodeHeaderValue(' plain ')).toBe('plain');
    expect(decodeHeaderValue('=?base64?%%?=')).toBeUndefined();
    const h = (m: Record<string, string>) => (n: string) => m[n];
    const read = { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'tymcp://ev/x', _meta: ENVELOPE } };
    expect(
      checkStandardHeaders(
        h({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'resources/read', 'mcp-name': 'tymcp://ev/x' }),
        read,
      ),
    ).toBeUndefined();
    expect(
      checkStandardHeaders(
        h({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'resources/read', 'mcp-name': 'tymcp://ev/y' }),
        read,
      )?.error.code,
    ).toBe(-32020);
    // a method with no name source needs only version and method
    expect(
      checkStandardHeaders(h({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' }), {
        id: 2,
        method: 'tools/list',
        params: { _meta: ENVELOPE },
      }),
    ).toBeUndefined();
  });
});
