// One bridge-side session with a bridged MCP server: the SDK Client over a transport the host's connector made, the
// handshake, cached lists and the bridge's own tools/call path; core, trusted side.
import {
  Client,
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
  type CallToolResult,
  type JSONRPCMessage,
} from '@modelcontextprotocol/client';
import { TyError } from '../../errors.js';
import { inertText } from '../../ask/text.js';
import { checkStructuredContent, checkToolSchema, validateLinear } from '../bridge/args.js';
import { ENVELOPE_CAPABILITIES_KEY, ENVELOPE_VERSION_KEY } from '../wire/messages.js';
import { ENVELOPE_CLIENT_INFO_KEY, checkToolResult } from '../wire/tool-call.js';
import {
  BRIDGE_PROTOCOL_VERSIONS,
  DEFAULT_CALL_TIMEOUT_MS,
  type McpDefinition,
  type UpstreamTransport,
} from '../server-definition.js';
import { streamableHttpConnector } from './transport.js';
import { parseInputRequired } from '../input/required.js';
import { listenForChanges } from './listen.js';
import { paramHeaders } from '../wire/http-headers.js';
import { answerElicitation } from './elicit.js';
import {
  CALL_ID,
  CLIENT_INFO,
  type CallInput,
  type InputRequiredAnswer,
  DEFAULT_PROBE_TIMEOUT_MS,
  ELICIT_REQUESTS,
  MAX_LISTED,
  TOOL_NAME_RE,
  type CancelSignal,
  type PendingCall,
  type UpstreamOptions,
  type UpstreamTool,
} from './options.js';

export {
  DEFAULT_PROBE_TIMEOUT_MS,
  type CallInput,
  type CancelSignal,
  type InputRequiredAnswer,
  type UpstreamOptions,
  type UpstreamTool,
} from './options.js';

/** A started server session: the SDK Client, its transport, and the cached tool list. */
export class UpstreamSession {
  private toolCache: Map<string, UpstreamTool> | undefined;
  private promptCache: Promise<Map<string, Record<string, unknown>>> | undefined;
  private templateCache: Promise<Map<string, Record<string, unknown>>> | undefined;
  private resourceCache: Promise<Map<string, Record<string, unknown>>> | undefined;
  /** Listed tools hidden for an unusable schema, with the reason (their calls are refused with -32602). */
  private refusedCache = new Map<string, string>();
  private onToolRefused: UpstreamOptions['onToolRefused'];
  private ended = false;
  /** Own tools/call requests in flight, by id. */
  private readonly calls = new Map<string, PendingCall>();
  private callSeq = 0;
  private sweepTimer: ReturnType<typeof setTimeout> | undefined;
  /** Progress callbacks by our own progress token (relayed as they arrive, before the result). */
  private readonly progress = new Map<string, (p: { progress: number; total?: number; message?: string }) => void>();
  /** Elicitations of the server in flight, by its request id. */
  private readonly elicits = new Map<unknown, AbortController>();

  private constructor(
    readonly server: string,
    private readonly client: Client,
    private readonly transport: UpstreamTransport,
    private readonly timeoutMs: number,
  ) {}

  /** The protocol revision negotiated with this server (e.g. `2026-07-28`, `2025-11-25`). */
  get protocolVersion(): string | undefined {
    return this.client.getNegotiatedProtocolVersion();
  }

  /** `modern` (2026-07-28: stateless, each request carries its envelope) or `legacy` (the initialize handshake). */
  get era(): 'modern' | 'legacy' | undefined {
    return this.client.getProtocolEra();
  }

  /** The server's process id (group id), when it is a process. */
  get pid(): number | undefined {
    return this.transport.pid;
  }

  get alive(): boolean {
    return !this.ended;
  }

  /**
   * Start the server (or connect to its URL) and run the MCP handshake with empty client capabilities.
   * @throws TyError E_MCP (did not start or handshake failed), E_ABORTED (signal).
   */
  static async start(def: McpDefinition, opts: UpstreamOptions = {}, signal?: AbortSignal): Promise<UpstreamSession> {
    try {
      return await UpstreamSession.startOnce(def, opts, signal);
    } catch (e) {
      // a server that cannot be spoken to in 2026-07-28 (over HTTP in a page: its CORS policy may refuse the
      // 2026-07-28 headers, which reads as a network failure) is opened again with the 2025 handshake
      if (
        opts.legacyFallback !== true ||
        def.url === undefined ||
        signal?.aborted ||
        (e instanceof TyError && e.code === 'E_ABORTED')
      )
        throw e;
      opts.onLegacyFallback?.(e instanceof TyError ? e.code : 'E_MCP');
      return UpstreamSession.startOnce(def, opts, signal, 'legacy');
    }
  }

  private static async startOnce(
    def: McpDefinition,
    opts: UpstreamOptions,
    signal: AbortSignal | undefined,
    negotiation?: 'legacy',
  ): Promise<UpstreamSession> {
    const elicit = opts.elicit !== undefined && !def.shared ? opts.elicit : undefined;
    const transport = await (opts.connect ?? streamableHttpConnector())(def, {
      ...(opts.onFiltered ? { onFiltered: opts.onFiltered } : {}),
      ...(signal ? { signal } : {}),
      ...(elicit ? { passRequests: ELICIT_REQUESTS } : {}),
      ...(negotiation ? { negotiation } : {}),
    });
    // the bridge's own client: it declares no capabilities, so no server may ask it for sampling, elicitation or roots
    // its output-schema validators (compiled at listTools) use the linear-time regex engine, never a backtracking one
    // with an elicit handler that a rule enables for this server, it declares form-mode elicitation only (a
    // 2026-07-28 server asks through input_required results instead: core/mcp/input/relay.ts)
    // the era is negotiated per server (MCP 2026-07-28 "Versioning"): a `server/discover` probe, and the 2025
    // initialize handshake for a server that does not answer it as a 2026-07-28 server would
    const client = new Client(CLIENT_INFO, {
      capabilities: elicit && opts.declareElicitation === true ? { elicitation: { form: {} } } : {},
      jsonSchemaValidator: { getValidator: (schema) => (input) => validateLinear(schema, input) },
      supportedProtocolVersions: [...BRIDGE_PROTOCOL_VERSIONS],
      versionNegotiation:
        transport.negotiation === 'legacy'
          ? { mode: 'legacy' }
          : { mode: 'auto', probe: { timeoutMs: opts.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS } },
    });
    const s = new UpstreamSession(
      def.name,
      client,
      transport,
      opts.requestTimeoutMs ?? def.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
    );
    s.onToolRefused = opts.onToolRefused;
    client.fallbackNotificationHandler = async (n) => {
      if (n.method === 'notifications/tools/list_changed') s.toolCache = undefined;
      if (n.method === 'notifications/prompts/list_changed') s.promptCache = undefined;
      if (n.method === 'notifications/resources/list_changed') {
        s.resourceCache = undefined;
        s.templateCache = undefined;
      }
      opts.onNotification?.(n.method, n.params);
    };
    client.onclose = () => {
      s.ended = true;
      s.failCalls(s.endReason());
      opts.onClose?.();
    };
    const onAbort = (): void => void transport.close().catch(() => undefined);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      if (signal?.aborted) throw new TyError('E_ABORTED', 'cancelled before the server started');
      await client.connect(transport, { timeout: 60_000 });
      if (signal?.aborted) throw new TyError('E_ABORTED', 'cancelled before the server started');
      // progress is taken off the wire here, in arrival order: the SDK Client handles notifications a tick
      // after responses, so a call's last progress would otherwise be lost behind its result
      const deliver = transport.onmessage;
      transport.onmessage = (m) => {
        const n = m as {
          method?: string;
          params?: { progressToken?: unknown; progress?: unknown; total?: unknown; message?: unknown };
        };
        if (n.method === 'notifications/progress' && typeof n.params?.progressToken === 'string') {
          const cb = s.progress.get(n.params.progressToken);
          if (cb && typeof n.params.progress === 'number') {
            const p: { progress: number; total?: number; message?: string } = { progress: n.params.progress };
            if (typeof n.params.total === 'number') p.total = n.params.total;
            if (typeof n.params.message === 'string') p.message = n.params.message;
            cb(p);
          }
          return;
        }
        // responses to the session's own tools/call requests never reach the SDK Client
        const id = (m as { id?: unknown }).id;
        if (
          elicit &&
          (n.method === 'elicitation/create' || n.method === 'notifications/cancelled') &&
          s.elicitation(m as Record<string, unknown>, elicit)
        )
          return;
        if (n.method === undefined && typeof id === 'string' && id.startsWith(CALL_ID)) {
          s.calls.get(id)?.settle(m as Record<string, unknown>);
          return;
        }
        deliver?.(m);
      };
      // 2026-07-28: change notifications come only on a subscriptions/listen stream; they reach the same handler
      if (client.getProtocolEra() === 'modern') s.subscription = listenForChanges(client, () => s.ended);
    } catch (e) {
      await transport.close().catch(() => undefined);
      if (e instanceof TyError) throw e;
      throw new TyError(
        'E_MCP',
        `server "${def.name}" did not complete the MCP handshake: ${String((e as Error)?.message ?? e).slice(0, 200)}`,
      );
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    return s;
  }

  /** An `elicitation/create` of the server or a notifications/cancelled naming one (upstream-elicit.ts). */
  private elicitation(m: Record<string, unknown>, elicit: NonNullable<UpstreamOptions['elicit']>): boolean {
    return answerElicitation(m, elicit, {
      elicits: this.elicits,
      calls: this.calls,
      send: (msg) => this.transport.send(msg as JSONRPCMessage),
      timeoutMs: this.timeoutMs,
    });
  }

  /** The session's `subscriptions/listen` stream (2026-07-28; upstream-listen.ts). */
  private subscription: Promise<{ close(): Promise<void> } | undefined> | undefined;

  /** A tool from the cached list, without asking the server (undefined when not cached or not listed). */
  cachedTool(name: string): UpstreamTool | undefined {
    return this.toolCache?.get(name);
  }

  /**
   * The server's usable tools (cached until it says the list changed). A tool whose inputSchema or
   * outputSchema cannot be used (core/schema/validate.ts) (a backreference or lookaround in a pattern, an
   * invalid schema) is left out and reported once per listing through `onToolRefused`; see `refusedTool`.
   */
  async tools(signal?: AbortSignal): Promise<Map<string, UpstreamTool>> {
    if (this.toolCache) return this.toolCache;
    const map = new Map<string, UpstreamTool>();
    const refused = new Map<string, string>();
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < 50; page++) {
      const r = await this.sdk(
        this.client.listTools(cursor ? { cursor } : undefined, { signal, timeout: this.timeoutMs }),
        'tools/list',
      );
      for (const t of r.tools) {
        // a name listed twice: neither is offered (which one a call would reach is not knowable)
        if (seen.has(t.name)) {
          if (!refused.has(t.name)) {
            map.delete(t.name);
            refused.set(t.name, 'is listed more than once by the server');
            this.onToolRefused?.(t.name, 'is listed more than once by the server; neither is offered');
          }
          continue;
        }
        seen.add(t.name);
        // Names as MCP recommends (1-128 of A-Z a-z 0-9 _ - . /): anything else (controls, escapes, spaces) is refused.
        const badName = TOOL_NAME_RE.test(t.name)
          ? undefined
          : 'its name is not 1-128 characters of A-Z, a-z, 0-9, _, -, ., /';
        const headers = paramHeaders(t.inputSchema);
        const problem =
          badName ??
          checkToolSchema(t.inputSchema) ??
          checkToolSchema(t.outputSchema) ??
          (headers.ok ? undefined : `its x-mcp-header declarations are invalid: ${headers.message}`);
        if (problem === undefined) {
          // Descriptions and titles pass on as text, with hidden and control characters made visible.
          if (typeof t.description === 'string') t.description = inertText(t.description);
          if (typeof t.title === 'string') t.title = inertText(t.title);
          map.set(t.name, t);
        } else {
          refused.set(t.name, problem);
          this.onToolRefused?.(t.name, problem);
        }
      }
      cursor = r.nextCursor;
      if (!cursor) break;
    }
    this.toolCache = map;
    this.refusedCache = refused;
    return map;
  }

  /** Why a listed tool was hidden (undefined when it was not). Valid after `tools()`. */
  refusedTool(name: string): string | undefined {
    return this.refusedCache.get(name);
  }

  /**
   * One `tools/call`, sent as a JSON-RPC request on the session's transport (the server-message rules have
   * already run on its response) and answered without the SDK Client's schema pass: the result gets the
   * structural check of core/mcp/wire/tool-call.ts checkToolResult, and `structuredContent` is checked against the
   * tool's `outputSchema` as the SDK Client does. Progress is relayed in arrival order before the result;
   * the timeout (requestTimeoutMs) restarts on each progress; an abort sends `notifications/cancelled`.
   * @throws McpError with the server's JSON-RPC error (as the SDK Client reports it), McpError RequestTimeout,
   *   TyError E_MCP (malformed result, session ended), E_ABORTED (signal).
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    opts: {
      signal?: CancelSignal;
      onprogress?: (p: { progress: number; total?: number; message?: string }) => void;
      onInput?: PendingCall['input'];
    },
  ): Promise<CallToolResult>;
  async callTool(name: string, args: Record<string, unknown>): Promise<CallToolResult>;
  async callTool(
    name: string,
    args: Record<string, unknown>,
    opts: {
      signal?: CancelSignal;
      onprogress?: (p: { progress: number; total?: number; message?: string }) => void;
      input: CallInput;
    },
  ): Promise<CallToolResult | InputRequiredAnswer>;
  async callTool(
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
    const tool = method === 'tools/call' ? this.toolCache?.get(name) : undefined;
    if (tool?.execution?.taskSupport === 'required')
      throw new ProtocolError(ProtocolErrorCode.InvalidRequest, `Tool "${name}" requires task-based execution.`);
    if (this.ended) throw this.endReason() ?? new TyError('E_MCP', 'the server session has ended');
    const signal = opts.signal;
    if (signal?.aborted) throw new TyError('E_ABORTED', 'the call was cancelled');
    const id = `${CALL_ID}${++this.callSeq}`;
    const params: Record<string, unknown> = { name, arguments: args };
    const input = opts.input;
    // 2026-07-28: every request carries its version and the client's capabilities in `_meta`: none, or (a call
    // that may take input) the kinds of input the bridge can answer or relay for this call
    const meta: Record<string, unknown> | undefined =
      this.era === 'modern'
        ? {
            [ENVELOPE_VERSION_KEY]: this.protocolVersion,
            [ENVELOPE_CAPABILITIES_KEY]: input?.capabilities ?? {},
            [ENVELOPE_CLIENT_INFO_KEY]: CLIENT_INFO,
          }
        : undefined;
    if (this.era === 'modern' && input?.responses !== undefined) params.inputResponses = input.responses;
    if (this.era === 'modern' && input?.requestState !== undefined) params.requestState = input.requestState;
    if (meta !== undefined) params._meta = meta;
    const msg = await new Promise<Record<string, unknown> | Error>((resolve) => {
      const call: PendingCall = {
        deadline: 0,
        settle: (m) => {
          if (!this.calls.delete(id)) return;
          signal?.removeEventListener('abort', onAbort);
          this.progress.delete(id);
          resolve(m);
        },
        cancel: (reason) =>
          void this.transport
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
      this.calls.set(id, call);
      if (opts.onprogress) {
        const cb = opts.onprogress;
        params._meta = { ...meta, progressToken: id };
        this.progress.set(id, (p) => {
          call.deadline = Date.now() + this.timeoutMs;
          cb(p);
        });
      }
      // sent first, the bookkeeping after: nothing can answer before this synchronous code returns
      this.transport
        .send({ jsonrpc: '2.0', id, method, params } as JSONRPCMessage)
        .catch(() => call.settle(new TyError('E_MCP', 'the server session has ended')));
      if (!this.calls.has(id)) return;
      signal?.addEventListener('abort', onAbort, { once: true });
      call.deadline = Date.now() + this.timeoutMs;
      if (this.sweepTimer === undefined) this.armSweep(this.timeoutMs);
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
    if (rt === 'input_required' && input !== undefined && this.era === 'modern') {
      const parsed = parseInputRequired(msg.result);
      if (!parsed.ok)
        throw new TyError(
          'E_MCP',
          `server "${this.server}" sent an input_required result that is not MCP's: ${parsed.message}`,
        );
      return { resultType: 'input_required', ...parsed.value };
    }
    if (rt !== undefined && rt !== 'complete')
      throw new TyError(
        'E_MCP',
        `server "${this.server}" answered tools/call with resultType "${String(rt).slice(0, 40)}"; the bridge takes only complete results (it answers no server-to-client request)`,
      );
    if (rt !== undefined) {
      const { resultType: _drop, ...rest } = msg.result as Record<string, unknown>;
      msg.result = rest;
    }
    if (method === 'prompts/get') {
      const r = msg.result as { messages?: unknown } | undefined;
      if (typeof r !== 'object' || r === null || !Array.isArray(r.messages))
        throw new TyError('E_MCP', `server "${this.server}" sent a prompts/get result without messages`);
      return r as unknown as CallToolResult;
    }
    const checked = checkToolResult(msg.result);
    if (!checked.ok)
      throw new TyError(
        'E_MCP',
        `server "${this.server}" sent a tools/call result that is not MCP's: ${checked.message}`,
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
   * `prompts/get` of a 2026-07-28 server that may answer `input_required` (sent on the transport as callTool sends,
   * the same deadlines and cancellation): the prompt's result (only its `messages` checked here; the bridge maps it) or
   * the server's checked input requests.
   */
  async getPromptTakingInput(
    name: string,
    args: Record<string, string> | undefined,
    input: CallInput,
    signal?: CancelSignal,
  ): Promise<Record<string, unknown> | InputRequiredAnswer> {
    const send = this.callTool as unknown as (
      n: string,
      a: Record<string, unknown>,
      o: { signal?: CancelSignal; input: CallInput; method: 'prompts/get' },
    ) => Promise<Record<string, unknown> | InputRequiredAnswer>;
    return send.call(this, name, args ?? {}, { ...(signal ? { signal } : {}), input, method: 'prompts/get' });
  }

  /**
   * One timer per session for the deadlines of its own calls (a timer per call is a measurable part of a
   * call's cost): when it fires, calls past their deadline time out (cancelled on the server) and it is
   * armed again for the earliest deadline left.
   */
  private armSweep(ms: number): void {
    this.sweepTimer = setTimeout(
      () => {
        this.sweepTimer = undefined;
        const now = Date.now();
        let next = Infinity;
        let late = false;
        for (const c of [...this.calls.values()]) {
          if (c.deadline <= now && this.elicits.size === 0) {
            c.cancel('timed out');
            c.settle(this.timedOut('tools/call'));
            late = true;
          } else next = Math.min(next, Math.max(c.deadline, now + 1000));
        }
        // a server that did not answer in time is taken as hung: its session (and process) ends
        if (late) void this.close(this.timedOut('tools/call'));
        else if (next !== Infinity && !this.ended) this.armSweep(next - now);
      },
      Math.max(1, ms),
    );
    (this.sweepTimer as { unref?: () => void }).unref?.();
  }

  /** Every own call still waiting fails: the session ended (with `reason` when the bridge knows why). */
  private failCalls(reason?: TyError): void {
    if (this.sweepTimer !== undefined) clearTimeout(this.sweepTimer);
    this.sweepTimer = undefined;
    for (const c of [...this.calls.values()]) c.settle(reason ?? new TyError('E_MCP', 'the server session has ended'));
  }

  /** Why the transport ended the session (e.g. a message over the cap), when it says. */
  private endReason(): TyError | undefined {
    const r = this.transport.endReason;
    return r instanceof TyError ? r : undefined;
  }

  /** The error of a request the server did not answer within the timeout (never the SDK's own timeout code). */
  private timedOut(method: string): TyError {
    return new TyError(
      'E_MCP_TIMEOUT',
      `server "${this.server}" did not answer ${method} within ${Math.round(this.timeoutMs / 100) / 10} s (its call timeout); its session was ended and the next call starts a new one`,
    );
  }

  /**
   * An SDK Client request whose "Connection closed" is replaced by the reason the session ended, when
   * known; a timeout ends the session and becomes E_MCP_TIMEOUT.
   */
  private async sdk<T>(p: Promise<T>, method = 'a request'): Promise<T> {
    try {
      return await p;
    } catch (e) {
      const reason = this.endReason();
      if (reason !== undefined && e instanceof SdkError && e.code === SdkErrorCode.ConnectionClosed) throw reason;
      if (e instanceof SdkError && e.code === SdkErrorCode.RequestTimeout) {
        void this.close(this.timedOut(method));
        throw this.timedOut(method);
      }
      throw e;
    }
  }

  /**
   * A prompt's definition as the server lists it (every page, at most 50), cached until the server says
   * the prompt list changed; undefined when it is not listed.
   */
  async promptDefinition(name: string, signal?: AbortSignal): Promise<Record<string, unknown> | undefined> {
    if (!this.capabilities().prompts) return undefined;
    this.promptCache ??= this.allPages(async (cursor) => {
      const r = await this.listPrompts(cursor, signal);
      return { items: r.prompts.map((p) => [p.name, p as Record<string, unknown>] as const), next: r.nextCursor };
    }).catch((e: unknown) => {
      this.promptCache = undefined;
      throw e;
    });
    return (await this.promptCache).get(name);
  }

  /** A listed resource's definition by URI (cached like promptDefinition); undefined when not listed. */
  async resourceDefinition(uri: string, signal?: AbortSignal): Promise<Record<string, unknown> | undefined> {
    if (!this.capabilities().resources) return undefined;
    this.resourceCache ??= this.allPages(async (cursor) => {
      const r = await this.listResources(cursor, signal);
      return { items: r.resources.map((x) => [x.uri, x as Record<string, unknown>] as const), next: r.nextCursor };
    }).catch((e: unknown) => {
      this.resourceCache = undefined;
      throw e;
    });
    return (await this.resourceCache).get(uri);
  }

  /** Every listed prompt (all pages, cached until the server says the list changed). */
  async allPrompts(signal?: AbortSignal): Promise<Record<string, unknown>[]> {
    if (!this.capabilities().prompts) return [];
    await this.promptDefinition('', signal);
    return [...((await this.promptCache)?.values() ?? [])];
  }

  /** Every listed resource (all pages, cached until the server says the list changed). */
  async allResources(signal?: AbortSignal): Promise<Record<string, unknown>[]> {
    if (!this.capabilities().resources) return [];
    await this.resourceDefinition('', signal);
    return [...((await this.resourceCache)?.values() ?? [])];
  }

  /** Every listed resource template (all pages, cached until the server says the resource list changed). */
  async allTemplates(signal?: AbortSignal): Promise<Record<string, unknown>[]> {
    if (!this.capabilities().resources) return [];
    this.templateCache ??= this.allPages(async (cursor) => {
      const r = await this.listResourceTemplates(cursor, signal);
      return {
        items: r.resourceTemplates.map((x) => [x.uriTemplate, x as Record<string, unknown>] as const),
        next: r.nextCursor,
      };
    }).catch((e: unknown) => {
      this.templateCache = undefined;
      throw e;
    });
    return [...(await this.templateCache).values()];
  }

  /** The server's `instructions` from the handshake (raw; the bridge sanitizes and caps them). */
  instructions(): string | undefined {
    return this.client.getInstructions();
  }

  /** `completion/complete` with the server's own reference. */
  complete(params: Record<string, unknown>, signal?: AbortSignal) {
    return this.sdk(
      this.client.complete(params as Parameters<Client['complete']>[0], { signal, timeout: this.timeoutMs }),
      'completion/complete',
    );
  }

  /** `resources/subscribe` / `resources/unsubscribe` for the server's own URI. */
  subscribe(uri: string, on: boolean, signal?: AbortSignal) {
    return this.sdk(
      on
        ? this.client.subscribeResource({ uri }, { signal, timeout: this.timeoutMs })
        : this.client.unsubscribeResource({ uri }, { signal, timeout: this.timeoutMs }),
      on ? 'resources/subscribe' : 'resources/unsubscribe',
    );
  }

  /** `logging/setLevel`, sent only to a server that declares logging. */
  async setLoggingLevel(level: string, signal?: AbortSignal): Promise<void> {
    if (!this.capabilities().logging) return;
    await this.sdk(
      this.client.setLoggingLevel(level as Parameters<Client['setLoggingLevel']>[0], {
        signal,
        timeout: this.timeoutMs,
      }),
      'logging/setLevel',
    );
  }

  /** Pages of a listing, at most 50 pages and MAX_LISTED items (more: E_MCP, never a silent cut). */
  private async allPages(
    page: (
      cursor: string | undefined,
    ) => Promise<{ items: (readonly [string, Record<string, unknown>])[]; next?: string | undefined }>,
  ): Promise<Map<string, Record<string, unknown>>> {
    const out = new Map<string, Record<string, unknown>>();
    let cursor: string | undefined;
    for (let i = 0; i < 50; i++) {
      const r = await page(cursor);
      for (const [k, v] of r.items) out.set(k, v);
      if (out.size > MAX_LISTED)
        throw new TyError('E_MCP', `server "${this.server}" lists more than ${MAX_LISTED} entries; refused`);
      cursor = r.next;
      if (!cursor) break;
    }
    return out;
  }

  /** Pass-through listing and reads: the SDK Client checks each result's shape. */
  listPrompts(cursor: string | undefined, signal?: AbortSignal) {
    return this.sdk(
      this.client.listPrompts(cursor ? { cursor } : undefined, { signal, timeout: this.timeoutMs }),
      'prompts/list',
    );
  }
  getPrompt(name: string, args: Record<string, string> | undefined, signal?: AbortSignal) {
    return this.sdk(
      this.client.getPrompt(args ? { name, arguments: args } : { name }, { signal, timeout: this.timeoutMs }),
      'prompts/get',
    );
  }
  listResources(cursor: string | undefined, signal?: AbortSignal) {
    return this.sdk(
      this.client.listResources(cursor ? { cursor } : undefined, { signal, timeout: this.timeoutMs }),
      'resources/list',
    );
  }
  listResourceTemplates(cursor: string | undefined, signal?: AbortSignal) {
    return this.sdk(
      this.client.listResourceTemplates(cursor ? { cursor } : undefined, { signal, timeout: this.timeoutMs }),
      'resources/templates/list',
    );
  }
  readResource(uri: string, signal?: AbortSignal) {
    return this.sdk(this.client.readResource({ uri }, { signal, timeout: this.timeoutMs }), 'resources/read');
  }
  /** Server capabilities from the handshake. */
  capabilities() {
    return this.client.getServerCapabilities() ?? {};
  }

  /**
   * End the session: the server and its whole process group stop; calls still waiting fail with `reason`. Idempotent.
   */
  async close(reason?: TyError): Promise<void> {
    this.ended = true;
    void this.subscription?.then((sub) => sub?.close()).catch(() => undefined);
    for (const ac of this.elicits.values()) ac.abort();
    this.failCalls(reason);
    await this.client.close().catch(() => undefined);
    await this.transport.close().catch(() => undefined);
  }
}
