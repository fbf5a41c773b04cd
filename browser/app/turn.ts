// One turn of the conversation: model request -> tool calls as pinned tasks -> concurrent runs -> results, bounded
// rounds; browser app, trusted side.
import type { DraftTask, Task } from '../../protocol/task.js';
import type { ToolRegistry } from '../../core/revisions/registry.js';
import type { CompileOptions } from '../../core/revisions/tasks.js';
import { isTyError } from '../../core/errors.js';
import { anthropicComplete } from './models/anthropic.js';
import { openaiComplete } from './models/openai.js';
import { ModelError, type ApiKind, type ChatToolCall, type ModelReply, type ModelRequest } from './models/types.js';
import { toChatMessages, type CallOutcome, type FailedCallData } from './convert.js';
import type { ConversationTree } from './tree.js';
import type { ToolRunner } from './tool-runner.js';

/** Tool rounds per turn: after this many model replies with tool calls, the turn ends with a notice. */
export const MAX_TOOL_ROUNDS = 8;

export interface TurnSettings {
  api: ApiKind;
  endpoint: string;
  model: string;
  stream: boolean;
}

export interface TurnEvents {
  /** A piece of the model's text as it streams. */
  onText(delta: string): void;
  /** Tasks were added to the tree (re-render). */
  onTasks(): void;
  /** Calls started / finished (task ids). */
  onCalls(running: Set<string>): void;
  /** A notice for the person (round limit, model error). */
  onNotice(text: string, kind: 'info' | 'error'): void;
}

export interface TurnDeps {
  tree: ConversationTree;
  registry: Pick<ToolRegistry, 'resolve'>;
  /** Pins each call's settings revision next to its tool revision (the host's settings store). */
  toolSettings?: CompileOptions['settings'];
  runner: ToolRunner;
  settings: TurnSettings;
  /** Read only here, when the request is made, and passed only to the model client. */
  apiKey: () => Promise<string>;
  events: TurnEvents;
  signal: AbortSignal;
  /** Replace the model clients (tests of the loop without a server). */
  complete?: (api: ApiKind, req: ModelRequest) => Promise<ModelReply>;
}

function complete(api: ApiKind, req: ModelRequest): Promise<ModelReply> {
  return api === 'anthropic' ? anthropicComplete(req) : openaiComplete(req);
}

/** A draft for one model tool call: a function call when the arguments are a JSON object, else a failed call. */
function callDraft(c: ChatToolCall): Omit<DraftTask, 'parent'> {
  let args: unknown;
  try {
    args = c.arguments.trim() === '' ? {} : JSON.parse(c.arguments);
  } catch (e) {
    return failedDraft(c, 'E_INVALID_ARGS', `the arguments are not JSON: ${(e as Error).message}`);
  }
  if (!args || typeof args !== 'object' || Array.isArray(args))
    return failedDraft(c, 'E_INVALID_ARGS', 'the arguments must be a JSON object');
  return {
    role: 'assistant',
    content: { type: 'functioncall', name: c.name, arguments: args as Record<string, unknown> },
  };
}

function failedDraft(c: ChatToolCall, code: string, message: string): Omit<DraftTask, 'parent'> {
  const data: FailedCallData = { call: { name: c.name.slice(0, 200), arguments: c.arguments.slice(0, 100_000) } };
  return { role: 'assistant', content: { type: 'error', error: { code, message: message.slice(0, 4000), data } } };
}

/**
 * Run a turn from the tree's selected leaf (which is the person's message). Each round: the path becomes chat
 * messages, the visible tool signatures the tool list; the reply is stored as an assistant message; each tool
 * call is compiled to a function-call task pinned to its revision (an unknown name or arguments that are not a
 * JSON object become an error the model receives as the result); all calls of the round run at once; their
 * results are stored in call order. Ends when the model replies without tool calls, after MAX_TOOL_ROUNDS
 * rounds, on a model error, or when `signal` aborts (Stop: the stream and every call end with E_ABORTED).
 */
export async function runTurn(d: TurnDeps): Promise<void> {
  const { tree, events, signal } = d;
  for (let round = 0; ; round++) {
    if (round >= MAX_TOOL_ROUNDS) {
      events.onNotice(`Stopped after ${MAX_TOOL_ROUNDS} tool rounds in one turn; send a message to continue.`, 'info');
      return;
    }
    const path = await tree.path();
    const req: ModelRequest = {
      endpoint: d.settings.endpoint,
      model: d.settings.model,
      apiKey: await d.apiKey(),
      messages: toChatMessages(path),
      tools: await d.runner.signatures(path),
      stream: d.settings.stream,
      signal,
      onText: (t) => events.onText(t),
    };
    let reply: ModelReply;
    let streamed = '';
    const onText = req.onText!;
    req.onText = (t) => {
      streamed += t;
      onText(t);
    };
    try {
      reply = await (d.complete ?? complete)(d.settings.api, req);
    } catch (e) {
      const stopped = signal.aborted || (e instanceof ModelError && e.code === 'E_ABORTED');
      if (streamed)
        await tree.append(
          tree.record.leaf,
          [{ role: 'assistant', content: { type: 'message', text: streamed } }],
          d.registry,
        );
      events.onTasks();
      events.onNotice(stopped ? 'Stopped.' : e instanceof Error ? e.message : String(e), stopped ? 'info' : 'error');
      return;
    }
    const drafts: Omit<DraftTask, 'parent'>[] = [{ role: 'assistant', content: { type: 'message', text: reply.text } }];
    const [message] = await tree.append(tree.record.leaf, drafts, d.registry);
    // Each call is compiled on its own, so one that cannot be pinned (unknown tool) does not take the others down.
    const calls: Task[] = [];
    for (const c of reply.toolCalls) {
      let t: Task;
      try {
        [t] = (await tree.append(tree.record.leaf, [callDraft(c)], d.registry, d.toolSettings)) as [Task];
      } catch (e) {
        const code = isTyError(e) ? (e.code === 'E_UNPINNED_TASK' ? 'E_UNKNOWN_TOOL' : e.code) : 'E_INVALID_TASK';
        [t] = (await tree.append(
          tree.record.leaf,
          [failedDraft(c, code, `${c.name.slice(0, 64)}: ${isTyError(e) ? e.message : String(e)}`)],
          d.registry,
        )) as [Task];
      }
      if (t.content.type === 'functioncall') calls.push(t);
    }
    events.onTasks();
    if (reply.toolCalls.length === 0) return;
    void message;
    const callPath = await tree.path();
    const running = new Set(calls.map((c) => c.id));
    events.onCalls(new Set(running));
    const outcomes = await Promise.all(
      calls.map(async (c): Promise<CallOutcome> => {
        try {
          return await d.runner.run(c, callPath, signal);
        } finally {
          running.delete(c.id);
          events.onCalls(new Set(running));
        }
      }),
    );
    const results: Omit<DraftTask, 'parent'>[] = calls.map((c, i) => {
      const o = outcomes[i]!;
      const rev = c.content.type === 'functioncall' ? c.content.toolRevision : undefined;
      return {
        role: 'function',
        state: o.ok ? 'completed' : 'failed',
        content: { type: 'toolresult', callTask: c.id, ...(rev ? { toolRevision: rev } : {}), result: o },
      };
    });
    if (results.length > 0) await tree.append(tree.record.leaf, results, d.registry);
    events.onTasks();
    if (signal.aborted) {
      events.onNotice('Stopped.', 'info');
      return;
    }
  }
}
