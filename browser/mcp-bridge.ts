// The browser host's use of core's MCP bridge: McpBridge with a tool listing for the page, over a Streamable HTTP connector that diagnoses CORS refusals and ends a session on an oversize message; browser host, trusted side (loaded on first use).
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { McpBridge, type BridgeOptions } from '../core/mcp/bridge.js';
import { RuledTransport, cappedFetch } from '../core/mcp/upstream-transport.js';
import type { McpDefinition, UpstreamConnector, UpstreamTransport } from '../core/mcp/server-definition.js';
import { MAX_MESSAGE_BYTES } from '../core/mcp/messages.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { TyError, isTyError } from '../core/errors.js';
import { mcpFetch } from './mcp-transport.js';

/** Core's bridge plus what the page needs besides MCP clients: one server's offered tools, for `host.mcp.listTools`. */
export class BrowserBridge extends McpBridge {
  constructor(opts: BridgeOptions) {
    super(opts);
  }
  /**
   * The usable tools of `server` in the client session `sessionId` (core/mcp/upstream.ts: names and schemas
   * checked, descriptions made inert, cached until the server says its list changed).
   * @throws TyError E_UNKNOWN_TOOL (no such server), the connection's codes.
   */
  async serverTools(sessionId: string, server: string, signal?: AbortSignal): Promise<Map<string, Tool>> {
    const def = await this.definition(sessionId, server);
    return this.withUpstream(sessionId, def, (u) => u.tools(signal), signal);
  }
}

/**
 * The browser's connector (core/mcp/server-definition.ts UpstreamConnector) for `url` definitions: the SDK's
 * Streamable HTTP client transport over core's cappedFetch (8 MiB per message, a JSON body whole or one SSE
 * event) over mcpFetch (no ambient credentials, no referrer, redirects refused, the server's header values
 * added, a network failure diagnosed as E_MCP_CORS or E_MCP_UNREACHABLE), under core's server-message rules.
 * An oversize message ends the session with that reason (`endReason`), so the waiting call fails at once.
 */
export function browserConnector(headers: (def: McpDefinition) => Promise<Record<string, string>>, maxBytes = MAX_MESSAGE_BYTES): UpstreamConnector {
  return async (def, ctx) => {
    if (def.url === undefined) throw new TyError('E_MCP', `server "${def.name}" is started by a command, which a browser cannot do`);
    let endReason: Error | undefined;
    let close: () => void = () => undefined;
    const capped = cappedFetch(maxBytes, mcpFetch(def.name, await headers(def)));
    // a body that fails on the cap: the session ends with that reason (the SDK reports a broken SSE stream only wrapped)
    const watched = (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
      const res = await capped(input, init);
      if (!res.body) return res;
      const reader = res.body.getReader();
      const body = new ReadableStream<Uint8Array>({
        async pull(ctl) {
          try {
            const { done, value } = await reader.read();
            if (done) ctl.close();
            else ctl.enqueue(value);
          } catch (e) {
            if (isTyError(e) && e.code === 'E_MCP') {
              endReason = new TyError('E_MCP', `MCP server "${def.name}" sent a message over ${Math.round(maxBytes / 1048576)} MiB (the bridge's message limit); refused, nothing of it was delivered; its session was ended`);
              close();
            }
            ctl.error(e);
          }
        },
        cancel: (r) => reader.cancel(r),
      });
      return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
    }) as typeof fetch;
    const inner = new StreamableHTTPClientTransport(new URL(def.url), { fetch: watched, reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 } });
    const ruled = new RuledTransport(inner, ctx.onFiltered, ctx.passRequests);
    close = () => void ruled.close().catch(() => undefined);
    return Object.defineProperty(ruled, 'endReason', { get: () => endReason }) as UpstreamTransport;
  };
}
