// The command line's MCP bridge: core's McpBridge (core/mcp/bridge/bridge.ts) over the settings folder's definitions
// and the Node connector (processes, hubs, HTTP); Node host, trusted side.
import { McpBridge as CoreBridge, type BridgeOptions as CoreBridgeOptions } from '../../core/mcp/bridge/bridge.js';
import type { HubLauncher } from './hub.js';
import { fileDefinitionSource } from './source.js';
import { nodeConnector } from './upstream.js';

export { NAME_SEP } from '../../core/mcp/bridge/naming.js';
export type { LocalTools } from '../../core/mcp/bridge/context.js';
export type { DirectPath } from '../../core/mcp/bridge/direct.js';
export {
  SERVER_RULE_SCOPE,
  definitionRevision,
  hintsOf,
  previewOf,
  serverRule,
} from '../../core/mcp/bridge/gate.js';
export { withFeedback } from '../../core/mcp/bridge/results.js';
export {
  BRIDGE_ERROR_CODES,
  GATE_REFUSED,
  BRIDGE_FAILED,
  RpcFailure,
  rpcCodeOf,
  toMcpError,
} from '../../core/mcp/wire/errors.js';

export interface BridgeOptions extends Omit<CoreBridgeOptions, 'source' | 'connect'> {
  /** tycli home (definitions are read from it on every call). */
  home: string;
  /** How a hub for a shared server is started (default: this process's own tycli entry, `mcp hub NAME`). */
  hubLauncher?: HubLauncher;
}

/** `tycli mcp hub NAME` with the same runtime and entry as this process. */
export function defaultHubLauncher(home: string): HubLauncher {
  return (def) => ({
    command: process.execPath,
    args: [...process.execArgv, process.argv[1] ?? '', '--home', home, 'mcp', 'hub', def.name],
  });
}

/** The bridge with definitions from `<home>/config/mcp` and servers reached by nodeConnector. */
export class McpBridge extends CoreBridge {
  constructor(opts: BridgeOptions) {
    const { home, hubLauncher, ...rest } = opts;
    super({
      ...rest,
      source: fileDefinitionSource(home),
      connect: nodeConnector({ home, launcher: hubLauncher ?? defaultHubLauncher(home) }),
    });
  }
}
