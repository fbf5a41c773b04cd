// JSON-RPC 2.0 framing rules of the registration protocol: classify one message, build errors with stable codes; core,
// trusted side.
//
// Follows JSON-RPC 2.0 (https://www.jsonrpc.org/specification) with the bridge's stricter rules
// (core/mcp/wire/messages.ts): one message per request (no batches), ids are strings or numbers, an id-less
// request is refused (only `$/cancel` may be a notification), messages over the size cap are refused.
import type { ErrorCode } from '../../protocol/errors.js';
import { CANCEL_METHOD, type RpcId } from '../../protocol/registration.js';
import { findProtoKey, MAX_MESSAGE_BYTES } from '../mcp/wire/messages.js';
import type { TyError } from '../errors.js';

/** Largest message, bytes: 8 MiB, as for the MCP bridge. */
export const MAX_PROTOCOL_MESSAGE_BYTES = MAX_MESSAGE_BYTES;

/** JSON-RPC error codes used here. Domain failures use SERVER_ERROR with the stable code in `data.code`. */
export const RPC_CODES = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  /** `initialize` has not succeeded on this connection yet (as LSP's ServerNotInitialized). */
  NOT_INITIALIZED: -32002,
  /** Any refusal or failure with a stable E_ code (data.code). */
  SERVER_ERROR: -32000,
} as const;

export interface RpcErrorBody {
  code: number;
  message: string;
  data: { code: ErrorCode; [k: string]: unknown };
}
export interface RpcError {
  jsonrpc: '2.0';
  id: RpcId | null;
  error: RpcErrorBody;
}
export interface RpcResult {
  jsonrpc: '2.0';
  id: RpcId;
  result: unknown;
}
export interface RpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: unknown;
}
export interface RpcRequest {
  jsonrpc: '2.0';
  id: RpcId;
  method: string;
  params?: unknown;
}
export type RpcMessage = RpcError | RpcResult | RpcNotification | RpcRequest;

/** One JSON-RPC error response; `data.code` always carries the stable code. Messages are cut at 4096 characters. */
export function rpcFailure(
  id: RpcId | null,
  code: number,
  message: string,
  stable: ErrorCode,
  extra: Record<string, unknown> = {},
): RpcError {
  return { jsonrpc: '2.0', id, error: { code, message: message.slice(0, 4096), data: { ...extra, code: stable } } };
}

/**
 * A TyError as a protocol error (-32000, data.code = its code, plus `path`, `candidates` and `rule` when it has them).
 */
export function rpcFromTyError(id: RpcId | null, e: TyError): RpcError {
  const extra: Record<string, unknown> = {};
  if (typeof e.data?.path === 'string') extra.path = e.data.path;
  if (Array.isArray(e.data?.candidates)) extra.candidates = e.data.candidates;
  if (typeof e.data?.rule === 'string' && e.data.rule) extra.rule = e.data.rule;
  // where in a source the manifest error is (1-based), and which static import it names
  for (const k of ['line', 'column'] as const) if (Number.isSafeInteger(e.data?.[k])) extra[k] = e.data?.[k];
  if (typeof e.data?.import === 'string') extra.import = e.data.import.slice(0, 80);
  if (typeof e.data?.conflictsWith === 'string') extra.conflictsWith = e.data.conflictsWith.slice(0, 64);
  return rpcFailure(id, RPC_CODES.SERVER_ERROR, e.message, e.code, extra);
}

export type Inbound =
  | { kind: 'request'; id: RpcId; method: string; params: unknown }
  | { kind: 'cancel'; params: unknown }
  | { kind: 'response'; id: RpcId; result?: unknown; error?: unknown }
  | { kind: 'invalid'; reply: RpcError };

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Longest string id, characters. */
const MAX_ID_CHARS = 256;
const isId = (v: unknown): v is RpcId =>
  (typeof v === 'string' && v.length <= MAX_ID_CHARS) || (typeof v === 'number' && Number.isSafeInteger(v));
const utf8 = new TextEncoder();

/**
 * Classify one inbound message: text (parsed here) or an already-structured value (postMessage). Oversize
 * (over `maxBytes` of UTF-8 JSON), unparsable, batched, non-2.0, id-less requests other than `$/cancel`,
 * requests with a bad id and params holding a `__proto__` key are `invalid` with a reply that was never run.
 */
export function classifyInbound(input: unknown, maxBytes = MAX_PROTOCOL_MESSAGE_BYTES): Inbound {
  let value: unknown = input;
  if (typeof input === 'string') {
    if (input.length > maxBytes || utf8.encode(input).length > maxBytes)
      return {
        kind: 'invalid',
        reply: rpcFailure(null, RPC_CODES.INVALID_REQUEST, `message over ${maxBytes} bytes refused`, 'E_PROTOCOL'),
      };
    try {
      value = JSON.parse(input);
    } catch {
      return {
        kind: 'invalid',
        reply: rpcFailure(null, RPC_CODES.PARSE_ERROR, 'message is not valid JSON', 'E_PROTOCOL'),
      };
    }
  } else {
    let text: string | undefined;
    try {
      text = JSON.stringify(input);
    } catch {
      text = undefined;
    }
    if (text === undefined)
      return {
        kind: 'invalid',
        reply: rpcFailure(null, RPC_CODES.PARSE_ERROR, 'message is not JSON data', 'E_PROTOCOL'),
      };
    if (text.length > maxBytes || utf8.encode(text).length > maxBytes)
      return {
        kind: 'invalid',
        reply: rpcFailure(null, RPC_CODES.INVALID_REQUEST, `message over ${maxBytes} bytes refused`, 'E_PROTOCOL'),
      };
    value = JSON.parse(text); // a plain copy: no getters, no prototypes
  }
  if (Array.isArray(value))
    return {
      kind: 'invalid',
      reply: rpcFailure(
        null,
        RPC_CODES.INVALID_REQUEST,
        'batches are not accepted: send one JSON-RPC message at a time',
        'E_PROTOCOL',
      ),
    };
  if (!isObj(value) || value.jsonrpc !== '2.0')
    return {
      kind: 'invalid',
      reply: rpcFailure(null, RPC_CODES.INVALID_REQUEST, 'not a JSON-RPC 2.0 message', 'E_PROTOCOL'),
    };
  const has = (k: string): boolean => Object.prototype.hasOwnProperty.call(value, k);
  const proto = findProtoKey(value);
  if (proto !== undefined)
    return {
      kind: 'invalid',
      reply: rpcFailure(
        isId(value.id) ? value.id : null,
        RPC_CODES.INVALID_PARAMS,
        `field "${proto.slice(0, 200)}" refused`,
        'E_USAGE',
      ),
    };
  if (has('method')) {
    const method = value.method;
    if (typeof method !== 'string' || method.length === 0 || method.length > 256)
      return {
        kind: 'invalid',
        reply: rpcFailure(
          isId(value.id) ? value.id : null,
          RPC_CODES.INVALID_REQUEST,
          'method must be a non-empty string',
          'E_PROTOCOL',
        ),
      };
    if (has('params') && !isObj(value.params))
      return {
        kind: 'invalid',
        reply: rpcFailure(
          isId(value.id) ? value.id : null,
          RPC_CODES.INVALID_PARAMS,
          'params must be an object',
          'E_USAGE',
        ),
      };
    if (!has('id')) {
      if (method === CANCEL_METHOD) return { kind: 'cancel', params: value.params };
      return {
        kind: 'invalid',
        reply: rpcFailure(
          null,
          RPC_CODES.INVALID_REQUEST,
          `"${method.slice(0, 80)}" came without an id and was not run: every request needs one (only ${CANCEL_METHOD} is a notification)`,
          'E_PROTOCOL',
        ),
      };
    }
    if (!isId(value.id))
      return {
        kind: 'invalid',
        reply: rpcFailure(
          null,
          RPC_CODES.INVALID_REQUEST,
          `a request needs an id: a string of at most ${MAX_ID_CHARS} characters or a safe integer (null is refused); it was not run`,
          'E_PROTOCOL',
        ),
      };
    return { kind: 'request', id: value.id, method, params: value.params };
  }
  if (has('id') && isId(value.id) && has('result') !== has('error')) {
    return has('result')
      ? { kind: 'response', id: value.id, result: value.result }
      : { kind: 'response', id: value.id, error: value.error };
  }
  return {
    kind: 'invalid',
    reply: rpcFailure(
      null,
      RPC_CODES.INVALID_REQUEST,
      'neither a request, a notification nor a response',
      'E_PROTOCOL',
    ),
  };
}
