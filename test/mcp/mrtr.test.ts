// Multi-round-trip input requests (MCP 2026-07-28 input_required) through `mcp serve --http`: relayed only under an
// mcp-input rule, the bridge's request state bound to the call and used once, a person answering under mcp-elicit,
// every relay and refusal audited; test side.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AskRouter } from '../../core/ask/router.js';
import type { AuditRecord } from '../../core/audit/trail.js';
import { Elicitor } from '../../core/mcp/input/elicit.js';
import { compilePolicy } from '../../core/policy/permissions.js';
import type { Answer, AskChannel, Question } from '../../core/exec/runtime.js';
import { McpBridge } from '../../node/mcp/bridge.js';
import { serveHttp, type HttpServeHandle } from '../../node/mcp/serve-http.js';
import { FakeGate, ROOT, addNodeServer, tempHome } from './helpers.js';

const FIXTURE = join(ROOT, 'test/mcp/peers/mrtr-server.mjs');
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
  'io.modelcontextprotocol/clientCapabilities': { sampling: {}, elicitation: {}, roots: {} },
};

/** A person who fills in every form with `values`. */
class Person implements AskChannel {
  readonly name = 'scripted';
  readonly forms = true;
  asked: Question[] = [];
  constructor(private readonly values: Record<string, string>) {}
  live(): boolean {
    return true;
  }
  async ask(q: Question): Promise<Answer | undefined> {
    this.asked.push(q);
    return { allow: true, scope: 'once', channel: this.name, values: this.values } as Answer;
  }
}

let home: string;
let cleanup: () => Promise<void>;
let bridge: McpBridge;
let http: HttpServeHandle;
let audit: AuditRecord[];
let person: Person;

async function start(rules: string[]): Promise<void> {
  audit = [];
  person = new Person({ colour: 'blue' });
  const elicit = new Elicitor({
    policy: () => compilePolicy([{ scope: 'flags', allow: rules }]),
    asker: new AskRouter({ channels: [person], askWaitMs: 10_000 }),
    audit: { append: async (r) => void audit.push(r) },
    principal: 'mcp:t',
  });
  bridge = new McpBridge({ home, sandbox: 'h', gate: new FakeGate(() => false), elicit });
  http = await serveHttp(bridge, { port: 0 });
}
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
  await addNodeServer(home, 'mrtr', FIXTURE, [], { ask: 'none' });
});
afterEach(async () => {
  await http?.close();
  await bridge?.close();
  await cleanup();
});

/** One stateless 2026-07-28 tools/call (standard headers as the body says). */
async function call(
  name: string,
  extra: Record<string, unknown> = {},
  args: Record<string, unknown> = {},
): Promise<{
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: { code?: string; reason?: string } };
}> {
  const body = {
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name, arguments: args, _meta: ENVELOPE, ...extra },
  };
  const res = await fetch(http.url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${http.token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': name,
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const data = text.split('\n').find((l) => l.startsWith('data: '));
  return JSON.parse(data !== undefined ? data.slice(6) : text);
}
const textOf = (r: { result?: Record<string, unknown> }) =>
  ((r.result?.content as { text?: string }[] | undefined) ?? []).map((c) => c.text).join('');

describe('input_required through the bridge (2026-07-28)', () => {
  it('without an mcp-input rule a server input request never reaches the client: the server is told of no capability, so it cannot ask (MCP -32021)', async () => {
    await start([]);
    const r = await call('mrtr__report');
    expect(JSON.stringify(r)).not.toContain('visible text');
    expect(r.result).toBeUndefined();
    expect(r.error?.code).toBe(-32021);
  }, 60_000);

  it('with mcp-input(SERVER/elicitation): relayed as input_required under the bridge own requestState; the answer reaches the server, which is told only of the relayed kind; audited', async () => {
    await start(['mcp-input(mrtr/elicitation)']);
    const first = await call('mrtr__report');
    expect(first.result?.resultType).toBe('input_required');
    expect(JSON.stringify(first.result?.inputRequests)).toContain('visible text');
    const state = first.result?.requestState as string;
    // sealed (AES-GCM): the server's own state and the form inside cannot be read
    expect(state).toMatch(/^v2\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(Buffer.from(state.split('.')[2]!, 'base64url').toString('latin1')).not.toMatch(/colour|elicitation|"k"/);
    // the answer reaches the server trimmed to the form it asked for: a field it did not ask for is dropped
    const done = await call('mrtr__report', {
      inputResponses: { q: { action: 'accept', content: { colour: 'red', card: '4111 1111 1111 1111' } } },
      requestState: state,
    });
    expect(done.result?.resultType).toBe('complete');
    expect(textOf(done)).toBe('answered {"action":"accept","content":{"colour":"red"}} caps {"elicitation":{}}');
    expect(audit.map((a) => [a.kind, a.target, a.decision, a.rule])).toEqual([
      ['mcp-input', 'mrtr/elicitation', 'allow', 'mcp-input(mrtr/elicitation)'],
    ]);
    // the same state again: used once
    const again = await call('mrtr__report', {
      inputResponses: { q: { action: 'accept', content: { colour: 'red' } } },
      requestState: state,
    });
    expect({ code: again.error?.code, data: again.error?.data }).toEqual({
      code: -32602,
      data: { code: 'E_MCP_REQUEST_STATE', reason: 'replayed' },
    });
    expect(audit.at(-1)).toMatchObject({ kind: 'mcp-input', decision: 'deny', code: 'E_MCP_REQUEST_STATE' });
  }, 60_000);

  it('a tampered state, one issued for other arguments or another tool, answers without a state, ' +
    'and answers of the wrong shape are refused with stable codes before anything is forwarded', async () => {
    await start(['mcp-input(mrtr/*)']);
    const answer = { q: { action: 'accept', content: { colour: 'red' } } };
    const first = await call('mrtr__report');
    const state = first.result?.requestState as string;
    const [v, body, mac] = state.split('.');
    const flipped = `${v}.${body}.${mac!.startsWith('A') ? 'B' : 'A'}${mac!.slice(1)}`;
    const reason = (r: Awaited<ReturnType<typeof call>>) => [r.error?.code, r.error?.data?.code, r.error?.data?.reason];
    expect(reason(await call('mrtr__report', { inputResponses: answer, requestState: flipped }))).toEqual([
      -32602,
      'E_MCP_REQUEST_STATE',
      'mac',
    ]);
    expect(reason(await call('mrtr__report', { inputResponses: answer, requestState: `${state}-TAMPERED` }))).toEqual([
      -32602,
      'E_MCP_REQUEST_STATE',
      'mac',
    ]);
    expect(reason(await call('mrtr__report', { inputResponses: answer, requestState: state }, { extra: 1 }))).toEqual([
      -32602,
      'E_MCP_REQUEST_STATE',
      'bind',
    ]);
    expect(
      reason(
        await call('mrtr__test_input_required_result_elicitation', { inputResponses: answer, requestState: state }),
      ),
    ).toEqual([-32602, 'E_MCP_REQUEST_STATE', 'bind']);
    expect(reason(await call('mrtr__report', { inputResponses: answer }))).toEqual([
      -32602,
      'E_MCP_REQUEST_STATE',
      'missing',
    ]);
    // the state was never taken by the refusals: it still answers once, but not with a wrong-shaped answer
    const bad = await call('mrtr__report', { inputResponses: { q: { action: 'maybe' } }, requestState: state });
    expect([bad.error?.code, bad.error?.data?.code]).toEqual([-32602, 'E_INVALID_ARGS']);
    expect(bad.error?.message).toContain('inputResponses.q');
    expect(audit.filter((a) => a.code === 'E_MCP_REQUEST_STATE')).toHaveLength(5);
  }, 60_000);

  it('with mcp-elicit(SERVER) and no mcp-input rule a person answers the server form; the client gets the complete result and never the request', async () => {
    await start(['mcp-elicit(mrtr)']);
    const r = await call('mrtr__report');
    expect(r.result?.resultType).toBe('complete');
    expect(textOf(r)).toBe('answered {"action":"accept","content":{"colour":"blue"}} caps {"elicitation":{"form":{}}}');
    expect(person.asked).toHaveLength(1);
    expect(person.asked[0]!.details.join('\n')).toContain('Which colour? (visible text)');
    expect(audit.map((a) => [a.kind, a.decision, a.elicit?.action])).toEqual([['mcp-elicit', 'allow', 'accept']]);
  }, 60_000);

  it('a rule relaying elicitation only: a request for sampling is refused even when the client declared it; a client that declared nothing is never relayed to', async () => {
    await start(['mcp-input(mrtr/elicitation)']);
    const sampling = await call('mrtr__test_input_required_result_sampling');
    expect(JSON.stringify(sampling)).not.toContain('capital of France');
    expect(sampling.error?.code).toBe(-32021);
    const res = await fetch(http.url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${http.token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'mrtr__report',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: {
          name: 'mrtr__report',
          arguments: {},
          _meta: {
            ...ENVELOPE,
            'io.modelcontextprotocol/clientCapabilities': {},
            'tysandbox/declaredCapabilities': { elicitation: {} },
          },
        },
      }),
    });
    const text = await res.text();
    expect(text).not.toContain('visible text');
    expect(text).toContain('-32021');
  }, 60_000);
});

describe('input_required on prompts/get', () => {
  it('relayed under mcp-input(SERVER/elicitation) with the bridge own state bound to the prompt; refused by the server without the rule', async () => {
    const get = async (extra: Record<string, unknown> = {}) => {
      const body = {
        jsonrpc: '2.0',
        id: 3,
        method: 'prompts/get',
        params: { name: 'mrtr__test_input_required_result_prompt', _meta: ENVELOPE, ...extra },
      };
      const res = await fetch(http.url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${http.token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'prompts/get',
          'mcp-name': 'mrtr__test_input_required_result_prompt',
        },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      const data = text.split('\n').find((l) => l.startsWith('data: '));
      return JSON.parse(data !== undefined ? data.slice(6) : text) as {
        result?: Record<string, unknown>;
        error?: { code: number; data?: { code?: string; reason?: string } };
      };
    };
    await start([]);
    const refused = await get();
    expect(refused.error?.code).toBe(-32021);
    await http.close();
    await bridge.close();
    await start(['mcp-input(mrtr/elicitation)']);
    const first = await get();
    expect(first.result?.resultType).toBe('input_required');
    const state = first.result?.requestState as string;
    const done = await get({
      inputResponses: { user_context: { action: 'accept', content: { context: 'tests' } } },
      requestState: state,
    });
    expect(JSON.stringify(done.result?.messages)).toContain('context: tests');
    // a prompt's state does not answer a tool call of the same name (bound to the prompt)
    const cross = await call('mrtr__report', {
      inputResponses: { q: { action: 'accept', content: { colour: 'red' } } },
      requestState: first.result?.requestState,
    });
    expect(cross.error?.data?.code).toBe('E_MCP_REQUEST_STATE');
  }, 60_000);
});

describe('a 2.x SDK client over stdio (mcp proxy, the direct path)', () => {
  it('answers a server form through the bridge: the client SDK fulfils the relayed input_required and retries; the server gets the answer', async () => {
    const { Client } = await import('@modelcontextprotocol/client');
    const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio');
    const client = new Client(
      { name: 'modern-client', version: '1' },
      { capabilities: { elicitation: {} }, versionNegotiation: { mode: 'auto' } },
    );
    const seen: string[] = [];
    client.setRequestHandler('elicitation/create', async (req) => {
      seen.push(String((req.params as { message?: unknown }).message));
      return { action: 'accept', content: { colour: 'green' } };
    });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [
          '--import',
          'tsx',
          join(ROOT, 'test/mcp/cli-entry.ts'),
          '--home',
          home,
          '--allow',
          'mcp-input(mrtr/elicitation)',
          'mcp',
          'proxy',
          'mrtr',
        ],
        cwd: ROOT,
        stderr: 'pipe',
      }),
    );
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      const r = await client.callTool({ name: 'report', arguments: {} });
      expect(seen).toEqual(['Which colour? (visible text)']);
      expect(JSON.stringify(r.content)).toContain(
        'answered {\\"action\\":\\"accept\\",\\"content\\":{\\"colour\\":\\"green\\"}}',
      );
    } finally {
      await client.close();
    }
  }, 60_000);
});

describe('a 2025-era server behind a 2026-07-28 client', () => {
  const OLD = join(ROOT, 'test/mcp/peers/sdk-server.mjs');
  it('its elicitation during a call is relayed as input_required under mcp-input(SERVER/elicitation), ' +
    'the answer goes back to the waiting server, round after round; the state is taken once; audited', async () => {
    await addNodeServer(home, 'old', OLD, [], { ask: 'none' });
    await start(['mcp-input(old/elicitation)']);
    const first = await call('old__test_elicitation', {}, { message: 'pick a colour' });
    expect(first.result?.resultType).toBe('input_required');
    const [key, req] = Object.entries(
      first.result?.inputRequests as Record<string, { method: string; params: { message: string } }>,
    )[0]!;
    expect([req.method, req.params.message]).toEqual(['elicitation/create', 'pick a colour']);
    const state = first.result?.requestState as string;
    const done = await call(
      'old__test_elicitation',
      { inputResponses: { [key]: { action: 'accept', content: { response: 'blue' } } }, requestState: state },
      { message: 'pick a colour' },
    );
    expect(textOf(done)).toBe('User response: action=accept, content={"response":"blue"}');
    const again = await call(
      'old__test_elicitation',
      { inputResponses: { [key]: { action: 'accept', content: { response: 'blue' } } }, requestState: state },
      { message: 'pick a colour' },
    );
    expect(again.error?.data).toEqual({ code: 'E_MCP_REQUEST_STATE', reason: 'replayed' });
    // two requests in one call: two rounds, the second asked with what the first answered
    const r1 = await call('old__ask_twice');
    const k1 = Object.keys(r1.result?.inputRequests as object)[0]!;
    const r2 = await call('old__ask_twice', {
      inputResponses: { [k1]: { action: 'accept', content: { name: 'Ada' } } },
      requestState: r1.result?.requestState,
    });
    expect(r2.result?.resultType).toBe('input_required');
    const [k2, q2] = Object.entries(r2.result?.inputRequests as Record<string, { params: { message: string } }>)[0]!;
    expect(q2.params.message).toBe('second: your colour, Ada?');
    const r3 = await call('old__ask_twice', {
      inputResponses: { [k2]: { action: 'accept', content: { colour: 'teal' } } },
      requestState: r2.result?.requestState,
    });
    expect(textOf(r3)).toBe('name=Ada colour=teal (accept)');
    expect(audit.filter((a) => a.kind === 'mcp-input' && a.decision === 'allow')).toHaveLength(3);
  }, 60_000);

  it('without the rule the 2025-era server is not told the client can answer, and nothing reaches the client', async () => {
    await addNodeServer(home, 'old', OLD, [], { ask: 'none' });
    await start([]);
    const r = await call('old__test_elicitation', {}, { message: 'pick a colour' });
    expect(JSON.stringify(r)).not.toContain('pick a colour');
    expect(r.result?.resultType).toBe('complete');
    expect(textOf(r)).toContain('Elicitation not supported or error');
  }, 60_000);
});
