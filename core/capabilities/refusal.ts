// Audited refusals of capability uses outside the manifest or not offered by the host; core, trusted side.
import type { Gate, GateRequest } from '../exec/runtime.js';
import { TyError } from '../errors.js';

type RefusalRequest = Omit<GateRequest, 'requested' | 'unavailable' | 'preview' | 'hookPayload' | 'preapproved'>;
type RefusalCode = 'E_CAPABILITY_DENIED' | 'E_SECRET_DENIED';

/**
 * Refuse a capability use outside the manifest's upper bound, through the gate so it leaves its own audit
 * record (decision deny, list `manifest`, the request's kind, target and access; never argument values or
 * secrets) and counts toward the tool's pause. Always throws `code` (default E_CAPABILITY_DENIED) with `message` (plus
 * the
 * gate's pause notice when this refusal paused the tool); a gate failure (E_STORE: the record could not be
 * written, E_PAUSED) is rethrown as is.
 */
export function refuseUndeclared(
  gate: Gate,
  req: RefusalRequest,
  message: string,
  signal?: AbortSignal,
  code: RefusalCode = 'E_CAPABILITY_DENIED',
): Promise<never> {
  return refuse(gate, { ...req, requested: false }, message, signal, code);
}

/**
 * Refuse a capability use this host does not offer at all (no storage, registry, subtask compiler or secret
 * broker), through the gate like `refuseUndeclared`: its audit record has decision deny, list `host`.
 */
export function refuseUnavailable(
  gate: Gate,
  req: RefusalRequest,
  message: string,
  signal?: AbortSignal,
  code: RefusalCode = 'E_CAPABILITY_DENIED',
): Promise<never> {
  return refuse(gate, { ...req, unavailable: true }, message, signal, code);
}

async function refuse(
  gate: Gate,
  req: GateRequest,
  message: string,
  signal: AbortSignal | undefined,
  code: RefusalCode,
): Promise<never> {
  try {
    await gate.authorize(req, signal);
  } catch (e) {
    if (!(e instanceof TyError) || e.code !== 'E_CAPABILITY_DENIED') throw e;
    // no suggestedRule: no settings rule can widen the manifest or add what the host lacks
    const { suggestedRule: _s, ...data } = (e.data ?? {}) as Record<string, unknown>;
    const paused =
      typeof data.paused === 'string'
        ? ` Too many refusals: "${data.paused}" is now paused until a person resumes it.`
        : '';
    throw new TyError(code, `${message}${paused}`, data);
  }
  // A gate that let it through still cannot widen the manifest or add a capability.
  throw new TyError(code, message);
}
