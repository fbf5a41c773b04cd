// The bridge's own tools/call on the wire: the structural check of a request's params its direct path relies on, a
// 2026-07-28 result's encoding, the structural check of a server's result; host-agnostic core, trusted side.
import { ENVELOPE_CAPABILITIES_KEY, ENVELOPE_VERSION_KEY, isPlainObject } from './messages.js';

/** The fields of a plain `tools/call` request the bridge forwards itself (see `toolCallParams`). */
export interface ToolCallParams {
  name: string;
  arguments: unknown;
  progressToken?: string | number;
  /** A 2026-07-28 request: the protocol version its `_meta` envelope names (absent: a 2025-era request). */
  envelope?: string;
}

/** `_meta` key of a 2026-07-28 envelope's client identity (MCP 2026-07-28 "Versioning"; SDK CLIENT_INFO_META_KEY). */
export const ENVELOPE_CLIENT_INFO_KEY = 'io.modelcontextprotocol/clientInfo';
/** `_meta` key of a 2026-07-28 envelope's per-request log level (SDK LOG_LEVEL_META_KEY). */
export const ENVELOPE_LOG_LEVEL_KEY = 'io.modelcontextprotocol/logLevel';
/**
 * `_meta` key under which a 2026-07-28 result names the server that produced it (SDK SERVER_INFO_META_KEY, spec PR
 * #3002).
 */
export const SERVER_INFO_META_KEY = 'io.modelcontextprotocol/serverInfo';
const LOG_LEVELS: ReadonlySet<unknown> = new Set([
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
]);
const ENVELOPE_KEYS: ReadonlySet<string> = new Set([
  ENVELOPE_VERSION_KEY,
  ENVELOPE_CAPABILITIES_KEY,
  ENVELOPE_CLIENT_INFO_KEY,
  ENVELOPE_LOG_LEVEL_KEY,
]);
const optStr = (o: Record<string, unknown>, k: string): boolean => o[k] === undefined || typeof o[k] === 'string';

/**
 * Whether a 2026-07-28 `_meta` envelope is plainly one the SDK's RequestMetaEnvelopeSchema takes: the version a
 * string, the client's capabilities `{}` (the client-message rules have emptied them), the client identity absent
 * or `{name, version}` strings (title, description, websiteUrl strings), the log level absent or one of MCP's
 * eight, and no other reserved `io.modelcontextprotocol/` key. False is no verdict: such a request takes the SDK
 * path, which accepts or refuses it with its own error.
 */
function plainEnvelope(meta: Record<string, unknown>): boolean {
  if (typeof meta[ENVELOPE_VERSION_KEY] !== 'string') return false;
  const caps = meta[ENVELOPE_CAPABILITIES_KEY];
  if (!isPlainObject(caps) || Object.keys(caps).length !== 0) return false;
  const info = meta[ENVELOPE_CLIENT_INFO_KEY];
  if (info !== undefined) {
    if (!isPlainObject(info) || typeof info.name !== 'string' || typeof info.version !== 'string') return false;
    if (
      !optStr(info, 'title') ||
      !optStr(info, 'description') ||
      !optStr(info, 'websiteUrl') ||
      info.icons !== undefined
    )
      return false;
  }
  if (meta[ENVELOPE_LOG_LEVEL_KEY] !== undefined && !LOG_LEVELS.has(meta[ENVELOPE_LOG_LEVEL_KEY])) return false;
  for (const k of Object.keys(meta))
    if (k.startsWith('io.modelcontextprotocol/') && !ENVELOPE_KEYS.has(k)) return false;
  return true;
}

/**
 * The structural check of a `tools/call` request's params that the bridge's direct path relies on (the
 * same fields the MCP SDK's CallToolRequestSchema checks): `name` a string, `arguments` absent or an
 * object, `_meta` absent or an object whose `progressToken` is absent, a string or an integer. A 2026-07-28
 * request (its `_meta` names a protocol version) is taken when its envelope is plain (see plainEnvelope) and it
 * is no multi-round-trip retry (`inputResponses`, `requestState`). Anything else, and task-augmented calls
 * (`task`), returns undefined: such a request takes the SDK path, which answers it with its own error.
 */
export function toolCallParams(params: unknown): ToolCallParams | undefined {
  if (!isPlainObject(params)) return undefined;
  const has = (k: string): boolean => Object.prototype.hasOwnProperty.call(params, k);
  if (typeof params.name !== 'string' || has('task') || has('inputResponses') || has('requestState')) return undefined;
  if (has('arguments') && params.arguments !== undefined && !isPlainObject(params.arguments)) return undefined;
  const out: ToolCallParams = { name: params.name, arguments: params.arguments };
  if (has('_meta')) {
    const meta = params._meta;
    if (!isPlainObject(meta)) return undefined;
    if (Object.prototype.hasOwnProperty.call(meta, ENVELOPE_VERSION_KEY)) {
      if (!plainEnvelope(meta)) return undefined;
      out.envelope = meta[ENVELOPE_VERSION_KEY] as string;
    }
    const t = meta.progressToken;
    if (t !== undefined && typeof t !== 'string' && !(typeof t === 'number' && Number.isInteger(t))) return undefined;
    if (t !== undefined) out.progressToken = t;
  }
  return out;
}

/**
 * A tools/call result as the 2026-07-28 wire carries it, what the SDK Server's encode step does for it
 * (encodeResult: `resultType: "complete"` unless the result names one, the server's identity under
 * `_meta["io.modelcontextprotocol/serverInfo"]` unless `_meta` already names one or is not an object).
 */
export function encodeModernToolResult(
  result: Record<string, unknown>,
  serverInfo: { name: string; version: string },
): Record<string, unknown> {
  const out: Record<string, unknown> =
    result.resultType === undefined ? { ...result, resultType: 'complete' } : { ...result };
  const meta = out._meta;
  if (meta === undefined) out._meta = { [SERVER_INFO_META_KEY]: serverInfo };
  else if (isPlainObject(meta) && meta[SERVER_INFO_META_KEY] === undefined)
    out._meta = { ...meta, [SERVER_INFO_META_KEY]: serverInfo };
  return out;
}

const isStr = (v: unknown): v is string => typeof v === 'string';

/** One content block as MCP's ContentBlock defines it (text, image, audio, resource_link, resource). */
function contentBlockProblem(b: unknown): string | undefined {
  if (!isPlainObject(b)) return 'is not an object';
  switch (b.type) {
    case 'text':
      return isStr(b.text) ? undefined : 'text needs a string "text"';
    case 'image':
    case 'audio':
      return isStr(b.data) && isStr(b.mimeType) ? undefined : `${b.type} needs string "data" and "mimeType"`;
    case 'resource_link':
      return isStr(b.uri) && isStr(b.name) ? undefined : 'resource_link needs string "uri" and "name"';
    case 'resource': {
      const r = b.resource;
      if (!isPlainObject(r) || !isStr(r.uri)) return 'resource needs an object "resource" with a string "uri"';
      return isStr(r.text) || isStr(r.blob) ? undefined : 'resource needs "text" or "blob"';
    }
    default:
      return 'has an unknown type';
  }
}

/**
 * Structural check of a server's `tools/call` result before it is passed on (the checks of the MCP SDK's
 * CallToolResultSchema that matter to a client: `content` an array of known content blocks, `isError` a
 * boolean, `structuredContent` and `_meta` objects; other fields pass as they are, as in the SDK).
 * A missing `content` becomes `[]` (the SDK's default). Never mutates its input.
 */
export function checkToolResult(
  value: unknown,
): { ok: true; result: Record<string, unknown> } | { ok: false; message: string } {
  if (!isPlainObject(value)) return { ok: false, message: 'the result is not an object' };
  if (value.isError !== undefined && typeof value.isError !== 'boolean')
    return { ok: false, message: '"isError" is not a boolean' };
  if (value.structuredContent !== undefined && !isPlainObject(value.structuredContent))
    return { ok: false, message: '"structuredContent" is not an object' };
  if (value._meta !== undefined && !isPlainObject(value._meta))
    return { ok: false, message: '"_meta" is not an object' };
  if (value.content === undefined) return { ok: true, result: { ...value, content: [] } };
  if (!Array.isArray(value.content)) return { ok: false, message: '"content" is not an array' };
  for (let i = 0; i < value.content.length; i++) {
    const p = contentBlockProblem(value.content[i]);
    if (p !== undefined) return { ok: false, message: `content[${i}] ${p}` };
  }
  return { ok: true, result: value };
}
