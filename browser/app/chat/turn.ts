// One turn of the conversation: model request -> tool calls as pinned tasks -> concurrent runs -> results, bounded
// rounds; browser app, trusted side.
import type { DraftTask, Task } from '../../../protocol/task.js';
import type { ToolRegistry } from '../../../core/revisions/registry.js';
import type { CompileOptions } from '../../../core/revisions/tasks.js';
import { isTyError } from '../../../core/errors.js';
import { anthropicComplete } from '../models/anthropic.js';
import { openaiComplete } from '../models/openai.js';
import { responsesComplete } from '../models/responses.js';
import { resolveAttachments, type FileLoader } from '../attachments/parts.js';
import { withSystemPrompt } from './system.js';
import {
  ModelError,
  type ApiKind,
  type ChatMessage,
  type ChatToolCall,
  type ModelReply,
  type ModelRequest,
  type Usage,
} from '../models/types.js';
import { toChatMessages, type CallOutcome, type FailedCallData } from './convert.js';
import type { ConversationTree } from './tree.js';
import type { ToolRunner } from './tool-runner.js';
import type { TurnJournal } from './journal.js';
import { completeCalls, interruptedOutcome, resultDrafts } from './recover.js';

/** Tool rounds per turn: after this many model replies with tool calls, the turn ends with a notice. */
export const MAX_TOOL_ROUNDS = 8;

/** Where a turn's requests go and with what: one connection and model, the conversation's settings. */
export interface TurnSettings {
  api: ApiKind;
  endpoint: string;
  model: string;
  stream: boolean;
  /** The person's system prompt, put before the root's system text (chat/system.ts). */
  systemPrompt?: string;
  temperature?: number;
  maxTokens?: number;
  /** The connection's extra headers. */
  headers?: Record<string, string>;
  /** Send image attachments (false: a note stands for each image). Default true. */
  images?: boolean;
}

export interface TurnEvents {
  /** A piece of the model's text as it streams. */
  onText(delta: string): void;
  /** Tasks were added to the tree (re-render). */
  onTasks(): void;
  /** A call starts running. */
  onCallStart(call: Task): void;
  /** A call ended (its outcome is shown at once, before the reply's other calls end). */
  onCallEnd(call: Task, outcome: CallOutcome): void;
  /** A notice for the person (the round limit, Stop). */
  onNotice(text: string, kind: 'info' | 'error'): void;
  /** A reply was stored as assistant message `task`, with the usage the provider reported (if any). */
  onReply?(task: Task, usage: Usage | undefined): void;
}

/** Abort reason when the page goes away: calls end as E_INTERRUPTED, streamed text is kept as interrupted. */
export class Interruption extends Error {
  constructor() {
    super('the page was reloaded or closed');
    this.name = 'Interruption';
  }
}

/** How a turn ended: fine, or a model request failed (the app offers what to do next). */
export type TurnEnd = { ok: true } | { ok: false; error: ModelError };

export interface TurnDeps {
  tree: ConversationTree;
  registry: Pick<ToolRegistry, 'resolve'>;
  /** Pins each call's settings revision next to its tool revision (the host's settings store). */
  toolSettings?: CompileOptions['settings'];
  runner: Pick<ToolRunner, 'run' | 'signatures'>;
  settings: TurnSettings;
  /** Read only here, when the request is made, and passed only to the model client. */
  apiKey: () => Promise<string>;
  events: TurnEvents;
  signal: AbortSignal;
  /** Where the turn's state is written as it goes (absent: kept in memory only). */
  journal?: TurnJournal;
  /** Reads attached files by sha-256 (absent: attachments are sent as notes that the file is gone). */
  loadFile?: FileLoader;
  /** Replace the model clients (tests of the loop without a server). */
  complete?: (api: ApiKind, req: ModelRequest) => Promise<ModelReply>;
}

/** Send `req` with the client of `api`. @throws ModelError */
export function complete(api: ApiKind, req: ModelRequest): Promise<ModelReply> {
  if (api === 'anthropic') return anthropicComplete(req);
  return api === 'openai-responses' ? responsesComplete(req) : openaiComplete(req);
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
 * A tool call of the history that no tool message answers (OpenAI: `tool_calls[].id` without a `role: tool` message
 * after it; Anthropic: a `tool_use` without its `tool_result` in the next user message), or undefined. Both APIs refuse
 * such a history with HTTP 400; the app never sends one.
 */
export function unansweredToolCall(messages: ChatMessage[]): string | undefined {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (m.role !== 'assistant' || m.toolCalls.length === 0) continue;
    const answered = new Set<string>();
    for (let j = i + 1; j < messages.length && messages[j]!.role === 'tool'; j++)
      answered.add((messages[j] as { callId: string }).callId);
    const missing = m.toolCalls.find((c) => !answered.has(c.id));
    if (missing) return missing.id;
  }
  return undefined;
}

/**
 * Run `calls` (function-call tasks of one reply) at once through the runner; each call's outcome is reported and
 * journaled the moment it ends, with its duration. A call stopped because the page went away ends as E_INTERRUPTED.
 * Results are appended after the branch's last task in call order. Returns the outcomes.
 */
export async function runCalls(
  d: Pick<TurnDeps, 'tree' | 'registry' | 'runner' | 'events' | 'signal' | 'journal'>,
  calls: Task[],
  known: Map<string, CallOutcome> = new Map(),
): Promise<CallOutcome[]> {
  const { tree, events, signal } = d;
  const callPath = await tree.path();
  const outcomes = await Promise.all(
    calls.map(async (c): Promise<CallOutcome> => {
      const kept = known.get(c.id);
      if (kept) {
        await d.journal?.call(c.id, kept);
        events.onCallEnd(c, kept);
        return kept;
      }
      events.onCallStart(c);
      const t0 = performance.now();
      let o = await d.runner.run(c, callPath, signal);
      if (!o.ok && signal.aborted && signal.reason instanceof Interruption) o = interruptedOutcome();
      o = { ...o, ms: Math.round(performance.now() - t0) };
      await d.journal?.call(c.id, o);
      events.onCallEnd(c, o);
      return o;
    }),
  );
  const drafts = resultDrafts(calls, Object.fromEntries(calls.map((c, i) => [c.id, outcomes[i]])));
  if (drafts.length > 0) await tree.append(tree.record.leaf, drafts, d.registry);
  events.onTasks();
  return outcomes;
}

/**
 * Run a turn from the tree's selected leaf (the person's message, a tool result, or an interrupted answer to
 * continue). Each round: calls left without a result get one (E_INTERRUPTED), the path becomes chat messages (never
 * sent with a tool call that has no result), the visible tool signatures the tool list; the reply is stored as an
 * assistant message; each tool call is compiled to a function-call task pinned to its revision (an unknown name or
 * arguments that are not a JSON object become an error the model receives as the result); all calls of the round run
 * at once (runCalls). Ends when the model replies without tool calls, after MAX_TOOL_ROUNDS rounds, when `signal`
 * aborts (Stop: the stream and every call end with E_ABORTED), or when a request fails: then text streamed before the
 * failure is kept as an assistant message (marked interrupted unless the person stopped it) and the error returned.
 */
export async function runTurn(d: TurnDeps): Promise<TurnEnd> {
  const { tree, events, signal } = d;
  await completeCalls(tree, d.registry);
  for (let round = 0; ; round++) {
    if (round >= MAX_TOOL_ROUNDS) {
      events.onNotice(`Stopped after ${MAX_TOOL_ROUNDS} tool rounds in one turn; send a message to continue.`, 'info');
      return { ok: true };
    }
    const path = await tree.path();
    const messages = withSystemPrompt(toChatMessages(path), d.settings.systemPrompt);
    const dangling = unansweredToolCall(messages);
    if (dangling)
      return {
        ok: false,
        error: new ModelError(
          `the history has a tool call without a result (${dangling}); nothing was sent`,
          0,
          'E_MODEL_PROTOCOL',
        ),
      };
    let streamed = '';
    await d.journal?.begin(tree.record.leaf);
    const sent = await resolveAttachments(messages, d.loadFile ?? (async () => undefined), d.settings.images !== false);
    const req: ModelRequest = {
      endpoint: d.settings.endpoint,
      model: d.settings.model,
      apiKey: await d.apiKey(),
      messages: sent,
      tools: await d.runner.signatures(path),
      stream: d.settings.stream,
      signal,
      ...(d.settings.temperature !== undefined ? { temperature: d.settings.temperature } : {}),
      ...(d.settings.maxTokens !== undefined ? { maxTokens: d.settings.maxTokens } : {}),
      ...(d.settings.headers ? { headers: d.settings.headers } : {}),
      onText: (t) => {
        streamed += t;
        d.journal?.text(streamed);
        events.onText(t);
      },
    };
    let reply: ModelReply;
    try {
      reply = await (d.complete ?? complete)(d.settings.api, req);
    } catch (e) {
      const err =
        e instanceof ModelError ? e : new ModelError(e instanceof Error ? e.message : String(e), 0, 'E_MODEL_PROTOCOL');
      const stopped = signal.aborted && !(signal.reason instanceof Interruption);
      if (streamed) {
        const [t] = await tree.append(
          tree.record.leaf,
          [{ role: 'assistant', content: { type: 'message', text: streamed } }],
          d.registry,
        );
        if (t && !stopped) await tree.markInterrupted(t.id);
      }
      await d.journal?.clear();
      events.onTasks();
      if (stopped) {
        events.onNotice('Stopped.', 'info');
        return { ok: true };
      }
      return { ok: false, error: err.code === 'E_ABORTED' ? new ModelError(err.message, 0, 'E_MODEL_CUT') : err };
    }
    const drafts: Omit<DraftTask, 'parent'>[] = [{ role: 'assistant', content: { type: 'message', text: reply.text } }];
    const [answer] = await tree.append(tree.record.leaf, drafts, d.registry);
    if (answer) events.onReply?.(answer, reply.usage);
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
    if (reply.toolCalls.length === 0) {
      await d.journal?.clear();
      return { ok: true };
    }
    await runCalls(d, calls);
    await d.journal?.clear();
    if (signal.aborted) {
      if (!(signal.reason instanceof Interruption)) events.onNotice('Stopped.', 'info');
      return { ok: true };
    }
  }
}
