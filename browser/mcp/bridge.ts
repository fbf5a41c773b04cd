// The browser host's use of core's MCP bridge: McpBridge with a tool listing for the page, over core's Streamable HTTP
// connector with a fetch that diagnoses CORS refusals; browser host, trusted side (loaded on first use).
import type { Tool } from '@modelcontextprotocol/client';
import { McpBridge, type BridgeOptions } from '../../core/mcp/bridge/bridge.js';
import { streamableHttpConnector } from '../../core/mcp/upstream/transport.js';
import type { McpDefinition, UpstreamConnector } from '../../core/mcp/server-definition.js';
import { mcpFetch } from './transport.js';

/** Core's bridge plus what the page needs besides MCP clients: one server's offered tools, for `host.mcp.listTools`. */
export class BrowserBridge extends McpBridge {
  constructor(opts: BridgeOptions) {
    super(opts);
  }
  /**
   * The usable tools of `server` in the client session `sessionId` (core/mcp/upstream/session.ts: names and schemas
   * checked, descriptions made inert, cached until the server says its list changed) and the protocol revision agreed
   * with it.
   * @throws TyError E_UNKNOWN_TOOL (no such server), the connection's codes.
   */
  async serverTools(
    sessionId: string,
    server: string,
    signal?: AbortSignal,
  ): Promise<{ tools: Map<string, Tool>; protocolVersion: string | undefined }> {
    const def = await this.definition(sessionId, server);
    return this.withUpstream(
      sessionId,
      def,
      async (u) => ({ tools: await u.tools(signal), protocolVersion: u.protocolVersion }),
      signal,
    );
  }
}

/**
 * The browser's connector (core/mcp/server-definition.ts UpstreamConnector) for `url` definitions: core's
 * streamableHttpConnector (the SDK's Streamable HTTP client transport, 8 MiB per message with the session ended
 * on an oversize one, the server-message rules) over mcpFetch (no ambient credentials, no referrer, redirects
 * refused, a network failure diagnosed as E_MCP_CORS or E_MCP_UNREACHABLE); `headers` gives the definition's
 * header values (secrets).
 */
export function browserConnector(headers: (def: McpDefinition) => Promise<Record<string, string>>): UpstreamConnector {
  // 2026-07-28 first (server/discover, stateless): its requests carry the MCP-Protocol-Version / Mcp-Method / Mcp-Name
  // headers, which a server's CORS policy must list (Access-Control-Allow-Headers); a refused preflight reads as a
  // network failure, so the bridge opens such a server again with the 2025 handshake (BridgeOptions legacyFallback)
  return streamableHttpConnector({
    fetchFor: (def) => mcpFetch(def.name, {}),
    headers: (def) => headers(def as McpDefinition),
    negotiation: 'auto',
  });
}
