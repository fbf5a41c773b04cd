// The 2026-07-28 Streamable HTTP standard request headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name) checked against the JSON-RPC body before anything is served; core, trusted side.
//
// Source: MCP 2026-07-28 "Transports" (Streamable HTTP, standard request headers, SEP-2243) and the
// TypeScript SDK 2.x reference (validateStandardRequestHeaders): an intermediary routes and authorizes by
// these headers, so a body that says something else must never be served.
import { ENVELOPE_VERSION_KEY, rpcError, type RpcErrorResponse, type RpcId } from './messages.js';

/** JSON-RPC code of a header that disagrees with the body (MCP 2026-07-28 `HeaderMismatch`). */
export const HEADER_MISMATCH = -32020;

/** Which body field `Mcp-Name` mirrors, per method (SEP-2243 "Required For"; SEP-2663 for tasks). */
const NAME_SOURCE: Readonly<Record<string, string>> = Object.assign(Object.create(null) as Record<string, string>, {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
});

/** `=?base64?VALUE?=`: a header value that is not plain visible ASCII, base64 of its UTF-8 bytes. */
const SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/;

/** A header value as sent (sentinel decoded); undefined when the sentinel is malformed. */
export function decodeHeaderValue(raw: string): string | undefined {
  const v = raw.replace(/^[ \t]+|[ \t]+$/g, '');
  if (!v.startsWith('=?base64?')) return v;
  const m = SENTINEL.exec(v);
  if (m === null || (m[1] ?? '').length % 4 !== 0) return undefined;
  try {
    const bin = atob(m[1] ?? '');
    return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
  } catch {
    return undefined;
  }
}

/** The protocol version a 2026-07-28 message names in its envelope or its MCP-Protocol-Version header (undefined: a 2025-era one). */
export function modernVersion(message: { params?: unknown }, versionHeader: string | undefined): string | undefined {
  const params = message.params;
  const meta = typeof params === 'object' && params !== null ? (params as { _meta?: unknown })._meta : undefined;
  const claimed = typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>)[ENVELOPE_VERSION_KEY] : undefined;
  if (typeof claimed === 'string') return claimed;
  return versionHeader !== undefined && versionHeader >= '2026-07-28' ? versionHeader : undefined;
}

/**
 * Check a 2026-07-28 message's standard headers against its body: MCP-Protocol-Version present and the
 * envelope's version; Mcp-Method present and the body's method; Mcp-Name present and equal to the body's
 * `name` (tools/call, prompts/get), `uri` (resources/read) or `taskId` (tasks) whenever the body carries one.
 * `header(name)` returns a header's value (case-insensitive) or undefined.
 * @returns undefined when they agree, else the -32020 error to send with HTTP 400 (nothing is served).
 */
export function checkStandardHeaders(header: (name: string) => string | undefined, message: { id?: unknown; method?: unknown; params?: unknown }): RpcErrorResponse | undefined {
  const id: RpcId | null = typeof message.id === 'string' || typeof message.id === 'number' ? message.id : null;
  const method = typeof message.method === 'string' ? message.method : undefined;
  if (method === undefined) return undefined;
  const refuse = (why: string): RpcErrorResponse => rpcError(id, HEADER_MISMATCH, `header mismatch: ${why}`, 'E_MCP_HEADER_MISMATCH');
  const version = header('mcp-protocol-version');
  const params = message.params;
  const meta = typeof params === 'object' && params !== null ? (params as { _meta?: unknown })._meta : undefined;
  const claimed = typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>)[ENVELOPE_VERSION_KEY] : undefined;
  if (version === undefined) return refuse('the MCP-Protocol-Version header is required');
  if (typeof claimed === 'string' && decodeHeaderValue(version) !== claimed) return refuse(`MCP-Protocol-Version says ${version.slice(0, 20)} but the body's envelope ${claimed.slice(0, 20)}`);
  const mcpMethod = header('mcp-method');
  if (mcpMethod === undefined) return refuse('the Mcp-Method header is required');
  if (decodeHeaderValue(mcpMethod) !== method) return refuse(`Mcp-Method names ${mcpMethod.slice(0, 64)} but the body ${method.slice(0, 64)}`);
  const field = Object.prototype.hasOwnProperty.call(NAME_SOURCE, method) ? NAME_SOURCE[method] : undefined;
  if (field === undefined) return undefined;
  const raw = typeof params === 'object' && params !== null ? (params as Record<string, unknown>)[field] : undefined;
  if (typeof raw !== 'string') return undefined;
  const name = header('mcp-name');
  if (name === undefined) return refuse(`the Mcp-Name header is required for ${method} (params.${field})`);
  const decoded = decodeHeaderValue(name);
  if (decoded === undefined) return refuse('the Mcp-Name header carries an invalid base64 sentinel');
  if (decoded !== raw) return refuse(`Mcp-Name names "${decoded.slice(0, 80)}" but params.${field} is "${raw.slice(0, 80)}"`);
  return undefined;
}
