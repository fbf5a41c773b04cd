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
 * JSON-RPC codes of the bridge's own errors: implementation-defined server errors (JSON-RPC 2.0 section 5.1:
 * -32000..-32099), each distinct and none of the MCP SDK's own (-32000 ConnectionClosed, -32001 RequestTimeout, which a
 * client also raises for its own timeout, -32002, -32021, -32022, -32042), so a client can tell them apart by number:
 * - -32010 refused: the gate said no (a deny rule, a person's "no", nobody to ask, a pause, a hook);
 * - -32011 the server did not answer within its call timeout (its session ended);
 * - -32012 the server's process exited while a request waited;
 * - -32013 the server was defined again; the older session was ended;
 * - -32014 the server session ended before this request was answered (the next call starts a new one);
 * - -32015 the server sent a message over the message limit (8 MiB; its session ended);
 * - -32016 the server wrote 100 lines that are not JSON-RPC (its session ended);
 * - -32019 any other failure of the bridge or of the server it reaches (`data.code` says which).
 * (-32003 is a busy bridge, -32020 a 2026-07-28 header that disagrees with the body: wire/http-headers.ts.)
 */
export const BRIDGE_ERROR_CODES: Readonly<Record<string, number>> = Object.freeze({
  E_MCP_TIMEOUT: -32011,
  E_MCP_CRASHED: -32012,
  E_MCP_REDEFINED: -32013,
  E_MCP_ENDED: -32014,
  E_MCP_OVERSIZE: -32015,
  E_MCP_GARBAGE: -32016,
  E_BUSY: -32003,
});

/** The refusals of the gate (core/policy/gate.ts), one JSON-RPC code for all: -32010, `data.code` says which. */
export const GATE_REFUSAL_CODES: ReadonlySet<string> = new Set([
  'E_CAPABILITY_DENIED',
  'E_APPROVAL_REQUIRED',
  'E_PAUSED',
  'E_HOOK_BLOCKED',
  'E_HOOK_FAILED',
  'E_SECRET_DENIED',
]);
/** JSON-RPC code of a refusal by the gate. */
export const GATE_REFUSED = -32010;
/** JSON-RPC code of any other failure of the bridge or of the server it reaches. */
export const BRIDGE_FAILED = -32019;

/** The JSON-RPC code a client gets for a stable code (see BRIDGE_ERROR_CODES). */
export function rpcCodeOf(code: string): number {
  if (code === 'E_INVALID_ARGS' || code === 'E_UNKNOWN_TOOL') return RPC.INVALID_PARAMS;
  if (GATE_REFUSAL_CODES.has(code)) return GATE_REFUSED;
  return BRIDGE_ERROR_CODES[code] ?? BRIDGE_FAILED;
}

/**
 * Map a refusal to the JSON-RPC error the client sees (rpcCodeOf): -32602 for bad arguments or an unknown tool,
 * -32010 for the gate's refusals, BRIDGE_ERROR_CODES for the bridge's and its servers' faults, -32019 otherwise;
 * `data.code` keeps the stable code. Never -32001, the SDK's request timeout. Errors from a server (the MCP SDK's
 * ProtocolError, of its client or its server package) pass as they are.
 */
export function toMcpError(e: unknown, hint?: ClientHint): Error {
  if (e instanceof ProtocolError || e instanceof RpcFailure) return e;
  const t = toTyError(e, 'E_MCP');
  // core's messages are host-neutral; an MCP client's hint names the rule or setting, never a command line
  return new RpcFailure(rpcCodeOf(t.code), clientMessage(t, hint), { code: t.code });
}
