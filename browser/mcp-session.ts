// One browser-side session with a remote MCP server: the SDK Client over the ruled Streamable HTTP transport, its checked tool list and calls; browser host, trusted side.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { TyError, isTyError } from '../core/errors.js';
import { inertText } from '../core/text.js';
import { checkStructuredContent, checkToolSchema, validateLinear } from '../core/mcp/args.js';
import { checkToolResult } from '../core/mcp/messages.js';
import { httpTransport, type FilteredListener } from './mcp-transport.js';

/** Tool names the bridge offers (the MCP specification's recommended character set and length). */
const TOOL_NAME_RE = /^[A-Za-z0-9_.\/-]{1,128}$/;

/** A started session: tools cached until the server says its list changed. */
export class McpHttpSession {
  #tools: Map<string, Tool> | undefined;
  #refused = new Map<string, string>();
  #ended = false;
  /** Why the session ended on its own (an oversize message, the server going away). */
  #endError: TyError | undefined;

  private constructor(readonly server: string, private readonly client: Client, private readonly timeoutMs: number) {}

  get alive(): boolean {
    return !this.#ended;
  }

  /**
   * Connect to `url` and run the MCP handshake with empty client capabilities (no sampling, elicitation or roots
   * can be asked of it). @throws TyError E_MCP_CORS, E_MCP_UNREACHABLE, E_MCP (handshake failed), E_ABORTED.
   */
  static async start(server: string, url: string, headers: Record<string, string>, opts: { timeoutMs: number; signal?: AbortSignal; onFiltered?: FilteredListener; onClose?: () => void }): Promise<McpHttpSession> {
    let s!: McpHttpSession;
    // an oversize message (a JSON body or one SSE event): the session ends, so the waiting request fails at once
    const onOversize = (e: TyError): void => {
      if (s.#endError !== undefined) return;
      s.#endError = e;
      void client.close().catch(() => undefined);
    };
    const transport = httpTransport(server, url, headers, { onOversize, ...(opts.onFiltered ? { onFiltered: opts.onFiltered } : {}) });
    // its output-schema validators use the linear-time regex engine and generate no code (strict page CSPs)
    const client = new Client({ name: 'tysandbox-browser', version: '0.1.0' }, { capabilities: {}, jsonSchemaValidator: { getValidator: (schema) => (input) => validateLinear(schema, input) } });
    s = new McpHttpSession(server, client, opts.timeoutMs);
    client.fallbackNotificationHandler = async (n) => {
      if (n.method === 'notifications/tools/list_changed') s.#tools = undefined;
    };
    client.onclose = () => {
      s.#ended = true;
      opts.onClose?.();
    };
    const onAbort = (): void => void client.close().catch(() => undefined);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await client.connect(transport, { timeout: opts.timeoutMs, ...(opts.signal ? { signal: opts.signal } : {}) });
    } catch (e) {
      await client.close().catch(() => undefined);
      if (opts.signal?.aborted) throw new TyError('E_ABORTED', 'cancelled before the MCP server answered');
      if (isTyError(e)) throw e;
      throw new TyError('E_MCP', `MCP server "${server}" did not complete the MCP handshake: ${inertText(String((e as Error)?.message ?? e)).slice(0, 300)}`);
    } finally {
      opts.signal?.removeEventListener('abort', onAbort);
    }
    return s;
  }

  /** The protocol version the server agreed to (logged, shown in the app). */
  get protocolVersion(): string | undefined {
    return (this.client as unknown as { _negotiatedProtocolVersion?: string })._negotiatedProtocolVersion;
  }

  /** Why a listed tool is not offered (its name or schema cannot be used), after `tools()`. */
  refusedTool(name: string): string | undefined {
    return this.#refused.get(name);
  }

  /**
   * The server's usable tools (all pages, at most 50): a name outside MCP's recommended set, an input or output
   * schema that cannot be used (core/mcp/args.ts checkToolSchema), or a name listed twice is left out; titles and
   * descriptions have hidden and control characters made visible.
   */
  async tools(signal?: AbortSignal): Promise<Map<string, Tool>> {
    if (this.#tools) return this.#tools;
    const map = new Map<string, Tool>();
    const refused = new Map<string, string>();
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < 50; page++) {
      const r = await this.#sdk(this.client.listTools(cursor ? { cursor } : undefined, { timeout: this.timeoutMs, ...(signal ? { signal } : {}) }), 'tools/list');
      for (const t of r.tools) {
        if (seen.has(t.name)) {
          map.delete(t.name);
          refused.set(t.name, 'is listed more than once by the server');
          continue;
        }
        seen.add(t.name);
        const problem = (TOOL_NAME_RE.test(t.name) ? undefined : 'its name is not 1-128 characters of A-Z, a-z, 0-9, _, -, ., /') ?? checkToolSchema(t.inputSchema) ?? checkToolSchema(t.outputSchema);
        if (problem !== undefined) {
          refused.set(t.name, problem);
          continue;
        }
        if (typeof t.description === 'string') t.description = inertText(t.description);
        if (typeof t.title === 'string') t.title = inertText(t.title);
        map.set(t.name, t);
      }
      cursor = r.nextCursor;
      if (!cursor) break;
    }
    this.#tools = map;
    this.#refused = refused;
    return map;
  }

  /**
   * One `tools/call`; the result gets core's structural check (checkToolResult) and `structuredContent` its
   * outputSchema check. @throws TyError E_MCP (malformed result, oversize message, session ended), E_MCP_TIMEOUT,
   * E_MCP_CORS / E_MCP_UNREACHABLE (the server went away), E_ABORTED.
   */
  async callTool(name: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<CallToolResult> {
    if (this.#ended) throw this.#endError ?? new TyError('E_MCP', `the session with MCP server "${this.server}" has ended`);
    const raw: unknown = await this.#sdk(this.client.callTool({ name, arguments: args }, undefined, { timeout: this.timeoutMs, ...(signal ? { signal } : {}) }), 'tools/call', signal);
    const checked = checkToolResult(raw);
    if (!checked.ok) throw new TyError('E_MCP', `MCP server "${this.server}" answered tools/call for "${name.slice(0, 80)}" with a result that is not MCP's: ${checked.message}`);
    const tool = this.#tools?.get(name);
    const bad = checkStructuredContent(name, tool?.outputSchema, checked.result);
    if (bad !== undefined) throw new TyError('E_MCP', bad);
    return checked.result as CallToolResult;
  }

  /** Run an SDK request, mapping its failures to stable codes (the SDK's own timeout code is never passed on). */
  async #sdk<T>(p: Promise<T>, method: string, signal?: AbortSignal): Promise<T> {
    try {
      return await p;
    } catch (e) {
      if (signal?.aborted) throw new TyError('E_ABORTED', 'the call was cancelled');
      if (this.#endError) throw this.#endError;
      if (isTyError(e)) throw e;
      const code = (e as { code?: unknown })?.code;
      const msg = inertText(String((e as Error)?.message ?? e)).slice(0, 300);
      if (code === -32001) {
        void this.close();
        throw new TyError('E_MCP_TIMEOUT', `MCP server "${this.server}" did not answer ${method} within ${this.timeoutMs} ms; its session was ended (the next call starts a new one)`);
      }
      if (typeof code === 'number' && code !== -32000) throw new TyError(code === -32602 ? 'E_INVALID_ARGS' : 'E_MCP', `MCP server "${this.server}" refused ${method}: ${msg}`, { rpcCode: code });
      throw new TyError('E_MCP', `MCP server "${this.server}" failed on ${method}: ${msg}`);
    }
  }

  async close(): Promise<void> {
    this.#ended = true;
    await this.client.close().catch(() => undefined);
  }
}
