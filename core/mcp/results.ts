// Tool execution errors as MCP CallToolResults (isError) rather than JSON-RPC errors; core, trusted side.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/**
 * Stable codes that are failures of the tool's execution, not of the protocol: the tool threw, ran past its
 * time, memory or output limit, or got arguments its schema refuses. MCP 2025-11-25 (server/tools, "Error
 * Handling") says these are reported in the result with `isError: true` so a model can see them and correct
 * itself; JSON-RPC errors are kept for protocol faults (unknown method or tool, malformed request).
 */
export const TOOL_EXECUTION_CODES: ReadonlySet<string> = new Set(['E_TOOL_FAILED', 'E_OUTPUT_LIMIT', 'E_INVALID_ARGS', 'E_TIMEOUT', 'E_MEMORY_LIMIT']);

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
