// MCP bridge message rules (framing, JSON-RPC classification, what passes each way; the bridge's own tools/call shapes:
// tool-call.ts); host-agnostic core, trusted side.
//
// Follows JSON-RPC 2.0 (https://www.jsonrpc.org/specification) and the MCP specification's message
// catalogue (https://modelcontextprotocol.io/specification). Pure functions: the hosts' transports call
// these on every message before anything is forwarded, run or shown.

/** Cap on one JSON-RPC message (one line on stdio, one body on HTTP), bytes: 8 MiB. */
export const MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/** JSON-RPC 2.0 error codes used by the bridge. */
export const RPC = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
} as const;

export type RpcId = string | number;
export interface RpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}
export interface RpcErrorResponse {
  jsonrpc: '2.0';
  id: RpcId | null;
  error: RpcErrorObject;
}
export interface RpcResultResponse {
  jsonrpc: '2.0';
  id: RpcId;
  result: Record<string, unknown>;
}

/** One classified inbound message. `message` is the parsed object, unchanged. */
export type Classified =
  | { kind: 'request'; id: RpcId; method: string; params: unknown; message: Record<string, unknown> }
  | { kind: 'notification'; method: string; params: unknown; message: Record<string, unknown> }
  | { kind: 'response'; id: RpcId; message: Record<string, unknown> }
  | { kind: 'invalid'; reply: RpcErrorResponse };

/** Build a JSON-RPC error response; `data.code` carries the stable string code when given. */
export function rpcError(id: RpcId | null, code: number, message: string, stable?: string): RpcErrorResponse {
  const error: RpcErrorObject = stable === undefined ? { code, message } : { code, message, data: { code: stable } };
  return { jsonrpc: '2.0', id, error };
}

function isId(v: unknown): v is RpcId {
  return (typeof v === 'string' && v.length <= 256) || (typeof v === 'number' && Number.isFinite(v));
}

/** A JSON object (not null, not an array). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Classify one already-parsed JSON value as a JSON-RPC 2.0 message.
 * Batches (arrays, even empty) are `invalid` with -32600: the bridge takes one message per request.
 * A request whose id is null or of a wrong type is `invalid` (-32600): it never runs.
 */
export function classify(value: unknown): Classified {
  if (Array.isArray(value))
    return {
      kind: 'invalid',
      reply: rpcError(
        null,
        RPC.INVALID_REQUEST,
        'batches are not accepted: send one JSON-RPC message per request',
        'E_MCP',
      ),
    };
  if (!isPlainObject(value) || value.jsonrpc !== '2.0')
    return { kind: 'invalid', reply: rpcError(null, RPC.INVALID_REQUEST, 'not a JSON-RPC 2.0 message', 'E_MCP') };
  const has = (k: string): boolean => Object.prototype.hasOwnProperty.call(value, k);
  if (has('method')) {
    const method = value.method;
    if (typeof method !== 'string' || method.length === 0 || method.length > 256)
      return {
        kind: 'invalid',
        reply: rpcError(null, RPC.INVALID_REQUEST, 'method must be a non-empty string', 'E_MCP'),
      };
    if (has('params') && !isPlainObject(value.params) && !Array.isArray(value.params))
      return {
        kind: 'invalid',
        reply: rpcError(isId(value.id) ? value.id : null, RPC.INVALID_REQUEST, 'params must be an object', 'E_MCP'),
      };
    if (!has('id')) return { kind: 'notification', method, params: value.params, message: value };
    if (!isId(value.id))
      return {
        kind: 'invalid',
        reply: rpcError(
          null,
          RPC.INVALID_REQUEST,
          'a request needs a string or number id (null is refused); it was not run',
          'E_MCP',
        ),
      };
    return { kind: 'request', id: value.id, method, params: value.params, message: value };
  }
  if (has('id') && isId(value.id) && has('result') !== has('error'))
    return { kind: 'response', id: value.id, message: value };
  return {
    kind: 'invalid',
    reply: rpcError(null, RPC.INVALID_REQUEST, 'neither a request, a notification nor a response', 'E_MCP'),
  };
}

/** Parse one framed message (text). Bad JSON is `invalid` with -32700. */
export function parseMessage(text: string): Classified {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: 'invalid', reply: rpcError(null, RPC.PARSE_ERROR, 'message is not valid JSON', 'E_MCP') };
  }
  return classify(value);
}

/** MCP notifications a client may send through the bridge; any other notification is dropped. */
export const CLIENT_NOTIFICATIONS: ReadonlySet<string> = new Set([
  'notifications/initialized',
  'notifications/cancelled',
  'notifications/progress',
  'notifications/roots/list_changed',
]);

/** MCP notifications a server may send through the bridge to the client; any other is dropped. */
export const SERVER_NOTIFICATIONS: ReadonlySet<string> = new Set([
  'notifications/cancelled',
  'notifications/progress',
  'notifications/message',
  'notifications/resources/updated',
  'notifications/resources/list_changed',
  'notifications/tools/list_changed',
  'notifications/prompts/list_changed',
  'notifications/tasks/status',
]);

/** How a client request is treated: answered by the bridge, passed as it is, gated (rule or a person), or refused. */
export type ClientRequestRule =
  | { action: 'local' }
  | { action: 'pass' }
  | { action: 'gated'; kind: 'mcp' | 'mcp-resource' | 'mcp-prompt' }
  | { action: 'refuse'; reply: RpcErrorResponse };

const CLIENT_REQUESTS: Readonly<Record<string, ClientRequestRule>> = Object.assign(
  Object.create(null) as Record<string, ClientRequestRule>,
  {
    initialize: { action: 'local' },
    // 2026-07-28 (stateless): what a server offers and which versions, answered by the bridge itself
    'server/discover': { action: 'local' },
    // 2026-07-28: the stream list_changed and resource updates travel on, answered by the bridge itself
    'subscriptions/listen': { action: 'local' },
    ping: { action: 'local' },
    'logging/setLevel': { action: 'local' },
    'tools/list': { action: 'pass' },
    'prompts/list': { action: 'pass' },
    'resources/list': { action: 'pass' },
    'resources/templates/list': { action: 'pass' },
    // argument completion and update subscriptions reach only the server the reference or URI names
    'completion/complete': { action: 'pass' },
    'resources/subscribe': { action: 'pass' },
    'resources/unsubscribe': { action: 'pass' },
    'tools/call': { action: 'gated', kind: 'mcp' },
    'resources/read': { action: 'gated', kind: 'mcp-resource' },
    'prompts/get': { action: 'gated', kind: 'mcp-prompt' },
    // returns a tool's output: same rule as tools/call
    'tasks/result': { action: 'gated', kind: 'mcp' },
  },
);

/**
 * The rule for a client request method (null-prototype table; unknown methods fail closed with -32601).
 */
export function clientRequestRule(id: RpcId, method: string): ClientRequestRule {
  const rule = Object.prototype.hasOwnProperty.call(CLIENT_REQUESTS, method) ? CLIENT_REQUESTS[method] : undefined;
  return (
    rule ?? {
      action: 'refuse',
      reply: rpcError(
        id,
        RPC.METHOD_NOT_FOUND,
        `method "${method.slice(0, 80)}" is not offered through the bridge`,
        'E_MCP',
      ),
    }
  );
}

/** The `_meta` key of a 2026-07-28 request's envelope naming its protocol version (MCP 2026-07-28 "Versioning"). */
export const ENVELOPE_VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
/** The `_meta` key of a 2026-07-28 request's envelope carrying the client's capabilities. */
export const ENVELOPE_CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';

/** The protocol version a 2026-07-28 request names in its `_meta` envelope (undefined: a 2025-era request). */
export function envelopeVersion(params: unknown): string | undefined {
  const meta = isPlainObject(params) ? params._meta : undefined;
  const v = isPlainObject(meta) ? meta[ENVELOPE_VERSION_KEY] : undefined;
  return typeof v === 'string' ? v : undefined;
}

/**
 * The client's capabilities removed (a new object; the input is not changed), so nothing behind the bridge
 * learns it may ask for sampling, elicitation or roots: from `initialize` (2025-11-25 and earlier), and from
 * the `_meta` envelope every 2026-07-28 request carries (its `clientCapabilities` become `{}`; the rest of
 * the envelope, version and client info, is kept).
 */
export function stripClientCapabilities(message: Record<string, unknown>): Record<string, unknown> {
  let out = message;
  if (message.method === 'initialize') {
    const params = isPlainObject(message.params) ? message.params : {};
    out = { ...message, params: { ...params, capabilities: {} } };
  }
  const params = out.params;
  const meta = isPlainObject(params) ? params._meta : undefined;
  if (
    isPlainObject(params) &&
    isPlainObject(meta) &&
    (Object.prototype.hasOwnProperty.call(meta, ENVELOPE_CAPABILITIES_KEY) ||
      Object.prototype.hasOwnProperty.call(meta, DECLARED_CAPABILITIES_KEY))
  ) {
    // what the client declared stays with the bridge (DECLARED_CAPABILITIES_KEY, never set by a client: a value
    // the client sent there is replaced) to decide which input requests may be relayed to it
    const { [DECLARED_CAPABILITIES_KEY]: _forged, ...rest } = meta;
    const declared = rest[ENVELOPE_CAPABILITIES_KEY];
    const next: Record<string, unknown> = Object.prototype.hasOwnProperty.call(rest, ENVELOPE_CAPABILITIES_KEY)
      ? { ...rest, [ENVELOPE_CAPABILITIES_KEY]: {} }
      : rest;
    if (message.method !== 'initialize' && isPlainObject(declared)) next[DECLARED_CAPABILITIES_KEY] = declared;
    out = { ...out, params: { ...params, _meta: next } };
  }
  return out;
}

/**
 * The `_meta` key under which the bridge keeps a 2026-07-28 request's declared client capabilities for itself
 * (stripClientCapabilities); the bridge's own servers read it, nothing behind the bridge sees it.
 */
export const DECLARED_CAPABILITIES_KEY = 'tysandbox/declaredCapabilities';

/** The client capabilities a 2026-07-28 request declared (see DECLARED_CAPABILITIES_KEY), or undefined. */
export function declaredCapabilities(meta: unknown): Record<string, unknown> | undefined {
  const v = isPlainObject(meta) ? meta[DECLARED_CAPABILITIES_KEY] : undefined;
  return isPlainObject(v) ? v : undefined;
}

/** What the bridge does with one message from a server. */
export type ServerMessageRule =
  | { action: 'pass' }
  | { action: 'drop'; reason: string }
  /** Answer the server directly; nothing reaches the client, a model or a person. */
  | { action: 'answer'; reply: RpcErrorResponse | RpcResultResponse };

/**
 * Rules for server-to-client traffic: `ping` is answered `{}`; a request whose method is in `pass` goes to the
 * bridge's own session (never to the client); every other server request (sampling, elicitation, roots/list,
 * anything) is answered with an error; only MCP's own notifications pass;
 * responses pass (the session matches them to its own pending ids).
 */
export function serverMessageRule(m: Classified, pass?: ReadonlySet<string>): ServerMessageRule {
  switch (m.kind) {
    case 'request':
      if (m.method === 'ping') return { action: 'answer', reply: { jsonrpc: '2.0', id: m.id, result: {} } };
      // `pass`: requests the session itself answers (elicitation/create for a person, when a rule allows it)
      if (pass?.has(m.method) === true) return { action: 'pass' };
      return {
        action: 'answer',
        reply: rpcError(
          m.id,
          RPC.METHOD_NOT_FOUND,
          `the bridge refuses server-to-client requests (${m.method.slice(0, 80)})`,
          'E_MCP',
        ),
      };
    case 'notification':
      return SERVER_NOTIFICATIONS.has(m.method)
        ? { action: 'pass' }
        : { action: 'drop', reason: `notification "${m.method.slice(0, 80)}" is not one of MCP's own` };
    case 'response':
      return { action: 'pass' };
    case 'invalid':
      return { action: 'drop', reason: m.reply.error.message };
  }
}

/** One audit/log line for one request: server, method and tool name only, never arguments or answers. */
export function requestLogLine(entry: {
  server: string;
  method: string;
  name?: string | undefined;
  outcome: string;
}): string {
  const o: Record<string, string> = { server: entry.server.slice(0, 64), method: entry.method.slice(0, 64) };
  if (entry.name !== undefined) o.name = entry.name.slice(0, 256);
  o.outcome = entry.outcome.slice(0, 64);
  return JSON.stringify(o);
}

/** Events from the line framer. */
export type FrameEvent = { type: 'line'; text: string } | { type: 'oversize'; bytes: number };

/**
 * Splits a byte stream into newline-terminated messages (MCP stdio framing) with a per-message cap.
 * Memory stays bounded by `maxBytes` even for a line that never ends: past the cap the rest of the line
 * is discarded as it arrives and one `oversize` event is reported when its newline comes (or at once,
 * once, when the cap is crossed).
 */
export class LineFramer {
  private chunks: Uint8Array[] = [];
  private size = 0;
  private skipping = false;
  private readonly decoder = new TextDecoder('utf-8', { fatal: false });
  constructor(private readonly maxBytes: number = MAX_MESSAGE_BYTES) {}

  /** Feed one chunk; returns the complete messages and oversize events it finished. */
  push(chunk: Uint8Array): FrameEvent[] {
    const out: FrameEvent[] = [];
    let start = 0;
    while (start <= chunk.length) {
      const nl = chunk.indexOf(10, start);
      const end = nl === -1 ? chunk.length : nl;
      const piece = chunk.subarray(start, end);
      if (!this.skipping && nl !== -1 && this.size === 0 && piece.length <= this.maxBytes) {
        // the common case: a whole line inside one chunk, decoded in place without a copy
        let text = this.decoder.decode(piece);
        if (text.endsWith('\r')) text = text.slice(0, -1);
        if (text.trim().length > 0) out.push({ type: 'line', text });
        start = nl + 1;
        continue;
      }
      if (!this.skipping) {
        if (this.size + piece.length > this.maxBytes) {
          out.push({ type: 'oversize', bytes: this.size + piece.length });
          this.chunks = [];
          this.size = 0;
          this.skipping = true;
        } else if (piece.length > 0) {
          // copy: the caller may reuse its buffer
          this.chunks.push(piece.slice());
          this.size += piece.length;
        }
      }
      if (nl === -1) break;
      if (!this.skipping) {
        const text = this.takeText();
        if (text.trim().length > 0) out.push({ type: 'line', text });
      }
      this.chunks = [];
      this.size = 0;
      this.skipping = false;
      start = nl + 1;
    }
    return out;
  }

  /** Bytes currently held for an unfinished line (for tests and diagnostics). */
  get buffered(): number {
    return this.size;
  }

  private takeText(): string {
    const all = new Uint8Array(this.size);
    let off = 0;
    for (const c of this.chunks) {
      all.set(c, off);
      off += c.length;
    }
    let text = this.decoder.decode(all);
    if (text.endsWith('\r')) text = text.slice(0, -1);
    return text;
  }
}

/** Serialize one message for stdio framing: JSON plus a newline. */
export function frame(message: unknown): string {
  return JSON.stringify(message) + '\n';
}

/**
 * The path of the first `__proto__` key at any depth (JSON.parse makes it an own property, but schema
 * libraries that copy objects turn it into a prototype change, hiding the field from later checks).
 */
export function findProtoKey(value: unknown, path = '', depth = 0): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  // fail closed on nesting too deep to inspect
  if (depth > 64) return `${path} (nested too deep)`;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const f = findProtoKey(value[i], `${path}[${i}]`, depth + 1);
      if (f !== undefined) return f;
    }
    return undefined;
  }
  for (const k of Object.keys(value)) {
    const p = path === '' ? k : `${path}.${k}`;
    if (k === '__proto__') return p;
    const f = findProtoKey((value as Record<string, unknown>)[k], p, depth + 1);
    if (f !== undefined) return f;
  }
  return undefined;
}

/** What the bridge does with one message from a client. */
export type ClientMessageRule =
  | { action: 'pass'; message: Record<string, unknown> }
  | { action: 'reply'; reply: RpcErrorResponse }
  | { action: 'drop'; reason: string };

/**
 * Rules for client-to-bridge traffic: invalid messages and batches answered with an error; unknown request
 * methods refused (-32601); `initialize` passes with the client's capabilities removed; only MCP's own
 * client notifications pass (a `tools/call` without an id is dropped, never run); responses pass.
 */
export function clientMessageRule(m: Classified): ClientMessageRule {
  switch (m.kind) {
    case 'invalid':
      return { action: 'reply', reply: m.reply };
    case 'request': {
      const rule = clientRequestRule(m.id, m.method);
      if (rule.action === 'refuse') return { action: 'reply', reply: rule.reply };
      const proto = findProtoKey(m.params);
      if (proto !== undefined)
        return {
          action: 'reply',
          reply: rpcError(m.id, RPC.INVALID_PARAMS, `unlisted field "${proto}" refused`, 'E_INVALID_ARGS'),
        };
      return { action: 'pass', message: stripClientCapabilities(m.message) };
    }
    case 'notification':
      return CLIENT_NOTIFICATIONS.has(m.method)
        ? { action: 'pass', message: m.message }
        : {
            action: 'drop',
            reason: `notification "${m.method.slice(0, 80)}" is not one of MCP's own; a request needs an id`,
          };
    case 'response':
      return { action: 'pass', message: m.message };
  }
}
