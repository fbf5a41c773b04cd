// Mcp-Param-* headers (MCP 2026-07-28, SEP-2243): a tool argument its schema mirrors in a header (x-mcp-header) must
// agree with the header, else HTTP 400 / -32020 before anything is asked or run; invalid declarations hide the tool;
// test side.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkParamHeaders, paramHeaders } from '../../core/mcp/wire/http-headers.js';
import { McpBridge } from '../../node/mcp/bridge.js';
import { serveHttp, type HttpServeHandle } from '../../node/mcp/serve-http.js';
import { FakeGate, ROOT, addNodeServer, tempHome } from './helpers.js';

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
let home: string;
let cleanup: () => Promise<void>;
let bridge: McpBridge;
let http: HttpServeHandle;
let gate: FakeGate;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
  await addNodeServer(home, 'fx', join(ROOT, 'test/mcp/peers/sdk-server.mjs'), [], { ask: 'none' });
  gate = new FakeGate(() => false);
  bridge = new McpBridge({ home, sandbox: 'p', gate });
  http = await serveHttp(bridge, { port: 0 });
});
afterEach(async () => {
  await http.close();
  await bridge.close();
  await cleanup();
});

async function call(
  args: Record<string, unknown>,
  extra: Record<string, string>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(http.url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${http.token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'fx__test_custom_header',
      ...extra,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 9,
      method: 'tools/call',
      params: { name: 'fx__test_custom_header', arguments: args, _meta: ENVELOPE },
    }),
  });
  const text = await res.text();
  const data = text.split('\n').find((l) => l.startsWith('data: '));
  return { status: res.status, body: JSON.parse(data !== undefined ? data.slice(6) : text) as Record<string, unknown> };
}

describe('Mcp-Param-* headers through mcp serve --http', () => {
  it('a header that disagrees with the argument, a missing one or a bad base64 sentinel: HTTP 400 / -32020, nothing asked or run; agreeing headers pass', async () => {
    const ok = await call({ region: 'Hello' }, { 'mcp-param-region': `=?base64?${btoa('Hello')}?=` });
    expect(JSON.stringify(ok.body)).toContain('region Hello');
    const literal = await call({ region: 'eu-west' }, { 'Mcp-Param-Region': 'eu-west' });
    expect(JSON.stringify(literal.body)).toContain('region eu-west');
    const ran = gate.requests.length;
    for (const [args, headers] of [
      [{ region: 'eu-west' }, { 'mcp-param-region': 'us-east' }],
      [{ region: 'eu-west' }, {}],
      [{ region: 'Hello' }, { 'mcp-param-region': '=?base64?SGVsbG8?=' }],
      [{ region: 'Hello' }, { 'mcp-param-region': '=?base64?SGVs!!!bG8=?=' }],
    ] as [Record<string, unknown>, Record<string, string>][]) {
      const r = await call(args, headers);
      expect({
        status: r.status,
        code: (r.body.error as { code?: number } | undefined)?.code,
        stable: (r.body.error as { data?: { code?: string } } | undefined)?.data?.code,
      }).toEqual({ status: 400, code: -32020, stable: 'E_MCP_HEADER_MISMATCH' });
    }
    expect(gate.requests.length).toBe(ran);
  }, 60_000);
});

describe('x-mcp-header declarations (core)', () => {
  it('are found through properties only, must be RFC 9110 tokens on primitive properties, unique regardless of case', () => {
    expect(
      paramHeaders({
        type: 'object',
        properties: {
          a: { type: 'string', 'x-mcp-header': 'A' },
          o: { type: 'object', properties: { n: { type: 'integer', 'x-mcp-header': 'N' } } },
        },
      }),
    ).toEqual({
      ok: true,
      headers: [
        { path: ['a'], header: 'A', type: 'string' },
        { path: ['o', 'n'], header: 'N', type: 'integer' },
      ],
    });
    expect(paramHeaders({ type: 'object', properties: { a: { type: 'array', 'x-mcp-header': 'A' } } }).ok).toBe(false);
    expect(paramHeaders({ type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'bad name' } } }).ok).toBe(
      false,
    );
    expect(
      paramHeaders({
        type: 'object',
        properties: { a: { type: 'string', 'x-mcp-header': 'X' }, b: { type: 'string', 'x-mcp-header': 'x' } },
      }).ok,
    ).toBe(false);
    expect(
      paramHeaders({ type: 'object', anyOf: [{ properties: { a: { type: 'string', 'x-mcp-header': 'A' } } }] }).ok,
    ).toBe(false);
    const d = [{ path: ['n'], header: 'N', type: 'number' }];
    const h = (v: string | undefined) => () => v;
    expect(checkParamHeaders(d, { n: 1.5 }, h('1.50'), 1)).toBeUndefined();
    expect(checkParamHeaders(d, { n: 2 }, h('3'), 1)?.error.code).toBe(-32020);
    expect(checkParamHeaders(d, {}, h(undefined), 1)).toBeUndefined();
  });
});
