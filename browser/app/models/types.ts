// Provider-neutral chat shapes the model clients speak (OpenAI Chat Completions, Anthropic Messages); browser app,
// trusted side.
import type { Attachment, ToolSignature } from '../../../protocol/task.js';

/** One tool call the model made: `arguments` is the raw JSON text the model produced (parsed later). */
export interface ChatToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** An image type both APIs take as an image part (OpenAI `image_url` data URL, Anthropic `image` base64 source). */
export type ImageMediaType = 'image/png' | 'image/jpeg' | 'image/webp' | 'image/gif';

/**
 * What a person's message carries beyond its text, as the model receives it: an attached file's text (or, for a file
 * handed to tools, the reference that stands for it), or an image as base64 (no `data:` prefix).
 */
export type ChatPart = { type: 'text'; text: string } | { type: 'image'; mediaType: ImageMediaType; data: string };

export type ChatMessage =
  | { role: 'system'; text: string }
  | {
      role: 'user';
      text: string;
      /** Attachments as the model receives them (chat/attachments.ts resolves `attachments` into these). */
      parts?: ChatPart[];
      /** Attachments by reference, before their content is read (toChatMessages puts them here). */
      attachments?: Attachment[];
    }
  | { role: 'assistant'; text: string; toolCalls: ChatToolCall[] }
  | { role: 'tool'; callId: string; name: string; content: string; isError: boolean };

/**
 * The wire format of a connection: `openai` Chat Completions (OpenAI and every OpenAI-compatible server), `anthropic`
 * Messages, `openai-responses` OpenAI's Responses API.
 */
export type ApiKind = 'openai' | 'anthropic' | 'openai-responses';

export const API_KINDS: readonly ApiKind[] = ['openai', 'anthropic', 'openai-responses'];

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
  /** Longest reply, tokens. Unset: the provider's default (Anthropic, which requires one: 4096). */
  maxTokens?: number;
  /** Sampling temperature; unset: the provider's default. */
  temperature?: number;
  /**
   * The connection's extra headers (e.g. OpenRouter's `X-Title`); the client's own headers (authentication, version,
   * content type) are set after them and win.
   */
  headers?: Record<string, string>;
}

/** Tokens a reply used, as the provider reported them (absent: it reported nothing; never estimated). */
export interface Usage {
  /** Tokens of the request (prompt), cache reads and writes included. */
  input?: number;
  /** Tokens of the reply. */
  output?: number;
}

export interface ModelReply {
  text: string;
  toolCalls: ChatToolCall[];
  /** The provider's reason (`stop`, `tool_calls`, `end_turn`, `tool_use`, `length`...). */
  stopReason: string;
  usage?: Usage;
}

/** A non-negative integer token count from a provider's usage object, or undefined. */
export function tokenCount(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;
}

/** Why a model request failed (the app's own codes, never on a wire; docs/app.md "When a request fails"). */
export type ModelErrorCode = 'E_MODEL_HTTP' | 'E_MODEL_NETWORK' | 'E_MODEL_PROTOCOL' | 'E_MODEL_CUT' | 'E_ABORTED';

/**
 * A model request that failed: HTTP status (0: network or CORS), a short message for the conversation, the wait the
 * server asked for (`Retry-After`, ms) and, for a stream cut mid-way (E_MODEL_CUT), the text received before it.
 */
export class ModelError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: ModelErrorCode = 'E_MODEL_HTTP',
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'ModelError';
  }
}

/**
 * The wait an HTTP `Retry-After` value asks for, in ms: delay-seconds or an HTTP-date (RFC 9110 §10.2.3), measured
 * from `now` (ms since the epoch); undefined for a missing or unreadable value. A date in the past is 0.
 */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d{1,10}$/.test(v)) return Number(v) * 1000;
  // an HTTP-date starts with a day name (IMF-fixdate, RFC 850 or asctime); Date.parse alone would read "-3" as a year
  if (!/^[A-Za-z]{3}/.test(v)) return undefined;
  const t = Date.parse(v);
  return Number.isFinite(t) ? Math.max(0, t - now) : undefined;
}

/** The human part of a provider's error body (OpenAI `{error:{message}}`, Anthropic `{type,error:{message}}`). */
export function providerMessage(body: string): string {
  try {
    const j = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
    const m = typeof j.error === 'object' ? j.error?.message : typeof j.error === 'string' ? j.error : j.message;
    if (typeof m === 'string' && m.trim()) return m.trim().slice(0, 300);
  } catch {
    /* not JSON: the text itself */
  }
  return body.trim().slice(0, 300);
}

/**
 * A request to a model endpoint with no cookies and no referrer (a POST of JSON when `body` is given, else a GET);
 * maps failures to ModelError. The connection's extra headers go first, `headers` (the client's own) after them.
 */
export async function requestJson(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  signal: AbortSignal,
  extra: Record<string, string> = {},
): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { ...extra, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal,
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
      cache: 'no-store',
      mode: 'cors',
      redirect: 'error',
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
      detail = providerMessage(await res.text());
    } catch {
      /* body unreadable */
    }
    throw new ModelError(
      `the model endpoint answered HTTP ${res.status}${detail ? `: ${detail}` : ''}`,
      res.status,
      'E_MODEL_HTTP',
      parseRetryAfter(res.headers.get('retry-after')),
    );
  }
  return res;
}

/** POST JSON (requestJson with a body). */
export function postJson(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  signal: AbortSignal,
  extra: Record<string, string> = {},
): Promise<Response> {
  return requestJson(url, headers, body, signal, extra);
}

/** `base` plus `suffix` unless the base already ends with it (people paste either form). */
export function joinEndpoint(base: string, suffix: string): string {
  const b = base.trim().replace(/\/+$/, '');
  return b.endsWith(suffix) ? b : `${b}${suffix}`;
}
