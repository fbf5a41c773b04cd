// Provider-neutral chat shapes the model clients speak (OpenAI Chat Completions, Anthropic Messages); browser app,
// trusted side.
import type { ToolSignature } from '../../../protocol/task.js';

/** One tool call the model made: `arguments` is the raw JSON text the model produced (parsed later). */
export interface ChatToolCall {
  id: string;
  name: string;
  arguments: string;
}

export type ChatMessage =
  | { role: 'system'; text: string }
  | { role: 'user'; text: string }
  | { role: 'assistant'; text: string; toolCalls: ChatToolCall[] }
  | { role: 'tool'; callId: string; name: string; content: string; isError: boolean };

export type ApiKind = 'openai' | 'anthropic';

export interface ModelRequest {
  /** Base URL as the person typed it, e.g. `http://127.0.0.1:11434/v1` or `https://api.anthropic.com`. */
  endpoint: string;
  model: string;
  /** Sent only in this request's authentication header; empty: no header. */
  apiKey: string;
  messages: ChatMessage[];
  tools: ToolSignature[];
  /** Stream the reply (SSE); false: one JSON reply (OpenAI only; Anthropic always streams here). */
  stream: boolean;
  signal: AbortSignal;
  /** Called with each piece of text as it arrives. */
  onText?: (delta: string) => void;
  /** Longest reply, tokens (default 4096). */
  maxTokens?: number;
}

export interface ModelReply {
  text: string;
  toolCalls: ChatToolCall[];
  /** The provider's reason (`stop`, `tool_calls`, `end_turn`, `tool_use`, `length`...). */
  stopReason: string;
}

/** A model request that failed: HTTP status (0: network or CORS), a short message for the conversation. */
export class ModelError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: 'E_MODEL_HTTP' | 'E_MODEL_NETWORK' | 'E_MODEL_PROTOCOL' | 'E_ABORTED' = 'E_MODEL_HTTP',
  ) {
    super(message);
    this.name = 'ModelError';
  }
}

/** POST JSON with no cookies and no referrer; maps failures to ModelError. */
export async function postJson(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  signal: AbortSignal,
): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal,
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
      cache: 'no-store',
      mode: 'cors',
    });
  } catch {
    if (signal.aborted) throw new ModelError('stopped', 0, 'E_ABORTED');
    throw new ModelError(
      `cannot reach ${url}: network error, or the server does not allow this app's origin (CORS)`,
      0,
      'E_MODEL_NETWORK',
    );
  }
  if (!res.ok) {
    let detail = '';
    try {
      detail = (await res.text()).slice(0, 600);
    } catch {
      /* body unreadable */
    }
    throw new ModelError(`the model endpoint answered HTTP ${res.status}${detail ? `: ${detail}` : ''}`, res.status);
  }
  return res;
}

/** `base` plus `suffix` unless the base already ends with it (people paste either form). */
export function joinEndpoint(base: string, suffix: string): string {
  const b = base.trim().replace(/\/+$/, '');
  return b.endsWith(suffix) ? b : `${b}${suffix}`;
}
