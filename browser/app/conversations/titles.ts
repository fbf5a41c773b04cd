// A conversation's title written by the model after its first exchange, when the person allows it; browser app,
// trusted side.
import type { ChatMessage, ModelReply, ModelRequest } from '../models/types.js';
import { cleanModelTitle } from './groups.js';

/** What the model is asked (after the first question and answer). */
export const TITLE_REQUEST = 'Reply with a title for this conversation: at most 6 words, no quotes, nothing else.';

/** Longest question and answer sent for a title (characters each). */
const EXCERPT = 2000;

/**
 * The messages of a title request: the first question and answer (cut to EXCERPT characters each), then the request;
 * a valid history for every API (user, assistant, user).
 */
export function titleMessages(question: string, answer: string): ChatMessage[] {
  return [
    { role: 'user', text: question.slice(0, EXCERPT) || '(files only)' },
    { role: 'assistant', text: answer.slice(0, EXCERPT).trimEnd() || '(no text)', toolCalls: [] },
    { role: 'user', text: TITLE_REQUEST },
  ];
}

/**
 * Ask the model for a title: one short request without tools, to the connection and model that answered, with the
 * same key. Undefined when it fails or says nothing usable (the first words stay).
 */
export async function askTitle(
  send: (req: ModelRequest) => Promise<ModelReply>,
  base: Omit<ModelRequest, 'messages' | 'tools' | 'stream' | 'onText' | 'maxTokens' | 'temperature'>,
  question: string,
  answer: string,
): Promise<{ title: string; reply: ModelReply } | undefined> {
  try {
    const reply = await send({
      ...base,
      messages: titleMessages(question, answer),
      tools: [],
      stream: false,
      maxTokens: 60,
    });
    const title = cleanModelTitle(reply.text);
    return title ? { title, reply } : undefined;
  } catch {
    return undefined;
  }
}
