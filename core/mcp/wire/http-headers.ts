// The 2026-07-28 Streamable HTTP standard request headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name) checked against
// the JSON-RPC body before anything is served; core, trusted side.
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

/**
 * The protocol version a 2026-07-28 message names in its envelope or its MCP-Protocol-Version header (undefined: a
 * 2025-era one).
 */
export function modernVersion(message: { params?: unknown }, versionHeader: string | undefined): string | undefined {
  const params = message.params;
  const meta = typeof params === 'object' && params !== null ? (params as { _meta?: unknown })._meta : undefined;
  const claimed =
    typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>)[ENVELOPE_VERSION_KEY] : undefined;
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
export function checkStandardHeaders(
  header: (name: string) => string | undefined,
  message: { id?: unknown; method?: unknown; params?: unknown },
): RpcErrorResponse | undefined {
  const id: RpcId | null = typeof message.id === 'string' || typeof message.id === 'number' ? message.id : null;
  const method = typeof message.method === 'string' ? message.method : undefined;
  if (method === undefined) return undefined;
  const refuse = (why: string): RpcErrorResponse =>
    rpcError(id, HEADER_MISMATCH, `header mismatch: ${why}`, 'E_MCP_HEADER_MISMATCH');
  const version = header('mcp-protocol-version');
  const params = message.params;
  const meta = typeof params === 'object' && params !== null ? (params as { _meta?: unknown })._meta : undefined;
  const claimed =
    typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>)[ENVELOPE_VERSION_KEY] : undefined;
  if (version === undefined) return refuse('the MCP-Protocol-Version header is required');
  if (typeof claimed === 'string' && decodeHeaderValue(version) !== claimed)
    return refuse(`MCP-Protocol-Version says ${version.slice(0, 20)} but the body's envelope ${claimed.slice(0, 20)}`);
  const mcpMethod = header('mcp-method');
  if (mcpMethod === undefined) return refuse('the Mcp-Method header is required');
  if (decodeHeaderValue(mcpMethod) !== method)
    return refuse(`Mcp-Method names ${mcpMethod.slice(0, 64)} but the body ${method.slice(0, 64)}`);
  const field = Object.prototype.hasOwnProperty.call(NAME_SOURCE, method) ? NAME_SOURCE[method] : undefined;
  if (field === undefined) return undefined;
  const raw = typeof params === 'object' && params !== null ? (params as Record<string, unknown>)[field] : undefined;
  if (typeof raw !== 'string') return undefined;
  const name = header('mcp-name');
  if (name === undefined) return refuse(`the Mcp-Name header is required for ${method} (params.${field})`);
  const decoded = decodeHeaderValue(name);
  if (decoded === undefined) return refuse('the Mcp-Name header carries an invalid base64 sentinel');
  if (decoded !== raw)
    return refuse(`Mcp-Name names "${decoded.slice(0, 80)}" but params.${field} is "${raw.slice(0, 80)}"`);
  return undefined;
}

/** The schema keyword naming a tool argument's `Mcp-Param-*` header (MCP 2026-07-28, SEP-2243). */
export const X_MCP_HEADER = 'x-mcp-header';
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const HEADER_TYPES: ReadonlySet<unknown> = new Set(['string', 'integer', 'boolean', 'number']);
/** Subschema keywords under which an `x-mcp-header` is not statically reachable (the SDK's scan refuses those). */
const UNREACHABLE = [
  'items',
  'prefixItems',
  'additionalProperties',
  'patternProperties',
  'oneOf',
  'anyOf',
  'allOf',
  'not',
  'if',
  'then',
  'else',
  '$defs',
  'definitions',
  'dependentSchemas',
  'contains',
];

/** One argument mirrored in a header: where it is in `arguments` and the header's name suffix. */
export interface ParamHeader {
  path: string[];
  header: string;
  type: string;
}

/**
 * The `Mcp-Param-*` declarations of a tool's input schema (MCP 2026-07-28 "Custom headers"; the TypeScript SDK 2.x
 * scanXMcpHeaderDeclarations): `x-mcp-header` on properties reached through `properties` only, a non-empty RFC 9110
 * token, on a primitive-typed property, unique regardless of case.
 * @returns the declarations, or why they are invalid (such a tool is not offered).
 */
export function paramHeaders(schema: unknown): { ok: true; headers: ParamHeader[] } | { ok: false; message: string } {
  const out: ParamHeader[] = [];
  const seen = new Set<string>();
  const visit = (node: unknown, path: string[], reachable: boolean, depth: number): string | undefined => {
    if (typeof node !== 'object' || node === null || depth > 32) return undefined;
    const s = node as Record<string, unknown>;
    if (Object.prototype.hasOwnProperty.call(s, X_MCP_HEADER)) {
      const where = path.join('.') || '(root)';
      const raw = s[X_MCP_HEADER];
      if (!reachable || path.length === 0)
        return `${where}: x-mcp-header is only allowed on properties reached through "properties"`;
      if (typeof raw !== 'string' || !TOKEN.test(raw)) return `${where}: x-mcp-header must be an RFC 9110 token`;
      if (!HEADER_TYPES.has(s.type))
        return `${where}: x-mcp-header is only allowed on string, integer, number or boolean properties`;
      if (seen.has(raw.toLowerCase())) return `x-mcp-header "${raw}" is declared twice`;
      seen.add(raw.toLowerCase());
      out.push({ path, header: raw, type: s.type as string });
    }
    if (typeof s.properties === 'object' && s.properties !== null) {
      for (const [k, child] of Object.entries(s.properties)) {
        const f = visit(child, [...path, k], reachable, depth + 1);
        if (f !== undefined) return f;
      }
    }
    for (const k of UNREACHABLE) {
      const sub = s[k];
      if (sub === undefined) continue;
      const branches = Array.isArray(sub)
        ? sub
        : typeof sub === 'object' &&
            sub !== null &&
            (k === '$defs' || k === 'definitions' || k === 'patternProperties' || k === 'dependentSchemas')
          ? Object.values(sub)
          : [sub];
      for (const b of branches) {
        const f = visit(b, [...path, `<${k}>`], false, depth + 1);
        if (f !== undefined) return f;
      }
    }
    return undefined;
  };
  const fault = visit(schema, [], true, 0);
  return fault === undefined ? { ok: true, headers: out } : { ok: false, message: fault };
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * An `Mcp-Param-*` value as sent: a `=?base64?...?=` sentinel decoded (strict padding and alphabet), anything else
 * literal; undefined: a bad sentinel.
 */
function paramValue(raw: string): string | undefined {
  const v = raw.replace(/^[ \t]+|[ \t]+$/g, '');
  if (!(v.startsWith('=?base64?') && v.endsWith('?='))) return v;
  const b64 = v.slice(9, v.length - 2);
  if (!BASE64.test(b64)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
  } catch {
    return undefined;
  }
}

const primitiveText = (v: unknown): string | undefined =>
  typeof v === 'string'
    ? v
    : typeof v === 'boolean'
      ? String(v)
      : typeof v === 'number' && Number.isFinite(v) && (!Number.isInteger(v) || Number.isSafeInteger(v))
        ? String(v)
        : undefined;

/**
 * Check a tools/call's `Mcp-Param-*` headers against its arguments (MCP 2026-07-28, SEP-2243; the SDK's
 * validateMcpParamHeaders): for every declared argument present in the body, its header must be there and say the
 * same (a base64 sentinel decoded; numbers compared as numbers).
 * @returns undefined when they agree, else the -32020 error to send with HTTP 400 (nothing is served).
 */
export function checkParamHeaders(
  declared: readonly ParamHeader[],
  args: unknown,
  header: (name: string) => string | undefined,
  id: RpcId | null,
): RpcErrorResponse | undefined {
  for (const d of declared) {
    let node: unknown = args;
    for (const k of d.path)
      node = typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[k] : undefined;
    const body = primitiveText(node);
    if (body === undefined) continue;
    const name = `mcp-param-${d.header.toLowerCase()}`;
    const raw = header(name);
    const refuse = (why: string): RpcErrorResponse =>
      rpcError(id, HEADER_MISMATCH, `header mismatch: ${why}`, 'E_MCP_HEADER_MISMATCH');
    if (raw === undefined)
      return refuse(`the body carries ${d.path.join('.')} but the Mcp-Param-${d.header} header is absent`);
    const v = paramValue(raw);
    if (v === undefined) return refuse(`the Mcp-Param-${d.header} header carries an invalid base64 sentinel`);
    const same = typeof node === 'number' && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) === node : v === body;
    if (!same) return refuse(`Mcp-Param-${d.header} does not say what the body's ${d.path.join('.')} says`);
  }
  return undefined;
}
