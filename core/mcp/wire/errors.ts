// The JSON-RPC errors a client of the MCP bridge gets: a refusal's stable code mapped to a JSON-RPC code (its message
// with the client's hint), a bridged server's own faults kept distinct, a server's own errors passed as they are; core,
// trusted side.
import { ProtocolError } from '@modelcontextprotocol/server';
import { toTyError } from '../../errors.js';
import { clientMessage, type ClientHint } from '../bridge/results.js';
import { RPC } from './messages.js';

/** A JSON-RPC error as the SDK Server sends it (`code`, `message` as is, `data`). */
export class RpcFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data: { code: string },
  ) {
    super(message);
  }
}

/**
 * JSON-RPC codes (implementation-defined server errors, -32000..-32099) of a bridged server's own faults,
 * each distinct, and none the SDK's RequestTimeout (-32001) or ConnectionClosed (-32000): a server that
 * did not answer within its call timeout, one whose process exited, a session ended by a redefinition.
 */
export const SERVER_FAULT_CODES: Readonly<Record<string, number>> = {
  E_MCP_TIMEOUT: -32011,
  E_MCP_CRASHED: -32012,
  E_MCP_REDEFINED: -32013,
};

/**
 * Map a refusal to the JSON-RPC error the client sees: -32602 for bad arguments or an unknown tool,
 * -32003 for E_BUSY, SERVER_FAULT_CODES for a server's faults, -32001 otherwise; `data.code` keeps the stable code.
 * Errors from a server (the MCP SDK's ProtocolError, of its client or its server package) pass as they are.
 */
export function toMcpError(e: unknown, hint?: ClientHint): Error {
  if (e instanceof ProtocolError || e instanceof RpcFailure) return e;
  const t = toTyError(e, 'E_MCP');
  const num =
    t.code === 'E_INVALID_ARGS' || t.code === 'E_UNKNOWN_TOOL'
      ? RPC.INVALID_PARAMS
      : (SERVER_FAULT_CODES[t.code] ?? (t.code === 'E_BUSY' ? -32003 : -32001));
  // core's messages are host-neutral; an MCP client's hint names the rule or setting, never a command line
  return new RpcFailure(num, clientMessage(t, hint), { code: t.code });
}
