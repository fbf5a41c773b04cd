// Task lineage -> provider-neutral chat messages, and tool results as the model sees them; browser app, trusted side.
import type { Task } from '../../../protocol/task.js';
import type { ChatMessage, ChatToolCall } from '../models/types.js';

/** What a toolresult task holds in `result`; `ms`: how long the call ran (shown in its card, not sent to the model). */
export type CallOutcome = ({ ok: true; value: unknown } | { ok: false; error: { code: string; message: string } }) & {
  ms?: number;
};

/**
 * An `error` task that stands for a tool call that could not become a function-call task (unknown tool, arguments not a
 * JSON object).
 */
export interface FailedCallData {
  call: { name: string; arguments: string };
}

/** The provider-facing call id of a function-call task (stable: derived from the task's content id). */
export function callIdOf(taskIdValue: string): string {
  return `call_${taskIdValue.slice(-24)}`;
}

/** The text a model receives as a tool's result: the JSON value, or `{"error":{code,message}}`. */
export function outcomeText(o: CallOutcome): string {
  return o.ok ? JSON.stringify(o.value ?? null) : JSON.stringify({ error: o.error });
}

export function failedCall(t: Task): FailedCallData['call'] | undefined {
  if (t.content.type !== 'error') return undefined;
  const d = t.content.error.data as Partial<FailedCallData> | undefined;
  return d && typeof d === 'object' && d.call && typeof d.call.name === 'string'
    ? { name: d.call.name, arguments: String(d.call.arguments ?? '') }
    : undefined;
}

/**
 * Turn the path of a conversation (root first) into chat messages. Tool definitions are left out (the model
 * sees only their compiled signatures, in the request's tool list). An assistant message followed by function
 * calls becomes one assistant message with tool calls; each toolresult becomes a tool message answering its
 * call; a failed call becomes a tool call plus an error result right after the calls of its message.
 */
export function toChatMessages(path: Task[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  const names = new Map<string, string>();
  let current: { role: 'assistant'; text: string; toolCalls: ChatToolCall[] } | undefined;
  let deferred: ChatMessage[] = [];
  const flush = () => {
    out.push(...deferred);
    deferred = [];
  };
  const assistant = () => {
    if (!current) {
      current = { role: 'assistant', text: '', toolCalls: [] };
      out.push(current);
    }
    return current;
  };
  for (const t of path) {
    const c = t.content;
    if (c.type === 'tooldefinition') continue;
    if (c.type === 'functioncall') {
      const id = callIdOf(t.id);
      names.set(t.id, c.name);
      assistant().toolCalls.push({ id, name: c.name, arguments: JSON.stringify(c.arguments) });
      continue;
    }
    const failed = failedCall(t);
    if (failed) {
      const id = callIdOf(t.id);
      assistant().toolCalls.push({ id, name: failed.name, arguments: failed.arguments || '{}' });
      const err = t.content.type === 'error' ? t.content.error : { code: 'E_TOOL_FAILED', message: '' };
      deferred.push({
        role: 'tool',
        callId: id,
        name: failed.name,
        content: outcomeText({ ok: false, error: { code: String(err.code), message: err.message } }),
        isError: true,
      });
      continue;
    }
    if (c.type === 'toolresult') {
      flush();
      const o = c.result as CallOutcome;
      const callTask = c.callTask ?? '';
      out.push({
        role: 'tool',
        callId: callIdOf(callTask),
        name: names.get(callTask) ?? '',
        content: outcomeText(o),
        isError: !o?.ok,
      });
      continue;
    }
    flush();
    current = undefined;
    if (c.type === 'message') {
      if (t.role === 'system') out.push({ role: 'system', text: c.text });
      else if (t.role === 'user')
        out.push({ role: 'user', text: c.text, ...(c.attachments?.length ? { attachments: c.attachments } : {}) });
      else if (t.role === 'assistant') {
        current = { role: 'assistant', text: c.text, toolCalls: [] };
        out.push(current);
      }
    }
    // Other error tasks (a failed model request) are not sent to the model.
  }
  flush();
  return out;
}
