// The command line's UpstreamConnector: a `command` server as a child process, a `shared` one through its hub's Unix
// socket, a `url` one over core's fetch-based Streamable HTTP; Node host, trusted side.
import type { UpstreamConnector } from '../../core/mcp/server-definition.js';
import { RuledTransport, streamableHttpConnector } from '../../core/mcp/upstream/transport.js';
import { TyError } from '../../core/errors.js';
import { ProcessTransport } from './process.js';
import { SocketTransport, connectHub, type HubLauncher } from './hub.js';

export {
  UpstreamSession,
  type UpstreamOptions,
  type UpstreamTool,
  type CancelSignal,
} from '../../core/mcp/upstream/session.js';
export { RuledTransport, cappedFetch, streamableHttpConnector } from '../../core/mcp/upstream/transport.js';
export { headersFromEnv } from '../../core/mcp/server-definition.js';

/**
 * Reach a server as its definition says: `shared` through the hub for it (started with `hub.launcher` when
 * none runs; refused without `hub`), `command` as a child process with exactly its saved environment
 * (node/mcp/process.ts), `url` over Streamable HTTP. Every transport applies the server-message rules.
 * @throws TyError E_MCP (a shared server and no hub given, a hub that did not start).
 */
export function nodeConnector(hub?: { home: string; launcher: HubLauncher }): UpstreamConnector {
  const http = streamableHttpConnector();
  return async (def, ctx) => {
    if (def.shared) {
      if (hub === undefined)
        throw new TyError('E_MCP', `shared server "${def.name}" needs a hub, and none can be started here`);
      const sock = await connectHub(hub.home, def, hub.launcher, ctx.signal);
      return new RuledTransport(new SocketTransport(sock), ctx.onFiltered);
    }
    if (def.command !== undefined)
      return new ProcessTransport({
        command: def.command,
        args: def.args,
        env: def.env,
        onFiltered: ctx.onFiltered,
        ...(ctx.passRequests ? { passRequests: ctx.passRequests } : {}),
      });
    return http(def, ctx);
  };
}
