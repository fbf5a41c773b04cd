// The gate step every bridged tools/call, prompts/get and resources/read takes, and what it puts before the gate: the
// server definition's own rule, the revision identity, the arguments' preview, the server's hints; core, trusted side.
import type { Tool } from '@modelcontextprotocol/server';
import type { GateRequest, Question } from '../../exec/runtime.js';
import { TyError } from '../../errors.js';
import { NAME_SEP } from './naming.js';
import { definitionHash, definitionSnapshot, describeChange, type DefinitionKind } from './definitions.js';
import type { McpDefinition } from '../server-definition.js';
import type { BridgeContext } from './context.js';

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

/**
 * The revision identity of a bridged tool, prompt or resource for the gate (decisions, audit):
 * `mcp:SERVER:SERVER-FINGERPRINT16:sha256-DEFINITION-HASH` (core/mcp/bridge/definitions.ts definitionHash;
 * `fingerprint` from the host's McpDefinitionSource).
 */
export function definitionRevision(def: McpDefinition, fingerprint: string, hash: string): string {
  return `mcp:${def.name}:${fingerprint.slice(0, 16)}:sha256-${hash}`;
}

/** What a gated request shows and hands the gate besides its name. */
export interface GatedRequest {
  hints?: Question['hints'];
  preview?: string;
  /** The hooks' payload. */
  input?: unknown;
  /** The tool's (prompt's, resource's) own definition, hashed into the revision identity. */
  definition?: Record<string, unknown>;
  /** Called with 1, 2, ... while the gate decides (waiting progress, BridgeOptions `waitingProgress`). */
  onWaiting?: (n: number) => void;
}

/**
 * Run `execute` (the forwarding of one request) through the gate, `gate.run`: pause, deny rules of every
 * scope, the definition's own rule as a `preapproved` allow (scope `server definition`; it replaces only
 * the asking step), else asking a person, then preToolUse hooks, `execute`, postToolUse hooks, the audit
 * record. Server hints go into the question and never skip asking. Without a gate (a library use; a host's
 * served bridge always has one) only the definition's rule lets a request through, unaudited.
 * @returns the value and the postToolUse hooks' feedback.
 * @throws TyError E_APPROVAL_REQUIRED (no rule and no gate), or the gate's codes (E_CAPABILITY_DENIED,
 *   E_PAUSED, E_HOOK_BLOCKED, E_HOOK_FAILED, E_ABORTED), or what `execute` throws.
 */
export async function gated<T>(
  ctx: BridgeContext,
  def: McpDefinition,
  kind: 'mcp' | 'mcp-resource' | 'mcp-prompt',
  name: string,
  what: GatedRequest,
  signal: AbortSignal,
  execute: () => Promise<T>,
): Promise<{ value: T; feedback?: string[] }> {
  const rule = serverRule(def, kind, name);
  const gate = ctx.opts.gate;
  if (!gate) {
    if (rule === undefined)
      throw new TyError(
        'E_APPROVAL_REQUIRED',
        `no rule lets ${def.name}/${name} through and no one can be asked; the server definition's allow ` +
          `list ("${kind === 'mcp' ? name : kind === 'mcp-resource' ? 'resources/read' : 'prompts/get'}") ` +
          `or a permission rule would`,
      );
    return { value: await execute() };
  }
  // the identity a decision is stored under covers what the person approved: the server definition and
  // the tool's (prompt's, resource's) own definition, hashed; any change makes it a new one (asked again)
  const dkind: DefinitionKind = kind === 'mcp' ? 'tool' : kind === 'mcp-prompt' ? 'prompt' : 'resource';
  const body = what.definition ?? (kind === 'mcp-resource' ? { uri: name } : { name });
  const hash = await definitionHash(dkind, body);
  const target = `${def.name}/${name}`;
  const req: GateRequest = {
    principal: ctx.opts.principal ?? `mcp:${ctx.opts.sandbox}`,
    kind,
    toolName: `${def.name}${NAME_SEP}${name}`,
    revision: definitionRevision(def, ctx.opts.source.fingerprint(def), hash),
    target,
    requested: true,
  };
  const memory = ctx.opts.definitions;
  let changed: string[] = [];
  if (memory !== undefined) {
    const prev = await memory.get(dkind, target).catch(() => undefined);
    if (prev !== undefined && prev.hash !== hash)
      changed = describeChange(dkind, prev.snapshot, definitionSnapshot(dkind, body), {
        before: prev.hash,
        after: hash,
      });
    // remembered once per new hash (the snapshot is built only then, not on every call)
    if (prev?.hash !== hash) {
      const run = execute;
      execute = async () => {
        await memory
          .put({ target, kind: dkind, hash, snapshot: definitionSnapshot(dkind, body), at: Date.now() })
          .catch(() => undefined);
        return run();
      };
    }
  }
  if (rule !== undefined) req.preapproved = { rule, scope: SERVER_RULE_SCOPE };
  if (what.hints !== undefined) req.hints = what.hints;
  if (what.input !== undefined) req.hookPayload = what.input;
  // what the person approves: the gate sanitizes it, withholds known secrets and cuts it for display
  const preview = [
    ...changed,
    ...(what.preview !== undefined && what.preview.length > 0 ? [what.preview.slice(0, PREVIEW_CHARS)] : []),
  ].join('\n');
  if (preview.length > 0) req.preview = preview;
  // progress while the gate decides (a question may wait minutes); it stops once the call is forwarded
  let timer: ReturnType<typeof setTimeout> | undefined;
  const onWaiting = what.onWaiting;
  if (onWaiting !== undefined) {
    const { firstMs, everyMs } = ctx.opts.waitingProgress ?? { firstMs: 1000, everyMs: 15_000 };
    let n = 0;
    const tick = (): void => {
      onWaiting(++n);
      timer = setTimeout(tick, everyMs);
    };
    timer = setTimeout(tick, firstMs);
    const inner = execute;
    execute = () => {
      clearTimeout(timer);
      timer = undefined;
      return inner();
    };
  }
  try {
    return await gate.run(req, execute, signal);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}
