// How a refusal or a failure reads for the MCP client: tool execution errors as CallToolResults (isError), a refusal's
// message with the client's hint, hook feedback appended to a result (the JSON-RPC errors: core/mcp/wire/errors.ts);
// core, trusted side. Loaded by the command line's hints too: it imports no MCP SDK code.
import type { CallToolResult } from '@modelcontextprotocol/server';

/**
 * Stable codes that are failures of the tool's execution, not of the protocol: the tool threw, ran past its
 * time, memory or output limit, or got arguments its schema refuses. MCP 2025-11-25 (server/tools, "Error
 * Handling") says these are reported in the result with `isError: true` so a model can see them and correct
 * itself; JSON-RPC errors are kept for protocol faults (unknown method or tool, malformed request).
 */
export const TOOL_EXECUTION_CODES: ReadonlySet<string> = new Set([
  'E_TOOL_FAILED',
  'E_OUTPUT_LIMIT',
  'E_INVALID_ARGS',
  'E_TIMEOUT',
  'E_MEMORY_LIMIT',
]);

/** Longest error text put into a result, characters. */
const MAX_TEXT = 4096;

/**
 * A CallToolResult saying the tool failed: one text block `message` (cut at 4096 characters with a
 * marker) and the stable code in `_meta["tysandbox/code"]`, for clients that tell failures apart.
 */
export function toolErrorResult(code: string, message: string): CallToolResult {
  const text = message.length > MAX_TEXT ? `${message.slice(0, MAX_TEXT)} [cut]` : message;
  return { content: [{ type: 'text', text }], isError: true, _meta: { 'tysandbox/code': code } };
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v.slice(0, 300) : undefined);

/**
 * The MCP client's rendering of a refusal's facts (TyError `data`, core's messages being host-neutral): it
 * names the rule or setting a person would change, never a command line, since the client's user is not
 * at the command line. Undefined when the facts call for no hint.
 */
export function mcpHint(code: string, data: Record<string, unknown> | undefined): string | undefined {
  const d = data ?? {};
  const parts: string[] = [];
  // A no-channel refusal's message already says nobody could be asked and why (each channel once): no hint repeats it.
  // The message already names the rule; the hint says where it goes.
  if (str(d.allowRule)) parts.push('a person can add that rule under permissions.allow in settings');
  if (str(d.revoke)) parts.push(`a person can revoke that remembered answer for ${str(d.revoke)}`);
  if (str(d.paused)) parts.push(`a person can resume ${str(d.paused)}`);
  if (code === 'E_SECRET_DENIED' && str(d.secret))
    parts.push(
      str(d.grantTo)
        ? `a person can grant the secret ${str(d.secret)} to ${str(d.grantTo)}`
        : `a person can set the secret ${str(d.secret)}`,
    );
  return parts.length > 0 ? parts.join('; ') : undefined;
}

/** A host's rendering of a refusal's facts as a hint (mcpHint unless the host gives its own). */
export type ClientHint = (code: string, data: Record<string, unknown> | undefined) => string | undefined;

/** `message` with the MCP client's hint for the error's facts appended (`hint`: the host's, default mcpHint). */
export function clientMessage(
  e: { code: string; message: string; data?: Record<string, unknown> | undefined },
  hint: ClientHint = mcpHint,
): string {
  const text = hint(e.code, e.data);
  return text ? `${e.message}; ${text}` : e.message;
}

/** A tools/call result with postToolUse feedback appended as text content (`[hook] ...`); as is without any. */
export function withFeedback(r: CallToolResult, feedback: readonly string[] | undefined): CallToolResult {
  if (!feedback?.length) return r;
  return {
    ...r,
    content: [...(r.content ?? []), ...feedback.map((f) => ({ type: 'text' as const, text: `[hook] ${f}` }))],
  };
}
