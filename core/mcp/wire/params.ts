// Client request params checked against MCP's own request schemas, and the session lifecycle (initialize once), before
// the bridge's SDK Server sees a request; core, trusted side.
//
// Schemas: the MCP SDK's (its specTypeSchemas, from the MCP specification's `schema.ts`), so a malformed request gets
// JSON-RPC -32602 with a short message here instead of the SDK Server's -32603 with a raw zod issue dump.
// Lifecycle: MCP specification, "Lifecycle": `initialize` is the first request of a session and is sent once.
import { specTypeSchemas, type SpecTypeName } from '@modelcontextprotocol/server';
import { RPC, rpcError, type RpcErrorResponse, type RpcId } from './messages.js';
import { toolCallParams } from './tool-call.js';

const RELATED_TASK_KEY = 'io.modelcontextprotocol/related-task';
function hasRelatedTask(params: unknown): boolean {
  const meta = (params as { _meta?: unknown })._meta;
  return typeof meta === 'object' && meta !== null && Object.prototype.hasOwnProperty.call(meta, RELATED_TASK_KEY);
}

/** The MCP request type checked for each method (the SDK's specTypeSchemas, Standard Schema validators). */
const SCHEMAS: Readonly<Record<string, SpecTypeName>> = Object.assign(
  Object.create(null) as Record<string, SpecTypeName>,
  {
    initialize: 'InitializeRequest',
    ping: 'PingRequest',
    'logging/setLevel': 'SetLevelRequest',
    'tools/list': 'ListToolsRequest',
    'tools/call': 'CallToolRequest',
    'prompts/list': 'ListPromptsRequest',
    'prompts/get': 'GetPromptRequest',
    'resources/list': 'ListResourcesRequest',
    'resources/templates/list': 'ListResourceTemplatesRequest',
    'resources/read': 'ReadResourceRequest',
    'tasks/result': 'GetTaskPayloadRequest',
    'completion/complete': 'CompleteRequest',
    'resources/subscribe': 'SubscribeRequest',
    'resources/unsubscribe': 'UnsubscribeRequest',
  } satisfies Record<string, SpecTypeName>,
);

/**
 * Check a client request's params against MCP's schema for its method (methods without one pass: the
 * method rules refuse unknown methods first).
 * @returns undefined when they fit, else a JSON-RPC -32602 error (`data.code` E_INVALID_ARGS) naming the
 *   first offending field and what was expected, at most ~200 characters, never echoing values.
 */
export function checkRequestParams(id: RpcId, method: string, params: unknown): RpcErrorResponse | undefined {
  // the common tools/call: what toolCallParams takes fits the CallToolRequest schema (name a string, arguments an
  // object, a string or integer progress token), unless its _meta names a related task the schema checks
  if (method === 'tools/call' && toolCallParams(params) !== undefined && !hasRelatedTask(params)) return undefined;
  const type = Object.prototype.hasOwnProperty.call(SCHEMAS, method) ? SCHEMAS[method] : undefined;
  if (type === undefined) return undefined;
  const r = specTypeSchemas[type]['~standard'].validate(params === undefined ? { method } : { method, params });
  if (r.issues === undefined) return undefined;
  const issue = r.issues[0];
  // paths are in the request (`params.arguments`); an empty one is the request itself: `params` is what is wrong
  const path = issue?.path ?? [];
  const where =
    path.length === 0
      ? 'params'
      : path.map((p) => String(typeof p === 'object' && p !== null ? p.key : p).slice(0, 40)).join('.');
  const what = (issue?.message ?? 'invalid').replace(/\s+/g, ' ').slice(0, 120);
  return rpcError(
    id,
    RPC.INVALID_PARAMS,
    `invalid params for ${method}: ${where.slice(0, 80)}: ${what}`,
    'E_INVALID_ARGS',
  );
}

/**
 * One client session's lifecycle as the bridge enforces it: the first `initialize` passes; any later one
 * is refused with -32600 (MCP: initialization happens once per session; start a new session instead).
 */
export class ClientLifecycle {
  private initialized = false;
  /**
   * Call for every client request that passed the message rules; a reply means: answer it with this, do not pass it on.
   */
  check(id: RpcId, method: string): RpcErrorResponse | undefined {
    if (method !== 'initialize') return undefined;
    if (this.initialized)
      return rpcError(
        id,
        RPC.INVALID_REQUEST,
        'the session is already initialized; initialize is sent once per session (start a new session to initialize again)',
        'E_MCP',
      );
    this.initialized = true;
    return undefined;
  }
}
