// The options, limits and small types of an upstream MCP session (core/mcp/upstream/session.ts); core, trusted side.
import type { ElicitResult, Tool } from '@modelcontextprotocol/client';
import type { UpstreamConnector } from '../server-definition.js';
import type { InputRequired } from '../input/required.js';

/** Tool names the bridge offers (the MCP specification's recommended character set and length). */
export const TOOL_NAME_RE = /^[A-Za-z0-9_./-]{1,128}$/;

/** A tool as the server lists it (name, description, inputSchema, annotations). */
export type UpstreamTool = Tool;

export interface UpstreamOptions {
  /** How long the `server/discover` probe may take, ms (default DEFAULT_PROBE_TIMEOUT_MS). */
  probeTimeoutMs?: number;
  /** MCP notifications that passed the rules (list_changed, message, resources/updated). */
  onNotification?: (method: string, params: unknown) => void;
  /** A message the rules dropped or answered (method only). */
  onFiltered?: (what: { action: 'drop' | 'answer'; method?: string | undefined }) => void;
  /** The session ended on the server's side (exit, oversize message). */
  onClose?: () => void;
  /**
   * A listed tool hidden because its input or output schema cannot be used (e.g. a pattern the linear-time engine
   * refuses).
   */
  onToolRefused?: (tool: string, reason: string) => void;
  /**
   * Per-request timeout, ms (default: the definition's timeoutMs, else 60 000; reset by progress). A request
   * past it fails with E_MCP_TIMEOUT and ends the session (the server process stops; the next call starts anew).
   */
  requestTimeoutMs?: number;
  /**
   * How the server is reached (core/mcp/server-definition.ts UpstreamConnector); default the fetch-based
   * streamableHttpConnector, which reaches `url` definitions only.
   */
  connect?: UpstreamConnector;
  /**
   * Answers the server's `elicitation/create` requests (core/mcp/input/elicit.ts, a person; never the client): the
   * answer is the result, a throw (a ProtocolError) the JSON-RPC error. Not for `shared` servers (one session serves
   * several clients). Call deadlines wait while it runs; the server's notifications/cancelled aborts it.
   */
  elicit?: (params: unknown, signal: AbortSignal) => Promise<ElicitResult>;
  /** With `elicit`: declare form-mode elicitation in the handshake (a rule lets this server's forms reach a person). */
  declareElicitation?: boolean;
  /**
   * A `url` server that cannot be opened with 2026-07-28 negotiation (the probe or its handshake fails) is opened once
   * more with the 2025 handshake at once (the browser host: a CORS policy may refuse the 2026-07-28 headers).
   */
  legacyFallback?: boolean;
  /** The first attempt failed (its stable code) and the 2025 handshake is tried. */
  onLegacyFallback?: (code: string) => void;
}

/** Server requests an `elicit` handler answers. */
export const ELICIT_REQUESTS: ReadonlySet<string> = new Set(['elicitation/create']);

/** A `tools/call` sent by the session itself (not through the SDK Client), waiting for its response. */
export interface PendingCall {
  /** Date.now() ms after which it times out (moved on by progress). */
  deadline: number;
  settle(m: Record<string, unknown> | Error): void;
  /** Tell the server (notifications/cancelled). */
  cancel(reason: string): void;
  /**
   * Where a 2025-era server's `elicitation/create` during this call goes when it is the session's only call in
   * flight (relayed to a 2026-07-28 client, core/mcp/input/suspend.ts) instead of the session's `elicit` handler.
   */
  input?: (method: string, params: Record<string, unknown>, signal: AbortSignal) => Promise<unknown>;
}

/** What callTool needs of an AbortSignal (an AbortSignal is one). */
export interface CancelSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** Most entries of one listing (prompts, resources, templates) taken from a server across its pages. */
export const MAX_LISTED = 10_000;

/** Who the bridge says it is to a server. */
export const CLIENT_INFO = { name: 'tysandbox-bridge', version: '0.1.0' };

/**
 * How long a server may take to answer the `server/discover` probe, ms: on stdio a server silent that long is
 * taken as a 2025-era one (initialize follows); over HTTP it is a failure to connect.
 */
export const DEFAULT_PROBE_TIMEOUT_MS = 10_000;

/** Id prefix of the session's own `tools/call` requests (the SDK Client's ids are numbers, so they never meet). */
export const CALL_ID = 'tyc-';

/**
 * What a call that may take input sends: the capabilities declared for it, and a retry's answers and the server's
 * state.
 */
export interface CallInput {
  capabilities?: Record<string, unknown>;
  responses?: Record<string, unknown>;
  requestState?: string;
}

/** A server's `input_required` answer to a call that may take input (core/mcp/input/required.ts checked it). */
export type InputRequiredAnswer = { resultType: 'input_required' } & InputRequired;
