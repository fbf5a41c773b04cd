// One bridge-side session with a bridged MCP server (SDK Client over the guarded process or HTTP transport); Node host, trusted side.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, JSONRPCMessage, Tool } from '@modelcontextprotocol/sdk/types.js';
import { TyError } from '../../core/errors.js';
import { MAX_MESSAGE_BYTES, classify, serverMessageRule } from '../../core/mcp/messages.js';
import type { McpDefinition } from './definitions.js';
import { ProcessTransport } from './process.js';
import { SocketTransport, connectHub, type HubLauncher } from './hub.js';

/** A tool as the server lists it (name, description, inputSchema, annotations). */
export type UpstreamTool = Tool;

export interface UpstreamOptions {
  /** MCP notifications that passed the rules (list_changed, message, resources/updated). */
  onNotification?: (method: string, params: unknown) => void;
  /** A message the rules dropped or answered (method only). */
  onFiltered?: (what: { action: 'drop' | 'answer'; method?: string | undefined }) => void;
  /** The session ended on the server's side (exit, oversize message). */
  onClose?: () => void;
  /** Per-request timeout, ms (default 600 000; reset by progress). */
  requestTimeoutMs?: number;
  /** For `shared` definitions: where the hub's socket lives and how to start a hub. */
  hub?: { home: string; launcher: HubLauncher };
}

/**
 * Applies the server-message rules to any SDK transport (used for streamable HTTP; the process
 * transport applies them itself).
 */
export class RuledTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;
  constructor(private readonly inner: Transport, private readonly onFiltered?: UpstreamOptions['onFiltered']) {
    inner.onclose = () => this.onclose?.();
    inner.onerror = (e) => this.onerror?.(e);
    inner.onmessage = (msg) => {
      const m = classify(msg);
      const rule = serverMessageRule(m);
      const method = m.kind === 'request' || m.kind === 'notification' ? m.method : undefined;
      if (rule.action === 'pass' && m.kind !== 'invalid') return this.onmessage?.(msg);
      this.onFiltered?.({ action: rule.action === 'answer' ? 'answer' : 'drop', method });
      if (rule.action === 'answer') void inner.send(rule.reply as JSONRPCMessage).catch(() => undefined);
    };
  }
  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }
  start(): Promise<void> {
    return this.inner.start();
  }
  send(message: JSONRPCMessage): Promise<void> {
    return this.inner.send(message);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
  setProtocolVersion(v: string): void {
    this.inner.setProtocolVersion?.(v);
  }
}

/**
 * A fetch whose response bodies fail once one message passes `max` bytes: a JSON body as a whole, an SSE
 * stream per event (bytes between blank lines), so memory stays bounded whatever a remote server sends.
 */
export function cappedFetch(max: number = MAX_MESSAGE_BYTES, base: typeof fetch = fetch): typeof fetch {
  return (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const res = await base(input, init);
    if (!res.body) return res;
    const sse = (res.headers.get('content-type') ?? '').includes('text/event-stream');
    let count = 0;
    let lastNl = false;
    const cap = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, ctl) {
        let over = false;
        if (!sse) over = (count += chunk.length) > max;
        else {
          for (let i = 0; i < chunk.length && !over; i++) {
            const b = chunk[i];
            if (b === 10) {
              if (lastNl) count = 0;
              lastNl = true;
            } else if (b !== 13) {
              lastNl = false;
              over = ++count > max;
            }
          }
        }
        if (over) {
          ctl.error(new TyError('E_MCP', `the server sent a message over ${Math.round(max / 1048576)} MiB; refused`));
          return;
        }
        ctl.enqueue(chunk);
      },
    });
    return new Response(res.body.pipeThrough(cap), { status: res.status, statusText: res.statusText, headers: res.headers });
  }) as typeof fetch;
}

/** Headers kept in the definition's environment as `TYMCP_HEADER_<n>` = `Name: value`. */
export function headersFromEnv(env: Record<string, string>): Record<string, string> {
  const h: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (!/^TYMCP_HEADER_\d{1,3}$/.test(k)) continue;
    const i = v.indexOf(':');
    if (i > 0) h[v.slice(0, i).trim()] = v.slice(i + 1).trim();
  }
  return h;
}

/** A started server session: the SDK Client, its transport, and the cached tool list. */
export class UpstreamSession {
  private toolCache: Map<string, UpstreamTool> | undefined;
  private ended = false;
  /** Progress callbacks by our own progress token (relayed as they arrive, before the result). */
  private readonly progress = new Map<string, (p: { progress: number; total?: number; message?: string }) => void>();
  private progressSeq = 0;

  private constructor(readonly server: string, private readonly client: Client, private readonly transport: Transport, private readonly timeoutMs: number) {}

  /** The server's process id (group id), when it is a process. */
  get pid(): number | undefined {
    return this.transport instanceof ProcessTransport ? this.transport.pid : undefined;
  }

  get alive(): boolean {
    return !this.ended;
  }

  /**
   * Start the server (or connect to its URL) and run the MCP handshake with empty client capabilities.
   * @throws TyError E_MCP (did not start or handshake failed), E_ABORTED (signal).
   */
  static async start(def: McpDefinition, opts: UpstreamOptions = {}, signal?: AbortSignal): Promise<UpstreamSession> {
    let transport: Transport;
    if (def.shared) {
      if (opts.hub === undefined) throw new TyError('E_MCP', `shared server "${def.name}" needs a hub, and none can be started here`);
      const sock = await connectHub(opts.hub.home, def, opts.hub.launcher, signal);
      transport = new RuledTransport(new SocketTransport(sock), opts.onFiltered);
    } else if (def.command !== undefined) {
      transport = new ProcessTransport({ command: def.command, args: def.args, env: def.env, onFiltered: opts.onFiltered });
    } else {
      const inner = new StreamableHTTPClientTransport(new URL(def.url as string), { requestInit: { headers: headersFromEnv(def.env), redirect: 'error' }, fetch: cappedFetch() });
      transport = new RuledTransport(inner, opts.onFiltered);
    }
    // the bridge's own client: it declares no capabilities, so no server may ask it for sampling, elicitation or roots
    const client = new Client({ name: 'tysandbox-bridge', version: '0.1.0' }, { capabilities: {} });
    const s = new UpstreamSession(def.name, client, transport, opts.requestTimeoutMs ?? 600_000);
    client.fallbackNotificationHandler = async (n) => {
      if (n.method === 'notifications/tools/list_changed') s.toolCache = undefined;
      opts.onNotification?.(n.method, n.params);
    };
    client.onclose = () => {
      s.ended = true;
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
        const n = m as { method?: string; params?: { progressToken?: unknown; progress?: unknown; total?: unknown; message?: unknown } };
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
        deliver?.(m);
      };
    } catch (e) {
      await transport.close().catch(() => undefined);
      if (e instanceof TyError) throw e;
      throw new TyError('E_MCP', `server "${def.name}" did not complete the MCP handshake: ${String((e as Error)?.message ?? e).slice(0, 200)}`);
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    return s;
  }

  /** The server's tools (cached until it says the list changed). */
  async tools(signal?: AbortSignal): Promise<Map<string, UpstreamTool>> {
    if (this.toolCache) return this.toolCache;
    const map = new Map<string, UpstreamTool>();
    let cursor: string | undefined;
    for (let page = 0; page < 50; page++) {
      const r = await this.client.listTools(cursor ? { cursor } : undefined, { signal, timeout: this.timeoutMs });
      for (const t of r.tools) map.set(t.name, t);
      cursor = r.nextCursor;
      if (!cursor) break;
    }
    this.toolCache = map;
    return map;
  }

  async callTool(name: string, args: Record<string, unknown>, opts: { signal?: AbortSignal; onprogress?: (p: { progress: number; total?: number; message?: string }) => void } = {}): Promise<CallToolResult> {
    if (!opts.onprogress) return (await this.client.callTool({ name, arguments: args }, undefined, { signal: opts.signal, timeout: this.timeoutMs })) as CallToolResult;
    const token = `tyb-${++this.progressSeq}`;
    this.progress.set(token, opts.onprogress);
    try {
      return (await this.client.callTool({ name, arguments: args, _meta: { progressToken: token } }, undefined, { signal: opts.signal, timeout: this.timeoutMs })) as CallToolResult;
    } finally {
      this.progress.delete(token);
    }
  }

  /** Pass-through listing and reads: the SDK Client checks each result's shape. */
  listPrompts(cursor: string | undefined, signal?: AbortSignal) {
    return this.client.listPrompts(cursor ? { cursor } : undefined, { signal, timeout: this.timeoutMs });
  }
  getPrompt(name: string, args: Record<string, string> | undefined, signal?: AbortSignal) {
    return this.client.getPrompt(args ? { name, arguments: args } : { name }, { signal, timeout: this.timeoutMs });
  }
  listResources(cursor: string | undefined, signal?: AbortSignal) {
    return this.client.listResources(cursor ? { cursor } : undefined, { signal, timeout: this.timeoutMs });
  }
  listResourceTemplates(cursor: string | undefined, signal?: AbortSignal) {
    return this.client.listResourceTemplates(cursor ? { cursor } : undefined, { signal, timeout: this.timeoutMs });
  }
  readResource(uri: string, signal?: AbortSignal) {
    return this.client.readResource({ uri }, { signal, timeout: this.timeoutMs });
  }
  /** Server capabilities from the handshake. */
  capabilities() {
    return this.client.getServerCapabilities() ?? {};
  }

  /** End the session: the server and its whole process group stop. Idempotent. */
  async close(): Promise<void> {
    this.ended = true;
    await this.client.close().catch(() => undefined);
    await this.transport.close().catch(() => undefined);
  }
}
