// The bridge's hook from a server session's elicitation/create to the person-answered Elicitor
// (core/mcp/input/elicit.ts); core, trusted side.
import { ProtocolError, ProtocolErrorCode, type ElicitResult } from '@modelcontextprotocol/client';
import type { Elicitor } from './elicit.js';
import { toTyError } from '../../errors.js';
import type { McpDefinition } from '../server-definition.js';

/**
 * The elicitation options of one server session (UpstreamOptions `elicit`, `declareElicitation`): none for a
 * `shared` server or without an Elicitor (such requests are then refused by the message rules); else every request
 * goes to the Elicitor (which checks the rule each time and audits it, refused or not), and the handshake declares
 * form elicitation only when a rule lets this server's forms reach a person, or a 2026-07-28 client, now. A refusal
 * goes back to the server
 * as a JSON-RPC error: -32601 when no rule allows it, -32602 for a request that is not a form; each is logged
 * (never its values).
 */
export async function elicitOptions(
  elicitor: (Pick<Elicitor, 'enabledFor' | 'elicit'> & Partial<Pick<Elicitor, 'inputRule'>>) | undefined,
  def: McpDefinition,
  log: (outcome: string) => void,
): Promise<{ elicit?: (params: unknown, signal: AbortSignal) => Promise<ElicitResult>; declareElicitation?: boolean }> {
  if (elicitor === undefined || def.shared) return {};
  // declared when a person may answer (mcp-elicit) or a 2026-07-28 client may be asked (mcp-input, suspensions.ts)
  const declareElicitation =
    (await elicitor.enabledFor(def.name).catch(() => false)) ||
    (await elicitor.inputRule?.(def.name, 'elicitation').catch(() => undefined)) !== undefined;
  const elicit = async (params: unknown, signal: AbortSignal): Promise<ElicitResult> => {
    try {
      const r = await elicitor.elicit(def.name, params, signal);
      log(r.action);
      return r as ElicitResult;
    } catch (e) {
      const t = toTyError(e, 'E_MCP');
      log(`refused:${t.code}`);
      throw new ProtocolError(
        t.code === 'E_INVALID_ARGS'
          ? ProtocolErrorCode.InvalidParams
          : t.code === 'E_CAPABILITY_DENIED'
            ? ProtocolErrorCode.MethodNotFound
            : ProtocolErrorCode.InternalError,
        t.message,
        { code: t.code },
      );
    }
  };
  return { elicit, declareElicitation };
}
