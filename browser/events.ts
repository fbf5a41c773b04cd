// The browser host's one typed event emitter (calls, questions, sandboxes, tool logs, Python load progress, updates);
// browser host, trusted side.
import type { Asker, AskOutcome } from '../core/ask/router.js';
import type { GateRequest, Question } from '../core/exec/runtime.js';
import type { PythonProgress } from './python/assets.js';

/** Every event the host emits, by name. Times are ms since the epoch; durations in ms. */
export interface HostEventMap {
  /** A call was accepted by `host.invoke` (before validation and the gate). */
  'call-start': { callId: string; tool: string; at: number };
  /** The call ended. `code` is the stable error code when `ok` is false. */
  'call-end': { callId: string; tool: string; revision?: string; ok: boolean; code?: string; durationMs: number };
  /** A question went to the channels that can show it. */
  'question-asked': {
    id: string;
    tool: string;
    revision: string;
    capability: GateRequest['kind'];
    target?: string;
    at: number;
  };
  /**
   * The question was decided: `allow` (with its scope and channel) or `deny` (with the reason: refused, timeout,
   * no-channel, aborted).
   */
  'question-answered': {
    id: string;
    tool: string;
    allow: boolean;
    scope?: 'once' | 'session' | 'permanent';
    channel?: string;
    reason?: string;
    durationMs: number;
  };
  /** A sandbox (frame + worker) is ready for `revision`. */
  'sandbox-started': { tool: string; revision: string; runtime: 'javascript' | 'python'; startMs: number };
  /** A sandbox was destroyed; `reason` says why (revision changed, timeout, its frame stopped, pool limit, ...). */
  'sandbox-destroyed': { tool: string; revision: string; reason: string; code?: string };
  /** A line tool code wrote with console.*; `callId` is the call running in that sandbox when it was written. */
  log: { callId?: string; tool: string; revision: string; level: 'debug' | 'info' | 'warn' | 'error'; text: string };
  /** Python runtime load progress (fetching and verifying the files, once per page; then each sandbox starting). */
  'python-progress': PythonProgress;
  /** A new revision was installed under a name whose active revision is another: the app may offer "activate?". */
  'update-available': { name: string; active: string; revision: string };
  /**
   * One request to a remote MCP server: server, method, tool name and outcome only (never arguments, answers or header
   * values).
   */
  'mcp-request': { server: string; method: string; name?: string; outcome: string };
  /** An MCP server's connection state changed (`host.mcp.servers()` for all of them). */
  'mcp-state': { server: string; state: 'idle' | 'connecting' | 'connected' | 'failed'; code?: string };
}
export type HostEventName = keyof HostEventMap;
export type HostEventListener<K extends HostEventName> = (event: HostEventMap[K]) => void;

/** A small typed emitter: `on` returns the unsubscribe function; a listener's failure never reaches the host. */
export class HostEvents {
  readonly #listeners = new Map<HostEventName, Set<(e: never) => void>>();

  on<K extends HostEventName>(name: K, fn: HostEventListener<K>): () => void {
    let set = this.#listeners.get(name);
    if (!set) this.#listeners.set(name, (set = new Set()));
    set.add(fn as (e: never) => void);
    return () => this.off(name, fn);
  }

  off<K extends HostEventName>(name: K, fn: HostEventListener<K>): void {
    this.#listeners.get(name)?.delete(fn as (e: never) => void);
  }

  emit<K extends HostEventName>(name: K, event: HostEventMap[K]): void {
    for (const fn of [...(this.#listeners.get(name) ?? [])]) {
      try {
        (fn as HostEventListener<K>)(event);
      } catch {
        /* a listener's failure is its own */
      }
    }
  }
}

/** An Asker that reports each question's asking and its outcome on `events`. */
export class ObservedAsker implements Asker {
  constructor(
    private readonly inner: Asker,
    private readonly events: HostEvents,
  ) {}

  async ask(q: Question, signal?: AbortSignal): Promise<AskOutcome> {
    const t0 = Date.now();
    const f = q.facts;
    this.events.emit('question-asked', {
      id: q.id,
      tool: f?.tool ?? '',
      revision: f?.revision ?? '',
      capability: f?.capability ?? 'tool',
      ...(f?.target !== undefined ? { target: f.target } : {}),
      at: t0,
    });
    const out = await this.inner.ask(q, signal);
    this.events.emit('question-answered', {
      id: q.id,
      tool: f?.tool ?? '',
      allow: out.allow,
      ...(out.allow ? { scope: out.scope } : { reason: out.reason }),
      ...(out.channel !== undefined ? { channel: out.channel } : {}),
      durationMs: Date.now() - t0,
    });
    return out;
  }
}
