// Anthropic Messages API client (tool_use / tool_result blocks, streaming SSE); browser app, trusted side.
import { parseSse } from './sse.js';
import {
  ModelError,
  joinEndpoint,
  postJson,
  tokenCount,
  type ChatMessage,
  type ChatToolCall,
  type ModelReply,
  type ModelRequest,
  type Usage,
} from './types.js';

type Block =
  | { type: 'text'; text: string }
  | { type: 'image'; source: { type: 'base64'; media_type: string; data: string } }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content: string; is_error?: boolean };

function parseInput(args: string): unknown {
  try {
    const v = JSON.parse(args || '{}') as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

/** A user message's blocks: its text (when not empty: the API refuses empty text blocks), then its attachments. */
function userBlocks(m: Extract<ChatMessage, { role: 'user' }>): Block[] {
  return [
    ...(m.text.trim() ? [{ type: 'text' as const, text: m.text }] : []),
    ...(m.parts ?? []).map(
      (p): Block =>
        p.type === 'text'
          ? { type: 'text', text: p.text }
          : { type: 'image', source: { type: 'base64', media_type: p.mediaType, data: p.data } },
    ),
  ];
}

/**
 * The request body of POST /v1/messages (https://docs.anthropic.com/en/api/messages): system text at the top
 * level; a user message's attachments as `text` and `image` blocks (a base64 `source`); tool calls as `tool_use`
 * blocks of the assistant; tool results as `tool_result` blocks of the next user message; consecutive messages of
 * one role merged (the API wants them alternating); temperature only when set.
 */
export function anthropicBody(req: ModelRequest): Record<string, unknown> {
  const system = req.messages
    .filter((m) => m.role === 'system')
    .map((m) => (m as { text: string }).text)
    .filter(Boolean)
    .join('\n\n');
  const out: { role: 'user' | 'assistant'; content: Block[] }[] = [];
  const push = (role: 'user' | 'assistant', blocks: Block[]) => {
    if (blocks.length === 0) return;
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of req.messages) {
    if (m.role === 'user') push('user', userBlocks(m));
    else if (m.role === 'assistant')
      push('assistant', [
        ...(m.text ? [{ type: 'text' as const, text: m.text }] : []),
        ...m.toolCalls.map((c) => ({
          type: 'tool_use' as const,
          id: c.id,
          name: c.name,
          input: parseInput(c.arguments),
        })),
      ]);
    else if (m.role === 'tool')
      push('user', [
        { type: 'tool_result', tool_use_id: m.callId, content: m.content, ...(m.isError ? { is_error: true } : {}) },
      ]);
  }
  // A final assistant message is a prefill the model continues ("Continue"); the API refuses one ending in whitespace.
  const last = out[out.length - 1];
  if (last?.role === 'assistant') {
    const tail = last.content[last.content.length - 1];
    if (tail?.type === 'text') tail.text = tail.text.trimEnd();
    if (tail?.type === 'text' && !tail.text) last.content.pop();
    if (last.content.length === 0) out.pop();
  }
  const body: Record<string, unknown> = {
    model: req.model,
    max_tokens: req.maxTokens ?? 4096,
    messages: out,
    stream: true,
  };
  if (system) body.system = system;
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.tools.length > 0)
    body.tools = req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
  return body;
}

/** Folds Messages stream events (message_start, content_block_start/delta/stop, message_delta, error) into a reply. */
export class AnthropicAccumulator {
  text = '';
  stopReason = '';
  /** From `message_start` (input, cache reads and writes) and `message_delta` (output, cumulative). */
  usage: Usage | undefined;
  readonly #blocks = new Map<number, { kind: 'text' } | { kind: 'tool'; id: string; name: string; json: string }>();
  readonly #order: number[] = [];

  /** Apply one event's data; returns the text delta. @throws ModelError E_MODEL_PROTOCOL for an `error` event */
  push(type: string, data: unknown): string {
    const d = data as {
      index?: number;
      content_block?: { type?: string; id?: string; name?: string; text?: string };
      delta?: { type?: string; text?: string; partial_json?: string; stop_reason?: string };
      error?: { message?: string };
      message?: { usage?: Record<string, unknown> };
      usage?: Record<string, unknown>;
    };
    if (type === 'error')
      throw new ModelError(
        `the model stream reported an error: ${String(d?.error?.message ?? 'unknown').slice(0, 600)}`,
        200,
        'E_MODEL_PROTOCOL',
      );
    if (type === 'content_block_start' && typeof d.index === 'number') {
      const b = d.content_block ?? {};
      if (b.type === 'tool_use')
        this.#blocks.set(d.index, {
          kind: 'tool',
          id: String(b.id ?? `toolu_${d.index}`),
          name: String(b.name ?? ''),
          json: '',
        });
      else this.#blocks.set(d.index, { kind: 'text' });
      this.#order.push(d.index);
      if (b.type === 'text' && typeof b.text === 'string' && b.text) {
        this.text += b.text;
        return b.text;
      }
      return '';
    }
    if (type === 'content_block_delta' && typeof d.index === 'number') {
      const b = this.#blocks.get(d.index);
      if (d.delta?.type === 'text_delta' && typeof d.delta.text === 'string') {
        this.text += d.delta.text;
        return d.delta.text;
      }
      if (d.delta?.type === 'input_json_delta' && b?.kind === 'tool' && typeof d.delta.partial_json === 'string')
        b.json += d.delta.partial_json;
      return '';
    }
    if (type === 'message_start' && d.message?.usage) this.#noteUsage(d.message.usage);
    if (type === 'message_delta') {
      if (typeof d.delta?.stop_reason === 'string') this.stopReason = d.delta.stop_reason;
      if (d.usage) this.#noteUsage(d.usage);
    }
    return '';
  }

  #noteUsage(u: Record<string, unknown>): void {
    const parts = [u.input_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens].map(tokenCount);
    const input = parts.some((x) => x !== undefined) ? parts.reduce<number>((a, b) => a + (b ?? 0), 0) : undefined;
    const output = tokenCount(u.output_tokens);
    const next: Usage = { ...this.usage };
    if (input !== undefined) next.input = input;
    if (output !== undefined) next.output = output;
    if (next.input !== undefined || next.output !== undefined) this.usage = next;
  }

  reply(): ModelReply {
    const toolCalls: ChatToolCall[] = [];
    for (const i of this.#order) {
      const b = this.#blocks.get(i);
      if (b?.kind === 'tool') toolCalls.push({ id: b.id, name: b.name, arguments: b.json || '{}' });
    }
    return {
      text: this.text,
      toolCalls,
      stopReason: this.stopReason || (toolCalls.length ? 'tool_use' : 'end_turn'),
      ...(this.usage ? { usage: this.usage } : {}),
    };
  }
}

/** The Messages API's own headers (version, browser access) and the key, for any request to it. */
export function anthropicHeaders(apiKey: string): Record<string, string> {
  const headers: Record<string, string> = {
    'anthropic-version': '2023-06-01',
    'anthropic-dangerous-direct-browser-access': 'true',
  };
  if (apiKey) headers['x-api-key'] = apiKey;
  return headers;
}

/** `<base>/v1<path>` for an Anthropic endpoint typed as the origin, `…/v1` or `…/v1/messages`. */
export function anthropicUrl(endpoint: string, path: '/messages' | '/models'): string {
  let base = endpoint.trim().replace(/\/+$/, '');
  if (base.endsWith('/messages')) base = base.slice(0, -'/messages'.length);
  return joinEndpoint(base.endsWith('/v1') ? base : `${base}/v1`, path);
}

/**
 * Send the conversation to an Anthropic Messages endpoint: POST `<endpoint>/v1/messages` (the base may end in
 * `/v1` or `/v1/messages`) with `x-api-key`, `anthropic-version: 2023-06-01` and
 * `anthropic-dangerous-direct-browser-access: true` (the header Anthropic requires for CORS requests from a page).
 * @throws ModelError
 */
export async function anthropicComplete(req: ModelRequest): Promise<ModelReply> {
  const headers = { accept: 'text/event-stream', ...anthropicHeaders(req.apiKey) };
  const res = await postJson(
    anthropicUrl(req.endpoint, '/messages'),
    headers,
    anthropicBody(req),
    req.signal,
    req.headers,
  );
  const acc = new AnthropicAccumulator();
  try {
    if (!res.body) throw new ModelError('the model reply has no body', res.status, 'E_MODEL_PROTOCOL');
    let stopped = false;
    for await (const ev of parseSse(res.body)) {
      let data: unknown;
      try {
        data = JSON.parse(ev.data);
      } catch {
        throw new ModelError(
          `the model stream sent an event that is not JSON: ${ev.data.slice(0, 200)}`,
          res.status,
          'E_MODEL_PROTOCOL',
        );
      }
      const type = ev.event !== 'message' ? ev.event : String((data as { type?: unknown })?.type ?? '');
      const delta = acc.push(type, data);
      if (delta) req.onText?.(delta);
      if (type === 'message_stop') {
        stopped = true;
        break;
      }
    }
    if (!stopped) throw new ModelError('the answer stopped mid-way: the stream ended early', res.status, 'E_MODEL_CUT');
    return acc.reply();
  } catch (e) {
    if (req.signal.aborted) throw new ModelError('stopped', 0, 'E_ABORTED');
    if (e instanceof ModelError) throw e;
    throw new ModelError(`the answer stopped mid-way: ${(e as Error).message}`, res.status, 'E_MODEL_CUT');
  }
}
