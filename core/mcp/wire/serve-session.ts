// "Serve this client session": one MCP client session of the bridge over a guarded server transport, until it closes;
// core, trusted side.
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import type { McpBridge } from '../bridge/bridge.js';
import type { DirectPath } from '../bridge/direct.js';

/**
 * Serve one client session: a new bridge session, its SDK Server connected to `transport` (which must
 * apply the client-message rules first, e.g. GuardedLineTransport; its `direct` slot gets the bridge's direct
 * tools/call path unless `opts.direct` is false), then, when the transport closes, every server session of it stops.
 * Resolves when the session is over.
 */
export async function serveSession(
  bridge: McpBridge,
  transport: Transport & { direct?: DirectPath },
  opts: { direct?: boolean } = {},
): Promise<void> {
  const sessionId = bridge.newSessionId();
  const server = bridge.createServer(sessionId);
  if (opts.direct !== false)
    transport.direct = bridge.directPath(sessionId, (m) => void transport.send(m as JSONRPCMessage));
  const done = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
  });
  await server.connect(transport);
  await done;
  await bridge.closeSession(sessionId);
}
