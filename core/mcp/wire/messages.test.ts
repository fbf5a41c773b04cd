// Unit tests for the MCP bridge message rules; core, trusted side.
import { describe, expect, it } from 'vitest';
import {
  LineFramer,
  MAX_MESSAGE_BYTES,
  RPC,
  classify,
  clientMessageRule,
  clientRequestRule,
  findProtoKey,
  parseMessage,
  requestLogLine,
  serverMessageRule,
  stripClientCapabilities,
  envelopeVersion,
} from './messages.js';
import { toolCallParams } from './tool-call.js';

const enc = new TextEncoder();

describe('classify', () => {
  it('refuses batches, empty or not, with -32600', () => {
    for (const v of [[], [{ jsonrpc: '2.0', id: 1, method: 'tools/call' }], [1, 2]]) {
      const c = classify(v);
      expect(c.kind).toBe('invalid');
      if (c.kind === 'invalid') expect(c.reply.error.code).toBe(RPC.INVALID_REQUEST);
    }
  });
  it('a request with a null or object id never becomes a request', () => {
    for (const id of [null, {}, [], true]) {
      const c = classify({ jsonrpc: '2.0', id, method: 'tools/call', params: {} });
      expect(c.kind).toBe('invalid');
      if (c.kind === 'invalid') {
        expect(c.reply.error.code).toBe(RPC.INVALID_REQUEST);
        expect(c.reply.id).toBeNull();
      }
    }
  });
  it('a message without id is a notification, never a request', () => {
    const c = classify({ jsonrpc: '2.0', method: 'tools/call', params: { name: 'x' } });
    expect(c.kind).toBe('notification');
  });
  it('refuses non-2.0, bad method, scalar params, and parse errors', () => {
    expect(classify({ id: 1, method: 'ping' }).kind).toBe('invalid');
    expect(classify({ jsonrpc: '2.0', id: 1, method: 7 }).kind).toBe('invalid');
    expect(classify({ jsonrpc: '2.0', id: 1, method: 'ping', params: 3 }).kind).toBe('invalid');
    const p = parseMessage('{"jsonrpc":');
    expect(p.kind === 'invalid' && p.reply.error.code).toBe(RPC.PARSE_ERROR);
    expect(classify({ jsonrpc: '2.0', id: 1, result: {}, error: { code: 1, message: 'x' } }).kind).toBe('invalid');
    expect(classify({ jsonrpc: '2.0', id: 1, result: {} }).kind).toBe('response');
  });
});

describe('client request rules', () => {
  it('gates calls, reads and prompt gets, passes listings, refuses unknown methods', () => {
    expect(clientRequestRule(1, 'tools/call')).toEqual({ action: 'gated', kind: 'mcp' });
    expect(clientRequestRule(1, 'resources/read')).toEqual({ action: 'gated', kind: 'mcp-resource' });
    expect(clientRequestRule(1, 'prompts/get')).toEqual({ action: 'gated', kind: 'mcp-prompt' });
    expect(clientRequestRule(1, 'tasks/result')).toEqual({ action: 'gated', kind: 'mcp' });
    expect(clientRequestRule(1, 'tools/list')).toEqual({ action: 'pass' });
    for (const m of ['x-vendor/run', '__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      const r = clientRequestRule(1, m);
      expect(r.action).toBe('refuse');
      if (r.action === 'refuse') expect(r.reply.error.code).toBe(RPC.METHOD_NOT_FOUND);
    }
  });
  it('strips every client capability from initialize without changing the input', () => {
    const msg = {
      jsonrpc: '2.0',
      id: 2,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: { sampling: {}, elicitation: {}, roots: {} },
        clientInfo: { name: 'c', version: '1' },
      },
    };
    const out = stripClientCapabilities(msg) as { params: { capabilities: object; clientInfo: object } };
    expect(out.params.capabilities).toEqual({});
    expect(out.params.clientInfo).toEqual({ name: 'c', version: '1' });
    expect(msg.params.capabilities).toEqual({ sampling: {}, elicitation: {}, roots: {} });
  });
  it('2026-07-28: strips the client capabilities from every request envelope (version and client info kept), and lets server/discover and subscriptions/listen through', () => {
    const envelope = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'c', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': { sampling: {}, elicitation: {}, roots: {} },
    };
    for (const method of ['tools/call', 'tools/list', 'server/discover', 'subscriptions/listen', 'resources/read']) {
      const msg = {
        jsonrpc: '2.0',
        id: 3,
        method,
        params: { name: 't', uri: 'x://y', _meta: { ...envelope, progressToken: 'p' } },
      };
      const rule = clientMessageRule(classify(msg));
      expect(rule.action).toBe('pass');
      if (rule.action !== 'pass') continue;
      const meta = (rule.message.params as { _meta: Record<string, unknown> })._meta;
      expect(meta['io.modelcontextprotocol/clientCapabilities']).toEqual({});
      expect(meta['io.modelcontextprotocol/protocolVersion']).toBe('2026-07-28');
      expect(meta['io.modelcontextprotocol/clientInfo']).toEqual({ name: 'c', version: '1' });
      expect(meta.progressToken).toBe('p');
      expect(msg.params._meta['io.modelcontextprotocol/clientCapabilities']).toEqual({
        sampling: {},
        elicitation: {},
        roots: {},
      });
    }
    expect(envelopeVersion({ _meta: envelope })).toBe('2026-07-28');
    expect(envelopeVersion({ _meta: {} })).toBeUndefined();
    // an envelope whose capabilities the rules have not emptied is left to the SDK Server
    expect(toolCallParams({ name: 't', arguments: {}, _meta: envelope })).toBeUndefined();
    expect(toolCallParams({ name: 't', arguments: {}, _meta: { progressToken: 1 } })).toEqual({
      name: 't',
      arguments: {},
      progressToken: 1,
    });
  });
});

describe('server message rules', () => {
  it('answers ping with {} and refuses every other server request', () => {
    const ping = serverMessageRule(classify({ jsonrpc: '2.0', id: 93, method: 'ping' }));
    expect(ping).toEqual({ action: 'answer', reply: { jsonrpc: '2.0', id: 93, result: {} } });
    for (const method of ['sampling/createMessage', 'elicitation/create', 'roots/list', 'x/any']) {
      const r = serverMessageRule(classify({ jsonrpc: '2.0', id: 90, method, params: {} }));
      expect(r.action).toBe('answer');
      if (r.action === 'answer') {
        expect('error' in r.reply).toBe(true);
        expect(r.reply.id).toBe(90);
      }
    }
  });
  it('passes only MCP notifications', () => {
    expect(serverMessageRule(classify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })).action).toBe(
      'pass',
    );
    expect(serverMessageRule(classify({ jsonrpc: '2.0', method: 'x-vendor/anything' })).action).toBe('drop');
    expect(serverMessageRule(classify({ jsonrpc: '2.0', method: 'notifications/initialized' })).action).toBe('drop');
  });
});

describe('LineFramer', () => {
  it('splits lines across chunks and strips CR', () => {
    const f = new LineFramer(100);
    expect(f.push(enc.encode('{"a":1}\r\n{"b"'))).toEqual([{ type: 'line', text: '{"a":1}' }]);
    expect(f.push(enc.encode(':2}\n\n'))).toEqual([{ type: 'line', text: '{"b":2}' }]);
  });
  it('keeps memory bounded on an unterminated line and resumes after its newline', () => {
    const f = new LineFramer(1000);
    const big = new Uint8Array(600).fill(0x61);
    expect(f.push(big)).toEqual([]);
    const ev = f.push(big);
    expect(ev).toEqual([{ type: 'oversize', bytes: 1200 }]);
    for (let i = 0; i < 50; i++) expect(f.push(big)).toEqual([]);
    expect(f.buffered).toBe(0);
    expect(f.push(enc.encode('tail\n{"ok":1}\n'))).toEqual([{ type: 'line', text: '{"ok":1}' }]);
  });
  it('the default cap is 8 MiB; a message of exactly the cap passes', () => {
    expect(MAX_MESSAGE_BYTES).toBe(8 * 1024 * 1024);
    const f = new LineFramer(10);
    expect(f.push(enc.encode('0123456789\n'))).toEqual([{ type: 'line', text: '0123456789' }]);
    expect(f.push(enc.encode('01234567890\n'))[0]?.type).toBe('oversize');
  });
});

describe('requestLogLine', () => {
  it('holds server, method, name and outcome only', () => {
    expect(JSON.parse(requestLogLine({ server: 's', method: 'tools/call', name: 'echo', outcome: 'allowed' }))).toEqual(
      { server: 's', method: 'tools/call', name: 'echo', outcome: 'allowed' },
    );
  });
});

describe('clientMessageRule', () => {
  it('refuses a __proto__ key at any depth before anything parses it further', () => {
    const m = parseMessage(
      '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"s","arguments":{"a":[{"__proto__":{"x":1}}]}}}',
    );
    const r = clientMessageRule(m);
    expect(r.action).toBe('reply');
    if (r.action === 'reply') {
      expect(r.reply.error.code).toBe(RPC.INVALID_PARAMS);
      expect(r.reply.error.message).toContain('arguments.a[0].__proto__');
    }
  });
  it('refuses nesting too deep to inspect', () => {
    let v: unknown = 1;
    for (let i = 0; i < 80; i++) v = { a: v };
    expect(findProtoKey(v)).toContain('too deep');
  });
  it('drops id-less requests and non-MCP notifications, passes MCP ones, strips initialize', () => {
    expect(clientMessageRule(classify({ jsonrpc: '2.0', method: 'tools/call', params: { name: 'x' } })).action).toBe(
      'drop',
    );
    expect(
      clientMessageRule(classify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }))
        .action,
    ).toBe('pass');
    const init = clientMessageRule(
      classify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { capabilities: { sampling: {} } } }),
    );
    expect(init.action === 'pass' && (init.message.params as { capabilities: object }).capabilities).toEqual({});
  });
});

describe('LineFramer: whole lines in one chunk and lines split over chunks give the same messages', () => {
  it('frames alike however the bytes arrive (CRLF and blank lines included)', () => {
    const text = '{"a":1}\r\n\n{"b":"\u00e9\u4e2d"}\n{"c":3}\n';
    const bytes = enc.encode(text);
    const whole = new LineFramer(1024).push(bytes);
    const f = new LineFramer(1024);
    const split: unknown[] = [];
    for (let i = 0; i < bytes.length; i += 3) split.push(...f.push(bytes.subarray(i, i + 3)));
    expect(whole).toEqual([
      { type: 'line', text: '{"a":1}' },
      { type: 'line', text: '{"b":"\u00e9\u4e2d"}' },
      { type: 'line', text: '{"c":3}' },
    ]);
    expect(split).toEqual(whole);
    expect(f.buffered).toBe(0);
  });
  it('a whole line over the cap inside one chunk is still refused', () => {
    const f = new LineFramer(8);
    expect(f.push(enc.encode('{"a":"123456"}\n{"b":1}\n'))).toEqual([
      { type: 'oversize', bytes: 14 },
      { type: 'line', text: '{"b":1}' },
    ]);
  });
});
