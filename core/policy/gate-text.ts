// How the gate names a request, a rule's place and a tool's text in its messages and questions; core, trusted side.
import type { GateRequest } from '../exec/runtime.js';
import type { Trace } from './permissions.js';
import { shortId } from '../revisions/refs.js';
import { quoteText } from '../ask/text.js';

/** Keep printable text: drop C0/C1 controls (but newline and tab), bidi and zero-width marks; cap length. */
export function cleanText(s: string, max: number): string {
  const t = s
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g, '')
    .trim();
  return t.length > max ? `${t.slice(0, max)}… [cut]` : t;
}

/**
 * A bridged MCP server's tool (prompt, resource) as `"NAME" of MCP server "SERVER"`: its revision
 * `mcp:SERVER:FINGERPRINT:sha256-…` is an identity for decisions and audit, not for people.
 */
function mcpToolName(req: GateRequest): string | undefined {
  const m = /^mcp:([^:]+):/.exec(req.revision);
  if (!m) return undefined;
  const server = m[1]!;
  const tool = req.toolName.startsWith(`${server}__`) ? req.toolName.slice(server.length + 2) : req.toolName;
  return `${quoteText(tool, 120)} of MCP server ${quoteText(server)}`;
}

/** A request as a person reads it in refusals and questions: what is done, by which tool revision (short id). */
export function describe(req: GateRequest): string {
  const rev = shortId(req.revision);
  const mcp = mcpToolName(req);
  switch (req.kind) {
    case 'tool':
      return mcp ? `calling tool ${mcp}` : `calling tool ${req.toolName}@${rev}`;
    case 'mcp':
      if (mcp) return `calling tool ${mcp}`;
      break;
    case 'mcp-resource':
      if (mcp) return `reading resource ${mcp}`;
      break;
    case 'mcp-prompt':
      if (mcp) return `getting prompt ${mcp}`;
      break;
    case 'fetch':
      return `${req.access ?? ''} fetch to ${req.target ?? '(no origin)'} by ${req.toolName}@${rev}`.trim();
    case 'registry':
      return `registry ${req.target ?? ''} of ${req.toolName}${req.revision === '*' ? '' : `@${rev}`} by ${req.principal}`;
  }
  return `${req.kind}${req.target !== undefined ? ` ${req.target}` : ''} by ${mcp ?? `${req.toolName}@${rev}`}`;
}

/** Where a rule of `t`'s scope lives, for messages: `project settings`, `flags`, or the scope as it is. */
export function where(t: Trace): string {
  return ['flags', 'session', 'local', 'project', 'user'].includes(t.scope)
    ? `${t.scope} ${t.scope === 'flags' ? '' : 'settings'}`.trim()
    : t.scope;
}
