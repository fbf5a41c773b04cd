// Binds `external-service` revisions to a bridged MCP server's tool (the Invoker's `external` hook); Node host, trusted
// side.
import type { ToolIdentity } from '../../core/exec/invoke.js';
import { TyError } from '../../core/errors.js';
import { checkToolArguments } from '../../core/mcp/bridge/args.js';
import { definitionHash } from '../../core/mcp/bridge/definitions.js';
import { SessionPool, type PoolLimits } from '../../core/mcp/upstream/pool.js';
import { fingerprint, loadDefinition } from './definitions.js';
import { UpstreamSession, nodeConnector } from './upstream.js';
import { SERVER_RULE_SCOPE, hintsOf, previewOf, serverRule } from './bridge.js';
import type { Gate, GateRequest } from '../../core/exec/runtime.js';

export type ExternalCaller = ((identity: ToolIdentity, args: unknown, signal: AbortSignal) => Promise<unknown>) & {
  close(): Promise<void>;
};

/**
 * The Invoker's `external` function for MCP: `execution.serviceId` names a server definition, `execution.tool`
 * (default: the revision's name) its tool. The Invoker has already run the gate (kind `tool`) and checked
 * the arguments against the revision's parameters; here the definition is reloaded (a removed one is
 * refused), the arguments are checked again against the server's own current schema (unlisted fields
 * refused), the call goes through `gate.run` like a bridged one (kind `mcp`, target `SERVER/TOOL`, the
 * server's hints; its `--allow`/`--ask none` as a preapproved allow that never beats a deny rule or the
 * pause; without a gate only that rule lets it through), then forwarded. Server sessions are pooled per server with the
 * bridge's limits; `close()` stops them.
 * @returns the tool's `structuredContent`, else its text joined, else its content array.
 * @throws TyError E_UNKNOWN_TOOL (no such server or tool), E_INVALID_ARGS, E_TOOL_FAILED (the tool said
 *   isError), E_MCP, E_BUSY.
 */
export function createMcpExternal(
  home: string,
  opts: { gate?: Gate | (() => Gate | undefined); limits?: Partial<PoolLimits> } = {},
): ExternalCaller {
  const gateNow = (): Gate | undefined => (typeof opts.gate === 'function' ? opts.gate() : opts.gate);
  const pool = new SessionPool<UpstreamSession>(opts.limits);
  const fn = async (identity: ToolIdentity, args: unknown, signal: AbortSignal): Promise<unknown> => {
    const exec = identity.manifest.execution;
    if (exec.kind !== 'external-service')
      throw new TyError('E_TOOL_FAILED', `${identity.name} is not an external-service revision`);
    const def = await loadDefinition(home, exec.serviceId);
    if (def === undefined) {
      await pool.end(exec.serviceId);
      throw new TyError('E_UNKNOWN_TOOL', `no MCP server "${exec.serviceId.slice(0, 40)}" is defined`);
    }
    const toolName = exec.tool ?? identity.name;
    const result = await pool.use(
      def.name,
      fingerprint(def),
      (sig) => UpstreamSession.start(def, { onClose: () => void pool.end(def.name), connect: nodeConnector() }, sig),
      async (u) => {
        const tool = (await u.tools(signal)).get(toolName);
        if (tool === undefined) {
          const why = u.refusedTool(toolName);
          if (why !== undefined)
            throw new TyError(
              'E_INVALID_ARGS',
              `${def.name}/${toolName.slice(0, 80)} is not offered: its schema ${why.slice(0, 300)}`,
            );
          throw new TyError('E_UNKNOWN_TOOL', `server "${def.name}" has no tool "${toolName.slice(0, 80)}"`);
        }
        const checked = checkToolArguments(tool.inputSchema, args);
        if (!checked.ok) throw new TyError('E_INVALID_ARGS', checked.message);
        // the same path as a bridged call: gate.run (kind mcp, SERVER/TOOL) with the server's rule as a
        // preapproved allow (deny rules, alwaysAsk, the pause and pre-hooks still apply; audited)
        const rule = serverRule(def, 'mcp', toolName);
        const gate = gateNow();
        if (!gate) {
          if (rule === undefined)
            throw new TyError(
              'E_APPROVAL_REQUIRED',
              `no rule lets ${def.name}/${toolName} through and no one can be asked; the server definition's allow list ("${toolName}") or a permission rule would`,
            );
          return u.callTool(toolName, checked.args, { signal });
        }
        // the decision covers the server's current tool definition too (a changed tool is asked about again)
        const defHash = await definitionHash('tool', tool as Record<string, unknown>);
        const req: GateRequest = {
          principal: identity.principal,
          kind: 'mcp',
          toolName: identity.name,
          revision: `${identity.revision}:mcp-sha256-${defHash}`,
          target: `${def.name}/${toolName}`,
          hints: hintsOf(tool),
          requested: true,
          hookPayload: { arguments: checked.args },
        };
        if (rule !== undefined) req.preapproved = { rule, scope: SERVER_RULE_SCOPE };
        const preview = previewOf(checked.args);
        if (preview !== undefined) req.preview = preview;
        // postToolUse feedback of this inner call is not carried out (the invocation's own hooks report)
        return (await gate.run(req, () => u.callTool(toolName, checked.args, { signal }), signal)).value;
      },
      signal,
    );
    const texts = (result.content ?? [])
      .filter((c): c is { type: 'text'; text: string } => c.type === 'text')
      .map((c) => c.text);
    if (result.isError)
      throw new TyError('E_TOOL_FAILED', (texts.join('\n') || 'the MCP tool reported an error').slice(0, 4096), {
        origin: 'server',
      });
    if (result.structuredContent !== undefined) return result.structuredContent;
    if (texts.length === (result.content ?? []).length) return texts.join('\n');
    return result.content;
  };
  return Object.assign(fn, { close: () => pool.closeAll() });
}
