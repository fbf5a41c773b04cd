// The bridge's own tools/call (and input-taking prompts/get) path of one upstream session: requests written on the
// session's transport and answered without the SDK Client's schema pass, with their progress, deadlines and
// cancellation; core, trusted side.
import {
  ProtocolError,
  ProtocolErrorCode,
  type CallToolResult,
  type JSONRPCMessage,
} from '@modelcontextprotocol/client';
import { TyError } from '../../errors.js';
import { checkStructuredContent } from '../bridge/args.js';
import { parseInputRequired } from '../input/required.js';
import { ENVELOPE_CAPABILITIES_KEY, ENVELOPE_VERSION_KEY } from '../wire/messages.js';
import { ENVELOPE_CLIENT_INFO_KEY, checkToolResult } from '../wire/tool-call.js';
import {
  CALL_ID,
  CLIENT_INFO,
  type CallInput,
  type CancelSignal,
  type InputRequiredAnswer,
  type PendingCall,
  type UpstreamTool,
} from './options.js';

/** A request the session could not answer because it ended first (E_MCP_ENDED). */
export function ended(server: string): TyError {
  return new TyError(
    'E_MCP_ENDED',
    `the session with server "${server}" ended before this request was answered; the next call starts a new one`,
  );
}

/** What the own-call path needs of its session (core/mcp/upstream/session.ts UpstreamSession). */
export interface CallHost {
  /** The server's name (in error messages). */
  readonly server: string;
  /** A call's timeout, restarted on each progress, ms. */
  readonly timeoutMs: number;
  era(): 'modern' | 'legacy' | undefined;
  protocolVersion(): string | undefined;
  alive(): boolean;
  /** A tool from the session's cached list (its outputSchema and task support). */
  tool(name: string): UpstreamTool | undefined;
  /** Write one message on the session's transport. */
  send(message: JSONRPCMessage): Promise<void>;
  /** Why the transport ended the session, when it says. */
  endReason(): TyError | undefined;
  /** The error of a request the server did not answer in time. */
  timedOut(method: string): TyError;
  /** End the session (a server that did not answer in time is taken as hung). */
  close(reason: TyError): Promise<void>;
  /** The server's elicitations in flight: while a person answers one, no call times out. */
  elicitations(): number;
}

/** One session's own calls in flight, with one deadline timer for all of them. */
export class OwnCalls {
  /** Own requests in flight, by id (CALL_ID + a sequence number). */
  readonly pending = new Map<string, PendingCall>();
  private seq = 0;
  private sweepTimer: ReturnType<typeof setTimeout> | undefined;
  /** Progress callbacks by our own progress token (relayed as they arrive, before the result). */
  private readonly progress = new Map<string, (p: { progress: number; total?: number; message?: string }) => void>();

  constructor(private readonly host: CallHost) {}

  /**
   * A server's `notifications/progress` with a string token (ours are strings; the SDK Client's are numbers): relayed
   * at once to its call, if it is one in flight, and never passed on. False for any other message.
   */
  takeProgress(m: JSONRPCMessage): boolean {
    const n = m as {
      method?: string;
      params?: { progressToken?: unknown; progress?: unknown; total?: unknown; message?: unknown };
    };
    if (n.method !== 'notifications/progress' || typeof n.params?.progressToken !== 'string') return false;
    const cb = this.progress.get(n.params.progressToken);
    if (cb && typeof n.params.progress === 'number') {
      const p: { progress: number; total?: number; message?: string } = { progress: n.params.progress };
      if (typeof n.params.total === 'number') p.total = n.params.total;
      if (typeof n.params.message === 'string') p.message = n.params.message;
      cb(p);
    }
    return true;
  }

  /** A response to an own request (its id starts with CALL_ID): it settles that call, never the SDK Client's. */
  takeResponse(m: JSONRPCMessage): boolean {
    const id = (m as { id?: unknown }).id;
    if ((m as { method?: unknown }).method !== undefined || typeof id !== 'string' || !id.startsWith(CALL_ID))
      return false;
    this.pending.get(id)?.settle(m as Record<string, unknown>);
    return true;
  }

  /**
   * One own request (`tools/call`, or `prompts/get` with `method`); see UpstreamSession.callTool for what is checked.
   * @throws ProtocolError with the server's JSON-RPC error, TyError E_MCP (malformed result, session ended),
   *   E_MCP_TIMEOUT, E_ABORTED (signal).
   */
  async call(
    name: string,
    args: Record<string, unknown>,
    opts: {
      signal?: CancelSignal;
      onprogress?: (p: { progress: number; total?: number; message?: string }) => void;
      input?: CallInput;
      onInput?: PendingCall['input'];
      method?: 'prompts/get';
    } = {},
  ): Promise<CallToolResult | InputRequiredAnswer> {
    const method = opts.method ?? 'tools/call';
    const tool = method === 'tools/call' ? this.host.tool(name) : undefined;
    if (tool?.execution?.taskSupport === 'required')
      throw new ProtocolError(ProtocolErrorCode.InvalidRequest, `Tool "${name}" requires task-based execution.`);
    if (!this.host.alive()) throw this.host.endReason() ?? ended(this.host.server);
    const signal = opts.signal;
    if (signal?.aborted) throw new TyError('E_ABORTED', 'the call was cancelled');
    const id = `${CALL_ID}${++this.seq}`;
    const params: Record<string, unknown> = { name, arguments: args };
    const input = opts.input;
    // 2026-07-28: every request carries its version and the client's capabilities in `_meta`: none, or (a call
    // that may take input) the kinds of input the bridge can answer or relay for this call
    const meta: Record<string, unknown> | undefined =
      this.host.era() === 'modern'
        ? {
            [ENVELOPE_VERSION_KEY]: this.host.protocolVersion(),
            [ENVELOPE_CAPABILITIES_KEY]: input?.capabilities ?? {},
            [ENVELOPE_CLIENT_INFO_KEY]: CLIENT_INFO,
          }
        : undefined;
    if (this.host.era() === 'modern' && input?.responses !== undefined) params.inputResponses = input.responses;
    if (this.host.era() === 'modern' && input?.requestState !== undefined) params.requestState = input.requestState;
    if (meta !== undefined) params._meta = meta;
    const msg = await new Promise<Record<string, unknown> | Error>((resolve) => {
      const call: PendingCall = {
        deadline: 0,
        settle: (m) => {
          if (!this.pending.delete(id)) return;
          signal?.removeEventListener('abort', onAbort);
          this.progress.delete(id);
          resolve(m);
        },
        cancel: (reason) =>
          void this.host
            .send({
              jsonrpc: '2.0',
              method: 'notifications/cancelled',
              params: { requestId: id, reason },
            } as JSONRPCMessage)
            .catch(() => undefined),
        ...(opts.onInput !== undefined ? { input: opts.onInput } : {}),
      };
      const onAbort = (): void => {
        call.cancel('the client cancelled the call');
        call.settle(new TyError('E_ABORTED', 'the call was cancelled'));
      };
      this.pending.set(id, call);
      if (opts.onprogress) {
        const cb = opts.onprogress;
        params._meta = { ...meta, progressToken: id };
        this.progress.set(id, (p) => {
          call.deadline = Date.now() + this.host.timeoutMs;
          cb(p);
        });
      }
      // sent first, the bookkeeping after: nothing can answer before this synchronous code returns
      this.host
        .send({ jsonrpc: '2.0', id, method, params } as JSONRPCMessage)
        .catch(() => call.settle(this.host.endReason() ?? ended(this.host.server)));
      if (!this.pending.has(id)) return;
      signal?.addEventListener('abort', onAbort, { once: true });
      call.deadline = Date.now() + this.host.timeoutMs;
      if (this.sweepTimer === undefined) this.armSweep(this.host.timeoutMs);
    });
    if (msg instanceof Error) throw msg;
    if (msg.error !== undefined) {
      const e = (typeof msg.error === 'object' && msg.error !== null ? msg.error : {}) as {
        code?: unknown;
        message?: unknown;
        data?: unknown;
      };
      throw new ProtocolError(
        typeof e.code === 'number' && Number.isSafeInteger(e.code) ? e.code : ProtocolErrorCode.InternalError,
        typeof e.message === 'string' ? e.message : 'the server sent an error',
        e.data,
      );
    }
    // 2026-07-28 results say what they are: a complete one is a result; `input_required` (the server asks for
    // input) is handed back, checked, to a caller that can take input, and refused for any other
    const rt = (msg.result as { resultType?: unknown } | undefined)?.resultType;
    if (rt === 'input_required' && input !== undefined && this.host.era() === 'modern') {
      const parsed = parseInputRequired(msg.result);
      if (!parsed.ok)
        throw new TyError(
          'E_MCP',
          `server "${this.host.server}" sent an input_required result that is not MCP's: ${parsed.message}`,
        );
      return { resultType: 'input_required', ...parsed.value };
    }
    if (rt !== undefined && rt !== 'complete')
      throw new TyError(
        'E_MCP',
        `server "${this.host.server}" answered tools/call with resultType "${String(rt).slice(0, 40)}"; the bridge takes only complete results (it answers no server-to-client request)`,
      );
    if (rt !== undefined) {
      const { resultType: _drop, ...rest } = msg.result as Record<string, unknown>;
      msg.result = rest;
    }
    if (method === 'prompts/get') {
      const r = msg.result as { messages?: unknown } | undefined;
      if (typeof r !== 'object' || r === null || !Array.isArray(r.messages))
        throw new TyError('E_MCP', `server "${this.host.server}" sent a prompts/get result without messages`);
      return r as unknown as CallToolResult;
    }
    const checked = checkToolResult(msg.result);
    if (!checked.ok)
      throw new TyError(
        'E_MCP',
        `server "${this.host.server}" sent a tools/call result that is not MCP's: ${checked.message}`,
      );
    const problem = checkStructuredContent(name, tool?.outputSchema, checked.result);
    if (problem !== undefined)
      throw new ProtocolError(
        checked.result.structuredContent === undefined
          ? ProtocolErrorCode.InvalidRequest
          : ProtocolErrorCode.InvalidParams,
        problem,
      );
    return checked.result as CallToolResult;
  }

  /**
   * One timer per session for the deadlines of its own calls (a timer per call is a measurable part of a
   * call's cost): when it fires, calls past their deadline time out (cancelled on the server) and it is
   * armed again for the earliest deadline left. The deadline is applied one turn of the event loop later, after the
   * input already waiting (an answer, the process's exit, an oversize message): a bridge that was busy past a
   * deadline never turns an answer, a crash or an oversize message that came in time into a timeout.
   */
  private armSweep(ms: number): void {
    this.sweepTimer = setTimeout(
      () => {
        this.sweepTimer = undefined;
        const now = Date.now();
        const late =
          this.host.elicitations() === 0
            ? [...this.pending].filter(([, c]) => c.deadline <= now).map(([id]) => id)
            : [];
        if (late.length === 0) return this.rearm(now);
        this.sweepTimer = setTimeout(() => {
          this.sweepTimer = undefined;
          let timedOut = false;
          for (const id of late) {
            const c = this.pending.get(id);
            if (c === undefined) continue;
            c.cancel('timed out');
            c.settle(this.host.timedOut('tools/call'));
            timedOut = true;
          }
          // a server that did not answer in time is taken as hung: its session (and process) ends
          if (timedOut) void this.host.close(this.host.timedOut('tools/call'));
          else this.rearm(Date.now());
        }, 0);
        (this.sweepTimer as { unref?: () => void }).unref?.();
      },
      Math.max(1, ms),
    );
    (this.sweepTimer as { unref?: () => void }).unref?.();
  }

  /** Arm the sweep for the earliest deadline left (checked at least a second apart), if any. */
  private rearm(now: number): void {
    let next = Infinity;
    for (const c of this.pending.values()) next = Math.min(next, Math.max(c.deadline, now + 1000));
    if (next !== Infinity && this.host.alive()) this.armSweep(next - now);
  }

  /** Every own call still waiting fails: the session ended (with `reason` when the bridge knows why). */
  failAll(reason?: TyError): void {
    if (this.sweepTimer !== undefined) clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
    for (const c of [...this.pending.values()]) c.settle(reason ?? ended(this.host.server));
  }
}
