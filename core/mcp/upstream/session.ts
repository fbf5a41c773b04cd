// One bridge-side session with a bridged MCP server: the SDK Client over a transport the host's connector made, the
// handshake and where each inbound message goes; its cached lists (lists.ts) and the bridge's own tools/call path
// (calls.ts) are parts it composes; core, trusted side.
import { Client, SdkError, SdkErrorCode, type CallToolResult, type JSONRPCMessage } from '@modelcontextprotocol/client';
import { TyError } from '../../errors.js';
import { validateLinear } from '../bridge/args.js';
import {
  BRIDGE_PROTOCOL_VERSIONS,
  DEFAULT_CALL_TIMEOUT_MS,
  type McpDefinition,
  type UpstreamTransport,
} from '../server-definition.js';
import { streamableHttpConnector } from './transport.js';
import { listenForChanges } from './listen.js';
import { answerElicitation } from './elicit.js';
import { OwnCalls, ended } from './calls.js';
import { ServerLists } from './lists.js';
import {
  CLIENT_INFO,
  type CallInput,
  type InputRequiredAnswer,
  DEFAULT_PROBE_TIMEOUT_MS,
  ELICIT_REQUESTS,
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
  private ended = false;
  /** Elicitations of the server in flight, by its request id. */
  private readonly elicits = new Map<unknown, AbortController>();
  /** The bridge's own tools/call path (core/mcp/upstream/calls.ts). */
  private readonly own: OwnCalls;
  /** What the server lists, cached (core/mcp/upstream/lists.ts). */
  private readonly lists: ServerLists;

  private constructor(
    readonly server: string,
    private readonly client: Client,
    private readonly transport: UpstreamTransport,
    private readonly timeoutMs: number,
    onToolRefused: UpstreamOptions['onToolRefused'],
  ) {
    this.lists = new ServerLists({
      server,
      listTools: (cursor, signal) =>
        this.sdk(
          this.client.listTools(cursor ? { cursor } : undefined, { signal, timeout: this.timeoutMs }),
          'tools/list',
          signal,
        ),
      listPrompts: (cursor, signal) => this.listPrompts(cursor, signal),
      listResources: (cursor, signal) => this.listResources(cursor, signal),
      listResourceTemplates: (cursor, signal) => this.listResourceTemplates(cursor, signal),
      capabilities: () => this.capabilities(),
      ...(onToolRefused !== undefined ? { onToolRefused } : {}),
    });
    this.own = new OwnCalls({
      server,
      timeoutMs,
      era: () => this.era,
      protocolVersion: () => this.protocolVersion,
      alive: () => !this.ended,
      tool: (name) => this.lists.cachedTool(name),
      send: (m) => this.transport.send(m),
      endReason: () => this.endReason(),
      timedOut: (method) => this.timedOut(method),
      close: (reason) => this.close(reason),
      elicitations: () => this.elicits.size,
    });
  }

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
      opts.onToolRefused,
    );
    client.fallbackNotificationHandler = async (n) => {
      s.lists.changed(n.method);
      opts.onNotification?.(n.method, n.params);
    };
    client.onclose = () => {
      s.ended = true;
      s.own.failAll(s.endReason());
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
        if (s.own.takeProgress(m)) return;
        const method = (m as { method?: string }).method;
        if (
          elicit &&
          (method === 'elicitation/create' || method === 'notifications/cancelled') &&
          s.elicitation(m as Record<string, unknown>, elicit)
        )
          return;
        // responses to the session's own tools/call requests never reach the SDK Client
        if (s.own.takeResponse(m)) return;
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
      calls: this.own.pending,
      send: (msg) => this.transport.send(msg as JSONRPCMessage),
      timeoutMs: this.timeoutMs,
    });
  }

  /** The session's `subscriptions/listen` stream (2026-07-28; upstream-listen.ts). */
  private subscription: Promise<{ close(): Promise<void> } | undefined> | undefined;

  /** A tool from the cached list, without asking the server (undefined when not cached or not listed). */
  cachedTool(name: string): UpstreamTool | undefined {
    return this.lists.cachedTool(name);
  }

  /**
   * The server's usable tools (cached until it says the list changed); a tool whose name or schemas cannot be used is
   * left out and reported through `onToolRefused` (core/mcp/upstream/lists.ts ServerLists.tools; see `refusedTool`).
   */
  tools(signal?: AbortSignal): Promise<Map<string, UpstreamTool>> {
    return this.lists.tools(signal);
  }

  /** Why a listed tool was hidden (undefined when it was not). Valid after `tools()`. */
  refusedTool(name: string): string | undefined {
    return this.lists.refusedTool(name);
  }

  /**
   * One `tools/call`, sent as a JSON-RPC request on the session's transport (the server-message rules have
   * already run on its response) and answered without the SDK Client's schema pass: the result gets the
   * structural check of core/mcp/wire/tool-call.ts checkToolResult, and `structuredContent` is checked against the
   * tool's `outputSchema` as the SDK Client does. Progress is relayed in arrival order before the result;
   * the timeout (requestTimeoutMs) restarts on each progress; an abort sends `notifications/cancelled`
   * (core/mcp/upstream/calls.ts OwnCalls).
   * @throws ProtocolError with the server's JSON-RPC error (as the SDK Client reports it), TyError E_MCP_TIMEOUT (no
   *   answer in time: the session ends), E_MCP (malformed result, session ended), E_ABORTED (signal).
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
    return this.own.call(name, args, opts);
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
   * An SDK Client request whose "Connection closed" (or "Not connected") is replaced by the reason the session ended,
   * else E_MCP_ENDED; a timeout ends the session and becomes E_MCP_TIMEOUT. The SDK reports a caller's abort as a
   * request timeout too: with `signal` aborted it is the caller's cancellation (E_ABORTED), and the session stays.
   */
  private async sdk<T>(p: Promise<T>, method: string, signal: AbortSignal | undefined): Promise<T> {
    try {
      return await p;
    } catch (e) {
      if (signal?.aborted) throw new TyError('E_ABORTED', `${method} was cancelled`);
      if (e instanceof SdkError && (e.code === SdkErrorCode.ConnectionClosed || e.code === SdkErrorCode.NotConnected))
        throw this.endReason() ?? ended(this.server);
      if (e instanceof SdkError && e.code === SdkErrorCode.RequestTimeout) {
        void this.close(this.timedOut(method));
        throw this.timedOut(method);
      }
      throw e;
    }
  }

  /** A prompt's definition as the server lists it (ServerLists.promptDefinition); undefined when not listed. */
  promptDefinition(name: string, signal?: AbortSignal): Promise<Record<string, unknown> | undefined> {
    return this.lists.promptDefinition(name, signal);
  }

  /** A listed resource's definition by URI (ServerLists.resourceDefinition); undefined when not listed. */
  resourceDefinition(uri: string, signal?: AbortSignal): Promise<Record<string, unknown> | undefined> {
    return this.lists.resourceDefinition(uri, signal);
  }

  /** Every listed prompt (all pages, cached until the server says the list changed). */
  allPrompts(signal?: AbortSignal): Promise<Record<string, unknown>[]> {
    return this.lists.allPrompts(signal);
  }

  /** Every listed resource (all pages, cached until the server says the list changed). */
  allResources(signal?: AbortSignal): Promise<Record<string, unknown>[]> {
    return this.lists.allResources(signal);
  }

  /** Every listed resource template (all pages, cached until the server says the resource list changed). */
  allTemplates(signal?: AbortSignal): Promise<Record<string, unknown>[]> {
    return this.lists.allTemplates(signal);
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
      signal,
    );
  }

  /** `resources/subscribe` / `resources/unsubscribe` for the server's own URI. */
  subscribe(uri: string, on: boolean, signal?: AbortSignal) {
    return this.sdk(
      on
        ? this.client.subscribeResource({ uri }, { signal, timeout: this.timeoutMs })
        : this.client.unsubscribeResource({ uri }, { signal, timeout: this.timeoutMs }),
      on ? 'resources/subscribe' : 'resources/unsubscribe',
      signal,
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
      signal,
    );
  }

  /** Pass-through listing and reads: the SDK Client checks each result's shape. */
  listPrompts(cursor: string | undefined, signal?: AbortSignal) {
    return this.sdk(
      this.client.listPrompts(cursor ? { cursor } : undefined, { signal, timeout: this.timeoutMs }),
      'prompts/list',
      signal,
    );
  }
  getPrompt(name: string, args: Record<string, string> | undefined, signal?: AbortSignal) {
    return this.sdk(
      this.client.getPrompt(args ? { name, arguments: args } : { name }, { signal, timeout: this.timeoutMs }),
      'prompts/get',
      signal,
    );
  }
  listResources(cursor: string | undefined, signal?: AbortSignal) {
    return this.sdk(
      this.client.listResources(cursor ? { cursor } : undefined, { signal, timeout: this.timeoutMs }),
      'resources/list',
      signal,
    );
  }
  listResourceTemplates(cursor: string | undefined, signal?: AbortSignal) {
    return this.sdk(
      this.client.listResourceTemplates(cursor ? { cursor } : undefined, { signal, timeout: this.timeoutMs }),
      'resources/templates/list',
      signal,
    );
  }
  readResource(uri: string, signal?: AbortSignal) {
    return this.sdk(this.client.readResource({ uri }, { signal, timeout: this.timeoutMs }), 'resources/read', signal);
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
    this.own.failAll(reason);
    await this.client.close().catch(() => undefined);
    await this.transport.close().catch(() => undefined);
  }
}
