// Public surface of the MCP bridge in core (package export "./core/mcp"): message rules, sessions, naming, gate
// integration, transports injected by each host; core, trusted side.
/**
 * The MCP bridge, host-agnostic. A host supplies two things and gets the whole bridge (message rules,
 * session limits and their clock, SERVER__NAME / tymcp:// mapping, namespaces, argument checks against each
 * tool's own schema, the gate step and its audit, one request-log line per request):
 *
 * - an `McpDefinitionSource` (where server definitions and namespaces live; loaded again on every gated
 *   request), and
 * - an `UpstreamConnector` ("connect to upstream server X": returns an SDK Transport with the
 *   server-message rules applied). `streamableHttpConnector()` is the fetch-based one for `url`
 *   definitions and works in Node and in the browser (the SDK's StreamableHTTPClientTransport uses fetch);
 *   the command line's `nodeConnector` (node/mcp/upstream.ts) adds child processes and shared hubs.
 *
 * A browser host, for example:
 *
 * ```ts
 * import { McpBridge, streamableHttpConnector, serveSession, type McpDefinition } from 'tysandbox/core/mcp';
 * const defs = new Map<string, McpDefinition>([[
 *   'docs', { v: 1, name: 'docs', url: 'https://mcp.example.com/mcp', args: [], env: {}, allow: [], ask: 'default',
 * shared: false, folder: '' },
 * ]]);
 * const bridge = new McpBridge({
 *   sandbox: 'page',                      // principal `mcp:page`; limits count per sandbox
 *   gate,                                 // the host's Gate: every tools/call, resources/read, prompts/get goes
 * through gate.run
 *   source: {
 *     list: async () => [...defs.keys()].sort(),
 *     load: async (n) => defs.get(n),
 *     loadSync: (n) => defs.get(n),
 *     fingerprint: (d) => JSON.stringify([d.url, d.env]),   // stable: decisions are stored under it
 *   },
 *   connect: streamableHttpConnector({ headers: async (d) => ({ authorization: `Bearer ${await secrets.get(d.name)}` })
 * }),
 *   log: (line) => audit.debug(line),     // JSON lines: server, method, name, outcome; never arguments
 * });
 * ```
 *
 * Then either serve an MCP client with it (`serveSession(bridge, transport)`: one client session over any
 * SDK server Transport that applies the client-message rules, see GuardedLineTransport), or call it directly
 * as the host's own invoker does: `bridge.callBridged(sessionId, 'docs', 'search', args, signal)` (a
 * CallToolResult; refusals throw TyError with a stable code) after `bridge.newSessionId()`, and
 * `bridge.closeSession(sessionId)` / `bridge.close()` at the end. Header values given by `headers` stay in
 * the transport: they reach no question, log line or audit record.
 *
 * Protocol eras: each upstream session negotiates its revision (MCP 2026-07-28 via a `server/discover` probe,
 * else the 2025-11-25 `initialize`; logged as `{"method":"connect","outcome":"protocol:..."}`). A connector
 * whose transport reports `negotiation: 'legacy'` (`streamableHttpConnector({ negotiation: 'legacy' })`, as the
 * browser's does: a page's CORS preflight refuses the 2026 headers of most servers) goes to the handshake at once.
 */
export { McpBridge, type BridgeOptions } from './bridge/bridge.js';
export { serveSession } from './wire/serve-session.js';
export { GuardedLineTransport } from './wire/guarded-transport.js';
export { NAME_SEP } from './bridge/naming.js';
export type { LocalTools } from './bridge/context.js';
export type { DirectPath } from './bridge/direct.js';
export { SERVER_RULE_SCOPE, definitionRevision, hintsOf, previewOf, serverRule } from './bridge/gate.js';
export { UpstreamSession, type UpstreamOptions, type UpstreamTool, type CancelSignal } from './upstream/session.js';
export {
  RuledTransport,
  cappedFetch,
  streamableHttpConnector,
  type StreamableHttpConnectorOptions,
} from './upstream/transport.js';
export {
  DEFAULT_CALL_TIMEOUT_MS,
  McpDefinitionSchema,
  SERVER_NAME_RE,
  ServerNameSchema,
  headersFromEnv,
  type ConnectContext,
  type McpDefinition,
  type McpDefinitionSource,
  type UpstreamConnector,
  type UpstreamTransport,
} from './server-definition.js';
export {
  prefixedNaming,
  singleNaming,
  RES_PREFIX,
  mapToolResult,
  mapPromptResult,
  type Naming,
} from './bridge/naming.js';
export {
  MAX_MESSAGE_BYTES,
  RPC,
  classify,
  clientMessageRule,
  parseMessage,
  rpcError,
  serverMessageRule,
  requestLogLine,
  LineFramer,
  frame,
  type RpcId,
} from './wire/messages.js';
export { checkRequestParams, ClientLifecycle } from './wire/params.js';
export { SessionPool, DEFAULT_POOL_LIMITS, type PoolLimits } from './upstream/pool.js';
export { SessionClock, DEFAULT_SESSION_IDLE_MS } from './wire/session-clock.js';
export {
  NamespaceSchema,
  chooseTargets,
  mergedSchema,
  type Namespace,
  type NamespaceAction,
} from './bridge/namespace.js';
export { checkToolArguments, checkToolSchema, checkStructuredContent } from './bridge/args.js';
export { StoreDefinitionMemory, definitionHash, type DefinitionMemory } from './bridge/definitions.js';
export { TOOL_EXECUTION_CODES, clientMessage, toolErrorResult, withFeedback } from './bridge/results.js';
export { BRIDGE_ERROR_CODES, GATE_REFUSED, BRIDGE_FAILED, RpcFailure, rpcCodeOf, toMcpError } from './wire/errors.js';
