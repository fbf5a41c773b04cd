// OpenAI Responses API client (input items, function_call / function_call_output, streaming events); browser app,
// trusted side.
import { parseSse } from './sse.js';
import { dataUrl } from './openai.js';
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

/** A user message's `content`: `input_text` for its text and attached files, `input_image` with a `data:` URL. */
function userContent(m: Extract<ChatMessage, { role: 'user' }>): unknown[] {
  return [
    ...(m.text || !m.parts?.length ? [{ type: 'input_text', text: m.text }] : []),
    ...(m.parts ?? []).map((p) =>
      p.type === 'text' ? { type: 'input_text', text: p.text } : { type: 'input_image', image_url: dataUrl(p) },
    ),
  ];
}

/**
 * The request body of POST /v1/responses (https://platform.openai.com/docs/api-reference/responses/create), stateless:
 * `store: false`, the whole history as `input` items every time. System text goes in `instructions`; an assistant
 * reply is a `message` with its text, each of its tool calls a `function_call` item (`call_id`), each result a
 * `function_call_output` item answering it; tools are `{type: "function", name, description, parameters}`;
 * temperature and `max_output_tokens` only when set.
 */
export function responsesBody(req: ModelRequest): Record<string, unknown> {
  const instructions = req.messages
    .filter((m) => m.role === 'system')
    .map((m) => (m as { text: string }).text)
    .filter(Boolean)
    .join('\n\n');
  const input: unknown[] = [];
  for (const m of req.messages) {
    if (m.role === 'user') input.push({ type: 'message', role: 'user', content: userContent(m) });
    else if (m.role === 'assistant') {
      if (m.text) input.push({ type: 'message', role: 'assistant', content: m.text });
      for (const c of m.toolCalls)
        input.push({ type: 'function_call', call_id: c.id, name: c.name, arguments: c.arguments || '{}' });
    } else if (m.role === 'tool') input.push({ type: 'function_call_output', call_id: m.callId, output: m.content });
  }
  const body: Record<string, unknown> = { model: req.model, input, stream: req.stream, store: false };
  if (instructions) body.instructions = instructions;
  if (req.tools.length > 0)
    body.tools = req.tools.map((t) => ({
      type: 'function',
      name: t.name,
      description: t.description,
      parameters: t.parameters,
      strict: false,
    }));
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.maxTokens !== undefined) body.max_output_tokens = req.maxTokens;
  return body;
}

interface Item {
  type: string;
  id?: string;
  call_id?: string;
  name?: string;
  arguments?: string;
  content?: { type?: string; text?: string }[];
}

/**
 * Folds Responses stream events into a reply: `response.output_text.delta` is text; a `function_call` output item
 * (`response.output_item.added`) collects `response.function_call_arguments.delta` pieces, and its final arguments
 * come from `.done` or `response.output_item.done`; `response.completed` / `response.incomplete` end it with usage;
 * `response.failed` and `error` fail it.
 */
export class ResponsesAccumulator {
  text = '';
  stopReason = '';
  usage: Usage | undefined;
  done = false;
  readonly #calls = new Map<number, { id: string; name: string; arguments: string }>();

  /** Apply one event; returns the text delta. @throws ModelError E_MODEL_PROTOCOL for `error` and `response.failed` */
  push(type: string, data: unknown): string {
    const d = (data ?? {}) as {
      output_index?: number;
      item?: Item;
      delta?: unknown;
      arguments?: unknown;
      message?: unknown;
      response?: { status?: string; usage?: Record<string, unknown>; error?: { message?: unknown } | null };
    };
    if (type === 'error' || type === 'response.failed') {
      const msg = type === 'error' ? d.message : d.response?.error?.message;
      throw new ModelError(
        `the model stream reported an error: ${String(msg ?? 'unknown').slice(0, 600)}`,
        200,
        'E_MODEL_PROTOCOL',
      );
    }
    const i = typeof d.output_index === 'number' ? d.output_index : -1;
    if ((type === 'response.output_item.added' || type === 'response.output_item.done') && d.item) {
      if (d.item.type === 'function_call') {
        const c = this.#calls.get(i) ?? { id: '', name: '', arguments: '' };
        c.id = String(d.item.call_id ?? d.item.id ?? (c.id || `call_${i}`));
        c.name = String(d.item.name ?? c.name);
        if (typeof d.item.arguments === 'string' && d.item.arguments) c.arguments = d.item.arguments;
        this.#calls.set(i, c);
      }
      return '';
    }
    if (type === 'response.output_text.delta' && typeof d.delta === 'string') {
      this.text += d.delta;
      return d.delta;
    }
    if (type === 'response.function_call_arguments.delta' && typeof d.delta === 'string') {
      const c = this.#calls.get(i);
      if (c) c.arguments += d.delta;
      return '';
    }
    if (type === 'response.function_call_arguments.done' && typeof d.arguments === 'string') {
      const c = this.#calls.get(i);
      if (c) c.arguments = d.arguments;
      return '';
    }
    if (type === 'response.completed' || type === 'response.incomplete') {
      this.done = true;
      this.stopReason = type === 'response.incomplete' ? 'length' : this.#calls.size ? 'tool_calls' : 'stop';
      const u = d.response?.usage;
      if (u) {
        const input = tokenCount(u.input_tokens);
        const output = tokenCount(u.output_tokens);
        if (input !== undefined || output !== undefined)
          this.usage = { ...(input !== undefined ? { input } : {}), ...(output !== undefined ? { output } : {}) };
      }
    }
    return '';
  }

  /** Fold a whole (non-streamed) response object: its `output` items and usage. */
  whole(r: { output?: unknown; usage?: unknown; status?: unknown }): void {
    const items = Array.isArray(r.output) ? (r.output as Item[]) : [];
    items.forEach((item, i) => {
      if (item?.type === 'message')
        for (const part of item.content ?? [])
          if (part?.type === 'output_text' && typeof part.text === 'string') this.text += part.text;
      if (item?.type === 'function_call') this.push('response.output_item.done', { output_index: i, item });
    });
    this.push(r.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: r });
  }

  reply(): ModelReply {
    const toolCalls: ChatToolCall[] = [...this.#calls.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([, c]) => ({ id: c.id, name: c.name, arguments: c.arguments || '{}' }));
    return {
      text: this.text,
      toolCalls,
      stopReason: this.stopReason || (toolCalls.length ? 'tool_calls' : 'stop'),
      ...(this.usage ? { usage: this.usage } : {}),
    };
  }
}

/**
 * Send the conversation to OpenAI's Responses API: POST `<endpoint>/responses` with `Authorization: Bearer <key>`
 * when a key is set. A stream ends with `response.completed` (or `.incomplete`); one that ends before is cut.
 * @throws ModelError
 */
export async function responsesComplete(req: ModelRequest): Promise<ModelReply> {
  const headers: Record<string, string> = { accept: req.stream ? 'text/event-stream' : 'application/json' };
  if (req.apiKey) headers.authorization = `Bearer ${req.apiKey}`;
  const res = await postJson(
    joinEndpoint(req.endpoint, '/responses'),
    headers,
    responsesBody(req),
    req.signal,
    req.headers,
  );
  const acc = new ResponsesAccumulator();
  try {
    if (!req.stream) {
      const j = (await res.json()) as { output?: unknown; usage?: unknown; status?: unknown; error?: unknown };
      if (!Array.isArray(j.output))
        throw new ModelError('the model reply has no output items', res.status, 'E_MODEL_PROTOCOL');
      acc.whole(j);
      if (acc.text) req.onText?.(acc.text);
      return acc.reply();
    }
    if (!res.body) throw new ModelError('the model reply has no body', res.status, 'E_MODEL_PROTOCOL');
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
      if (acc.done) break;
    }
    if (!acc.done)
      throw new ModelError('the answer stopped mid-way: the stream ended early', res.status, 'E_MODEL_CUT');
    return acc.reply();
  } catch (e) {
    if (req.signal.aborted) throw new ModelError('stopped', 0, 'E_ABORTED');
    if (e instanceof ModelError) throw e;
    throw new ModelError(`the answer stopped mid-way: ${(e as Error).message}`, res.status, 'E_MODEL_CUT');
  }
}
