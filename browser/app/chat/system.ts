// A conversation's request settings: its system prompt with the app's sentence after it, temperature and reply limit
// checked against each API's range; browser app, trusted side.
import type { ApiKind, ChatMessage } from '../models/types.js';

/**
 * The app's own sentence, the system text at the root of every new conversation: it is added after the person's
 * system prompt, never instead of it.
 */
export const APP_SENTENCE =
  'Tools you call run in a sandbox in the browser of the person you talk to; some ask that person for approval first.';

/** Longest system prompt kept (characters). */
export const MAX_SYSTEM_PROMPT = 20_000;

/**
 * `messages` with the person's system prompt put before the conversation's root system text (the app's sentence), in
 * one system message: `PROMPT\n\nAPP_SENTENCE`. An empty prompt leaves the root text alone.
 */
export function withSystemPrompt(messages: ChatMessage[], prompt: string | undefined): ChatMessage[] {
  const p = (prompt ?? '').trim();
  if (!p) return messages;
  const [first, ...rest] = messages;
  if (first?.role === 'system') return [{ role: 'system', text: first.text ? `${p}\n\n${first.text}` : p }, ...rest];
  return [{ role: 'system', text: p }, ...messages];
}

/** The highest temperature each API takes (OpenAI: 0 to 2; Anthropic: 0 to 1). */
export function maxTemperature(api: ApiKind): number {
  return api === 'anthropic' ? 1 : 2;
}

/** Longest reply limit the app sends (tokens); the provider may allow fewer for a model and says so. */
export const MAX_OUTPUT_TOKENS = 1_000_000;

/**
 * A conversation's temperature and reply limit checked for `api`: unset stays unset (the provider's default), a value
 * outside the API's range is a problem the person sees before anything is sent.
 */
export function requestOptions(
  api: ApiKind,
  o: { temperature?: number; maxTokens?: number },
): { ok: true; temperature?: number; maxTokens?: number } | { ok: false; message: string } {
  const out: { ok: true; temperature?: number; maxTokens?: number } = { ok: true };
  if (o.temperature !== undefined) {
    const max = maxTemperature(api);
    if (!Number.isFinite(o.temperature) || o.temperature < 0 || o.temperature > max)
      return {
        ok: false,
        message: `Temperature ${o.temperature} is outside 0 to ${max}, what the ${api} API takes; change it in this conversation's settings.`,
      };
    out.temperature = o.temperature;
  }
  if (o.maxTokens !== undefined) {
    if (!Number.isInteger(o.maxTokens) || o.maxTokens < 1 || o.maxTokens > MAX_OUTPUT_TOKENS)
      return {
        ok: false,
        message: `Max output tokens must be a whole number from 1 to ${MAX_OUTPUT_TOKENS}; change it in this conversation's settings.`,
      };
    out.maxTokens = o.maxTokens;
  }
  return out;
}
