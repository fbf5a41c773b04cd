// The MCP bridge's small rules shared by its parts: argument previews, a definition's own rule, hints, the revision
// identity, JSON-RPC error mapping, a cheap abort switch; core, trusted side.
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { ProtocolError, type CallToolResult, type Tool } from '@modelcontextprotocol/server';
import type { GateRequest, Question } from '../../exec/runtime.js';
import { toTyError } from '../../errors.js';
import { clientMessage, type ClientHint } from './results.js';
import { NAME_SEP, prefixedNaming } from './naming.js';
import { RPC } from '../wire/messages.js';
import type { McpDefinition } from '../server-definition.js';

export { BRIDGE_PROTOCOL_VERSIONS } from '../server-definition.js';
import type { CancelSignal } from '../upstream/session.js';

/**
 * Registered tool revisions offered next to bridged tools (wired by the CLI from the registry and core/exec/invoke.ts).
 */
export interface LocalTools {
  list(): Promise<Tool[]>;
  /** Run one call through the registry's gate, argument checks and audit; returns MCP content. */
  call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult>;
}

/** What a guarded transport hands the bridge directly instead of to the session's SDK Server. */
export interface DirectPath {
  /**
   * A client `tools/call` request that passed the message rules; false: give it to the SDK Server.
   * `pinnedModern`: the connection already sent the SDK Server a 2026-07-28 request other than
   * `server/discover`, so its era is fixed (the SDK's serveStdio pins it on that request); until then an
   * enveloped request goes to the SDK Server, which pins the era.
   */
  request(message: Record<string, unknown>, pinnedModern?: boolean): boolean;
  /** A client `notifications/cancelled`; false when it names no call on the direct path. */
  cancelled(params: unknown): boolean;
}

/**
 * The abort switch of one direct-path call: it makes a real AbortSignal only when one is asked for (making
 * one costs microseconds on every call, and the common call never needs it).
 */
export class CallAbort implements CancelSignal {
  aborted = false;
  private ac: AbortController | undefined;
  private listeners: (() => void)[] = [];
  get signal(): AbortSignal {
    if (this.ac === undefined) {
      this.ac = new AbortController();
      if (this.aborted) this.ac.abort();
    }
    return this.ac.signal;
  }
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.ac?.abort();
    for (const f of this.listeners.splice(0)) f();
  }
  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.aborted) this.listeners.push(listener);
  }
  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners.indexOf(listener);
    if (i >= 0) this.listeners.splice(i, 1);
  }
}

/** Characters of a call's arguments (as one JSON line) handed to the gate as the question's preview. */
export const PREVIEW_CHARS = 2000;

/** A call's arguments as one JSON line for the approval question (undefined when there are none). */
export function previewOf(args: unknown): string | undefined {
  if (args === undefined) return undefined;
  try {
    const s = JSON.stringify(args);
    return s === undefined || s === '{}' ? undefined : `arguments: ${s.slice(0, PREVIEW_CHARS)}`;
  } catch {
    return undefined;
  }
}

/** The trace scope of a server definition's own rule (audit `scope`, question "asked because"). */
export const SERVER_RULE_SCOPE = 'server definition';

/**
 * The definition's own rule that allows this request, as its trace text (`SERVER: --ask none`, `SERVER:
 * --allow TOOL`, `SERVER: --allow resources/read`), or undefined when none does.
 */
export function serverRule(def: McpDefinition, kind: GateRequest['kind'], name: string): string | undefined {
  if (def.ask === 'none') return `${def.name}: --ask none`;
  const allow =
    kind === 'mcp'
      ? name
      : kind === 'mcp-resource'
        ? 'resources/read'
        : kind === 'mcp-prompt'
          ? 'prompts/get'
          : undefined;
  return allow !== undefined && def.allow.includes(allow) ? `${def.name}: --allow ${allow}` : undefined;
}

/** A tools/call result with postToolUse feedback appended as text content (`[hook] ...`); as is without any. */
export function withFeedback(r: CallToolResult, feedback: readonly string[] | undefined): CallToolResult {
  if (!feedback?.length) return r;
  return {
    ...r,
    content: [...(r.content ?? []), ...feedback.map((f) => ({ type: 'text' as const, text: `[hook] ${f}` }))],
  };
}

/**
 * The revision identity of a bridged tool, prompt or resource for the gate (decisions, audit):
 * `mcp:SERVER:SERVER-FINGERPRINT16:sha256-DEFINITION-HASH` (core/mcp/bridge/definitions.ts definitionHash;
 * `fingerprint` from the host's McpDefinitionSource).
 */
export function definitionRevision(def: McpDefinition, fingerprint: string, hash: string): string {
  return `mcp:${def.name}:${fingerprint.slice(0, 16)}:sha256-${hash}`;
}

export { NAME_SEP };

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
 * Errors from a server pass as they are.
 */
export function toMcpError(e: unknown, hint?: ClientHint): Error {
  if (e instanceof McpError || e instanceof ProtocolError || e instanceof RpcFailure) return e;
  const t = toTyError(e, 'E_MCP');
  const num =
    t.code === 'E_INVALID_ARGS' || t.code === 'E_UNKNOWN_TOOL'
      ? RPC.INVALID_PARAMS
      : (SERVER_FAULT_CODES[t.code] ?? (t.code === 'E_BUSY' ? -32003 : -32001));
  // core's messages are host-neutral; an MCP client's hint names the rule or setting, never a command line
  return new RpcFailure(num, clientMessage(t, hint), { code: t.code });
}

/** The server's hints for a tool, as shown in questions (they never skip asking). */
export function hintsOf(t: Tool): NonNullable<Question['hints']> {
  const a = t.annotations;
  const hints: NonNullable<Question['hints']> = {};
  if (typeof a?.readOnlyHint === 'boolean') hints.readOnlyHint = a.readOnlyHint;
  if (typeof a?.destructiveHint === 'boolean') hints.destructiveHint = a.destructiveHint;
  if (typeof a?.idempotentHint === 'boolean') hints.idempotentHint = a.idempotentHint;
  if (typeof a?.openWorldHint === 'boolean') hints.openWorldHint = a.openWorldHint;
  return hints;
}

/** `tymcp://SERVER/URI` <-> (server, uri) (core/mcp/bridge/naming.ts). */
export const wrapUri = (server: string, uri: string): string => prefixedNaming.uri(server, uri);
export const unwrapUri = (uri: string): { server: string; uri: string } | undefined => prefixedNaming.parseUri(uri);
