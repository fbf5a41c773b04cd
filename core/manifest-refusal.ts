// Audited refusal of a capability use the revision's manifest does not request; core, trusted side.
import type { Gate, GateRequest } from './runtime.js';
import { TyError } from './errors.js';

/**
 * Refuse a capability use outside the manifest's upper bound, through the gate so it leaves its own audit
 * record (decision deny, list `manifest`, the request's kind, target and access; never argument values or
 * secrets) and counts toward the tool's pause. Always throws `code` (default E_CAPABILITY_DENIED) with `message` (plus the
 * gate's pause notice when this refusal paused the tool); a gate failure (E_STORE: the record could not be
 * written, E_PAUSED) is rethrown as is.
 */
export async function refuseUndeclared(gate: Gate, req: Omit<GateRequest, 'requested' | 'preview' | 'hookPayload' | 'preapproved'>, message: string, signal?: AbortSignal, code: 'E_CAPABILITY_DENIED' | 'E_SECRET_DENIED' = 'E_CAPABILITY_DENIED'): Promise<never> {
  try {
    await gate.authorize({ ...req, requested: false }, signal);
  } catch (e) {
    if (!(e instanceof TyError) || e.code !== 'E_CAPABILITY_DENIED') throw e;
    // no suggestedRule: no settings rule can widen the manifest
    const { suggestedRule: _s, ...data } = (e.data ?? {}) as Record<string, unknown>;
    const paused = typeof data.paused === 'string' ? ` Too many refusals: "${data.paused}" is now paused until a person resumes it.` : '';
    throw new TyError(code, `${message}${paused}`, data);
  }
  // A gate that let it through still cannot widen the manifest.
  throw new TyError(code, message);
}
