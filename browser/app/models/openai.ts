// OpenAI Chat Completions client (streaming SSE with tool_calls deltas, and non-streaming); browser app, trusted side.
import { parseSse } from './sse.js';
import {
  ModelError,
  joinEndpoint,
  postJson,
  tokenCount,
  type ChatMessage,
  type ChatPart,
  type ChatToolCall,
  type Usage,
  type ModelReply,
  type ModelRequest,
} from './types.js';

/** The `data:` URL of an image part (OpenAI's `image_url.url`). */
export function dataUrl(p: Extract<ChatPart, { type: 'image' }>): string {
  return `data:${p.mediaType};base64,${p.data}`;
}

/** A user message's `content`: its text alone, or text and image parts (`text`, `image_url` with a data URL). */
function userContent(m: Extract<ChatMessage, { role: 'user' }>): unknown {
  if (!m.parts?.length) return m.text;
  return [
    ...(m.text ? [{ type: 'text', text: m.text }] : []),
    ...m.parts.map((p) =>
      p.type === 'text' ? { type: 'text', text: p.text } : { type: 'image_url', image_url: { url: dataUrl(p) } },
    ),
  ];
}

/**
 * True for OpenAI's own API, which takes the reply limit as `max_completion_tokens` (its reasoning models refuse
 * `max_tokens`); OpenAI-compatible servers (Ollama, llama.cpp, vLLM, LM Studio, OpenRouter) read `max_tokens`.
 */
function isOpenAiItself(endpoint: string): boolean {
  try {
    return new URL(endpoint).hostname === 'api.openai.com';
  } catch {
    return false;
  }
}

/**
 * The request body of POST /v1/chat/completions (https://platform.openai.com/docs/api-reference/chat/create): a user
 * message with attachments has `content` parts (`text`, `image_url` with a `data:` URL); a streamed request asks for
 * the usage chunk (`stream_options.include_usage`); temperature and the reply limit only when set.
 */
export function openaiBody(req: ModelRequest): Record<string, unknown> {
  const messages = req.messages.map((m: ChatMessage) => {
    switch (m.role) {
      case 'system':
        return { role: 'system', content: m.text };
      case 'user':
        return { role: 'user', content: userContent(m) };
      case 'assistant':
        return m.toolCalls.length > 0
          ? {
              role: 'assistant',
              content: m.text || null,
              tool_calls: m.toolCalls.map((c) => ({
                id: c.id,
                type: 'function',
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : { role: 'assistant', content: m.text };
      case 'tool':
        return { role: 'tool', tool_call_id: m.callId, content: m.content };
      default:
        throw new Error(`unknown message role ${(m as { role: string }).role}`);
    }
  });
  const body: Record<string, unknown> = { model: req.model, messages, stream: req.stream };
  if (req.stream) body.stream_options = { include_usage: true };
  if (req.tools.length > 0)
    body.tools = req.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }));
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.maxTokens !== undefined)
    body[isOpenAiItself(req.endpoint) ? 'max_completion_tokens' : 'max_tokens'] = req.maxTokens;
  return body;
}

interface Partial {
  id: string;
  name: string;
  arguments: string;
}

/**
 * Folds streamed `choices[0].delta` objects into a reply: `content` pieces are text; `tool_calls[]` pieces are
 * merged by `index` (the first carries `id` and `function.name`, later ones append to `function.arguments`).
 * Servers that omit `index` (some local servers) are handled by `id`, else by order.
 */
export class OpenAiAccumulator {
  text = '';
  stopReason = '';
  usage: Usage | undefined;
  readonly #calls: Partial[] = [];
  readonly #byIndex = new Map<number, Partial>();

  /** Apply one chunk; returns the text delta (may be empty). @throws ModelError E_MODEL_PROTOCOL for an error chunk */
  push(chunk: unknown): string {
    const c = chunk as {
      error?: { message?: string };
      choices?: { delta?: { content?: unknown; tool_calls?: unknown[] }; finish_reason?: unknown }[];
      usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } | null;
    };
    if (c && typeof c === 'object' && c.error)
      throw new ModelError(
        `the model stream reported an error: ${String(c.error.message ?? 'unknown').slice(0, 600)}`,
        200,
        'E_MODEL_PROTOCOL',
      );
    if (c?.usage && typeof c.usage === 'object') {
      const u = { input: tokenCount(c.usage.prompt_tokens), output: tokenCount(c.usage.completion_tokens) };
      if (u.input !== undefined || u.output !== undefined) this.usage = u;
    }
    const choice = Array.isArray(c?.choices) ? c.choices[0] : undefined;
    if (!choice) return '';
    if (typeof choice.finish_reason === 'string') this.stopReason = choice.finish_reason;
    const d = choice.delta ?? {};
    let delta = '';
    if (typeof d.content === 'string') {
      this.text += d.content;
      delta = d.content;
    }
    for (const raw of Array.isArray(d.tool_calls) ? d.tool_calls : []) {
      const t = raw as { index?: unknown; id?: unknown; function?: { name?: unknown; arguments?: unknown } };
      let p: Partial | undefined;
      if (typeof t.index === 'number') p = this.#byIndex.get(t.index);
      else if (typeof t.id === 'string') p = this.#calls.find((x) => x.id === t.id);
      else p = this.#calls[this.#calls.length - 1];
      if (!p) {
        p = { id: typeof t.id === 'string' ? t.id : `call_${this.#calls.length}`, name: '', arguments: '' };
        this.#calls.push(p);
        if (typeof t.index === 'number') this.#byIndex.set(t.index, p);
      }
      if (typeof t.id === 'string' && t.id) p.id = t.id;
      if (typeof t.function?.name === 'string') p.name += t.function.name;
      if (typeof t.function?.arguments === 'string') p.arguments += t.function.arguments;
    }
    return delta;
  }

  reply(): ModelReply {
    const toolCalls: ChatToolCall[] = this.#calls.map((p) => ({ id: p.id, name: p.name, arguments: p.arguments }));
    return {
      text: this.text,
      toolCalls,
      stopReason: this.stopReason || (toolCalls.length ? 'tool_calls' : 'stop'),
      ...(this.usage ? { usage: this.usage } : {}),
    };
  }
}

/**
 * Send the conversation to an OpenAI-compatible endpoint (OpenAI, llama.cpp server, Ollama, vLLM, LM Studio):
 * POST `<endpoint>/chat/completions` with `Authorization: Bearer <key>` when a key is set. Streaming reads
 * `data:` events until `[DONE]` or the end of the body.
 * @throws ModelError (HTTP status, network/CORS, malformed stream, E_ABORTED when the signal aborts).
 */
export async function openaiComplete(req: ModelRequest): Promise<ModelReply> {
  const headers: Record<string, string> = req.stream ? { accept: 'text/event-stream' } : { accept: 'application/json' };
  if (req.apiKey) headers.authorization = `Bearer ${req.apiKey}`;
  const res = await postJson(
    joinEndpoint(req.endpoint, '/chat/completions'),
    headers,
    openaiBody(req),
    req.signal,
    req.headers,
  );
  const acc = new OpenAiAccumulator();
  try {
    if (!req.stream) {
      const j = (await res.json()) as {
        choices?: { message?: { content?: unknown; tool_calls?: unknown[] }; finish_reason?: unknown }[];
        usage?: unknown;
      };
      const choice = j.choices?.[0];
      if (!choice?.message)
        throw new ModelError('the model reply has no choices[0].message', res.status, 'E_MODEL_PROTOCOL');
      const calls = (choice.message.tool_calls ?? []).map((t, index) => ({ ...(t as object), index }));
      acc.push({
        choices: [
          {
            delta: { content: choice.message.content ?? undefined, tool_calls: calls },
            finish_reason: choice.finish_reason,
          },
        ],
        usage: j.usage,
      });
      if (acc.text) req.onText?.(acc.text);
      return acc.reply();
    }
    if (!res.body) throw new ModelError('the model reply has no body', res.status, 'E_MODEL_PROTOCOL');
    let done = false;
    for await (const ev of parseSse(res.body)) {
      if (ev.data === '[DONE]') {
        done = true;
        break;
      }
      let chunk: unknown;
      try {
        chunk = JSON.parse(ev.data);
      } catch {
        throw new ModelError(
          `the model stream sent an event that is not JSON: ${ev.data.slice(0, 200)}`,
          res.status,
          'E_MODEL_PROTOCOL',
        );
      }
      const delta = acc.push(chunk);
      if (delta) req.onText?.(delta);
    }
    // a stream that ends with neither [DONE] nor a finish_reason was cut mid-way (a proxy, a crash, the network)
    if (!done && !acc.stopReason)
      throw new ModelError('the answer stopped mid-way: the stream ended early', res.status, 'E_MODEL_CUT');
    return acc.reply();
  } catch (e) {
    if (req.signal.aborted) throw new ModelError('stopped', 0, 'E_ABORTED');
    if (e instanceof ModelError) throw e;
    throw new ModelError(`the answer stopped mid-way: ${(e as Error).message}`, res.status, 'E_MODEL_CUT');
  }
}
