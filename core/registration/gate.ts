// The registration protocol's checks before anything is stored: a client's manifest (no trusted-native code, no
// built-in's name) and registry actions through the host's gate; core, trusted side.
import type { ToolManifest } from '../../protocol/manifest.js';
import { TyError, toTyError } from '../errors.js';
import type { Gate, GateRequest } from '../exec/runtime.js';
import { parseManifest } from '../manifest/parse.js';

/** A registry action as the gate sees it (`GateRequest.target` of kind `registry`). */
export type RegistryAction = 'connect' | 'add' | 'activate' | 'remove' | 'read';

/**
 * A client's manifest, parsed: trusted-native code runs with the host's authority, so only the application registers
 * it, never a client (checked on the raw manifest first, so an incomplete one, say without `entry`, gets this refusal
 * too); a client's revision must not take the name of a host built-in (it would shadow it unasked).
 * @throws TyError E_INVALID_MANIFEST (`data.path`: `execution.kind`, `name`, or the field parseManifest names)
 */
export function clientManifest(raw: unknown, reservedNames: Iterable<string>): ToolManifest {
  const r = raw as { execution?: { kind?: unknown } } | null;
  const native =
    typeof r === 'object' &&
    r !== null &&
    typeof r.execution === 'object' &&
    r.execution !== null &&
    r.execution.kind === 'trusted-native';
  const manifest = native ? undefined : parseManifest(raw);
  if (native || manifest === undefined || manifest.execution.kind === 'trusted-native')
    throw new TyError(
      'E_INVALID_MANIFEST',
      "a protocol client cannot register a trusted-native tool (it would run with the host's authority); use sandboxed-code or external-service",
      { path: 'execution.kind' },
    );
  // a client's revision must not take the name of a host built-in (it would shadow it unasked), nor one that
  // differs from it only in case (`Python` beside `python` reads as the built-in in a list)
  const folded = manifest.name.toLowerCase();
  const builtin = [...reservedNames].find((n) => n.toLowerCase() === folded);
  if (builtin !== undefined)
    throw new TyError(
      'E_INVALID_MANIFEST',
      builtin === manifest.name
        ? `"${manifest.name}" is the name of a tool this host offers itself; choose another name`
        : `"${manifest.name}" differs only in case from "${builtin}", a tool this host offers itself; choose another name`,
      { path: 'name', conflictsWith: builtin },
    );
  return manifest;
}

/**
 * Authorize one registry action of `principal` through the gate (kind `registry`, target = the action; audited there).
 * Refusals count toward a pause of this principal's registrations (`registry:<principal>`), never of the tool's calls.
 * @throws TyError E_APPROVAL_REQUIRED (a person's approval was needed and none came; `data.rule` the rule that would
 *   allow it, `data.reason`), E_CAPABILITY_DENIED (a rule or hook refused), E_PAUSED
 */
export async function authorizeRegistry(
  gate: Gate,
  principal: string,
  action: RegistryAction,
  toolName: string,
  revision: string,
  preview?: string,
): Promise<void> {
  const req: GateRequest = {
    principal,
    kind: 'registry',
    toolName,
    revision,
    target: action,
    pauseKey: `registry:${principal}`,
  };
  if (preview !== undefined) req.preview = preview;
  try {
    await gate.authorize(req);
  } catch (e) {
    const te = toTyError(e, 'E_CAPABILITY_DENIED');
    if (te.code !== 'E_CAPABILITY_DENIED') throw te;
    const rule = `registry(${action}:${principal})`;
    const what = toolName === '*' ? `${action} by ${principal}` : `${action} of "${toolName}" by ${principal}`;
    if (te.data?.list === 'person') {
      const reason = typeof te.data.reason === 'string' ? te.data.reason : undefined;
      const why =
        reason === 'no-channel'
          ? 'nobody could be asked'
          : reason === 'timeout'
            ? 'the question timed out unanswered'
            : te.data.rule === 'answer "no"'
              ? 'a person said no'
              : 'no answer came';
      throw new TyError(
        'E_APPROVAL_REQUIRED',
        `${what} needs a person's approval and none was given: ${why}; a person may allow it with the rule ${rule}`,
        { rule, ...(reason !== undefined ? { reason } : {}) },
      );
    }
    throw new TyError(
      'E_CAPABILITY_DENIED',
      `${what} is refused by ${String(te.data?.list ?? 'a')} ${String(te.data?.rule ?? 'rule')} (${String(te.data?.scope ?? 'settings')})`,
      { rule: String(te.data?.rule ?? '') },
    );
  }
}
