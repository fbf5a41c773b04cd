// The OpenAI and Anthropic clients against the scripted loopback peers of their wire formats (real HTTP + SSE); test
// code.
import { afterEach, describe, expect, it } from 'vitest';
import { startScriptedModel } from '../../../test/app/model-servers.mjs';
import { openaiComplete, OpenAiAccumulator } from './openai.js';
import { anthropicComplete } from './anthropic.js';
import type { ChatMessage, ModelRequest } from './types.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

const tools = [
  { name: 'add', description: 'adds', parameters: { type: 'object', properties: { a: { type: 'number' } } } },
];
const history: ChatMessage[] = [
  { role: 'system', text: 'sys' },
  { role: 'user', text: 'hi' },
  {
    role: 'assistant',
    text: '',
    toolCalls: [
      { id: 'call_1', name: 'add', arguments: '{"a":1}' },
      { id: 'call_2', name: 'add', arguments: '{"a":2}' },
    ],
  },
  { role: 'tool', callId: 'call_1', name: 'add', content: '1', isError: false },
  {
    role: 'tool',
    callId: 'call_2',
    name: 'add',
    content: '{"error":{"code":"E_TIMEOUT","message":"slow"}}',
    isError: true,
  },
];

function req(endpoint: string, over: Partial<ModelRequest> = {}): ModelRequest {
  return {
    endpoint,
    model: 'm',
    apiKey: 'sk-test-key',
    messages: history,
    tools,
    stream: true,
    signal: new AbortController().signal,
    ...over,
  };
}

describe('OpenAI Chat Completions client', () => {
  it('streams text and merges tool_calls deltas by index (two parallel calls)', async () => {
    const s = await startScriptedModel({
      kind: 'openai',
      script: () => ({
        text: 'Adding both.',
        toolCalls: [
          { name: 'add', arguments: { a: 1 } },
          { name: 'add', arguments: { a: 22 } },
        ],
      }),
    });
    closers.push(s.close);
    const deltas: string[] = [];
    const r = await openaiComplete(req(s.url, { onText: (d) => deltas.push(d) }));
    expect(r.text).toBe('Adding both.');
    expect(deltas.length).toBeGreaterThan(1);
    expect(r.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['add', { a: 1 }],
      ['add', { a: 22 }],
    ]);
    expect(r.stopReason).toBe('tool_calls');
    const sent = s.requests[0]!;
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.headers.authorization).toBe('Bearer sk-test-key');
    expect(sent.body.tools[0]).toEqual({ type: 'function', function: tools[0] });
    expect(sent.body.messages[2]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a":1}' } },
        { id: 'call_2', type: 'function', function: { name: 'add', arguments: '{"a":2}' } },
      ],
    });
    expect(sent.body.messages[4]).toEqual({
      role: 'tool',
      tool_call_id: 'call_2',
      content: '{"error":{"code":"E_TIMEOUT","message":"slow"}}',
    });
  });
  it('reads a non-streaming reply', async () => {
    const s = await startScriptedModel({
      kind: 'openai',
      script: () => ({ text: 'plain', toolCalls: [{ name: 'add', arguments: '{"a":5}' }] }),
    });
    closers.push(s.close);
    const r = await openaiComplete(req(`${s.url}/chat/completions`, { stream: false, apiKey: '' }));
    expect(r).toMatchObject({ text: 'plain', toolCalls: [{ name: 'add', arguments: '{"a":5}' }] });
    expect(s.requests[0]!.body.stream).toBe(false);
    expect(s.requests[0]!.headers.authorization).toBeUndefined();
  });
  it('reports HTTP errors with the status, and Stop as E_ABORTED', async () => {
    const s = await startScriptedModel({
      kind: 'openai',
      script: (_b, n) => (n === 0 ? { status: 429 } : { text: 'partial', hang: true }),
    });
    closers.push(s.close);
    await expect(openaiComplete(req(s.url))).rejects.toMatchObject({ status: 429, code: 'E_MODEL_HTTP' });
    const ac = new AbortController();
    const p = openaiComplete(req(s.url, { signal: ac.signal, onText: () => ac.abort() }));
    await expect(p).rejects.toMatchObject({ code: 'E_ABORTED' });
  });
  it('merges deltas from servers that omit the index (by id, then by order)', () => {
    const a = new OpenAiAccumulator();
    a.push({ choices: [{ delta: { tool_calls: [{ id: 'x', function: { name: 'f', arguments: '{"a"' } }] } }] });
    a.push({ choices: [{ delta: { tool_calls: [{ function: { arguments: ':1}' } }] }, finish_reason: 'tool_calls' }] });
    expect(a.reply().toolCalls).toEqual([{ id: 'x', name: 'f', arguments: '{"a":1}' }]);
  });
});

describe('Anthropic Messages client', () => {
  it('streams text and tool_use blocks (input_json_delta) and sends tool_result blocks in one user message', async () => {
    const s = await startScriptedModel({
      kind: 'anthropic',
      script: () => ({
        text: 'Sure.',
        toolCalls: [
          { name: 'add', arguments: { a: 3 } },
          { name: 'add', arguments: { a: 4 } },
        ],
      }),
    });
    closers.push(s.close);
    const r = await anthropicComplete(req(s.url));
    expect(r.text).toBe('Sure.');
    expect(r.toolCalls.map((c) => JSON.parse(c.arguments))).toEqual([{ a: 3 }, { a: 4 }]);
    expect(r.stopReason).toBe('tool_use');
    const sent = s.requests[0]!;
    expect(sent.path).toBe('/v1/messages');
    expect(sent.headers['x-api-key']).toBe('sk-test-key');
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.headers['anthropic-dangerous-direct-browser-access']).toBe('true');
    expect(sent.body.system).toBe('sys');
    expect(sent.body.tools[0]).toEqual({ name: 'add', description: 'adds', input_schema: tools[0]!.parameters });
    expect(sent.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_1', name: 'add', input: { a: 1 } },
          { type: 'tool_use', id: 'call_2', name: 'add', input: { a: 2 } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: '1' },
          {
            type: 'tool_result',
            tool_use_id: 'call_2',
            content: '{"error":{"code":"E_TIMEOUT","message":"slow"}}',
            is_error: true,
          },
        ],
      },
    ]);
  });
});
