// One `tool/run` of a protocol session, from its reference to its answer, with the `$/progress` stages of its version;
// core, trusted side.
import { PROGRESS_METHOD, type ProgressParams, type RpcId, type ToolRunResult } from '../../protocol/registration.js';
import { TyError } from '../errors.js';
import type { InvokeResult } from '../exec/invoke.js';
import type { RunProgress } from '../exec/progress.js';
import type { ToolRegistry } from '../revisions/registry.js';
import type { RpcMessage } from './rpc.js';

/** Runs one tool call for a session (the host's Invoker, with the session's principal). */
export type ProtocolRunner = (
  ref: string,
  args: unknown,
  opts: {
    principal: string;
    signal: AbortSignal;
    timeoutMs?: number;
    disposable?: boolean;
    /** 1.1 sessions: `started`, then the tool's coalesced ctx.progress reports (InvokeOptions.onProgress). */
    onProgress?: (p: RunProgress) => void;
  },
) => Promise<InvokeResult>;

/** `$/progress` params of a 1.1 run's stage `done`: the outcome, and the code of a failure. */
export function doneParams(
  id: RpcId,
  revision: string,
  error: TyError | undefined,
  cancelled: boolean,
): ProgressParams {
  if (!error) return { id, stage: 'done', revision, outcome: 'ok' };
  return { id, stage: 'done', revision, outcome: cancelled ? 'cancelled' : 'error', code: error.code };
}

/** What one run needs from its session. */
export interface RunContext {
  id: RpcId;
  params: { ref: string; arguments?: unknown; timeoutMs?: number; disposable?: boolean };
  /** Where its notifications and answer go. */
  sink: (m: RpcMessage) => void;
  /** The session's turn is over once the reference resolved (later requests go on meanwhile). */
  started: () => void;
  /** The session speaks 1.0: stages `resolved` and `done` only. */
  v1: boolean;
  principal: string;
  signal: AbortSignal;
  registry: Pick<ToolRegistry, 'resolve'>;
  run: ProtocolRunner;
  maxTimeoutMs: number;
  /** Told the revision as soon as the reference resolved (tool logs are routed by it). */
  onRevision: (revision: string) => void;
}

/**
 * Resolve the reference, pin the call to that revision and run it. `$/progress`: 1.0 `resolved`, `done`; 1.1 `queued`,
 * `started`, `progress` (never after `done`), `done` with the outcome (`cancelled` when the signal was aborted). A
 * reference that does not resolve sends no progress at all.
 * @throws TyError the run's error code (E_UNKNOWN_TOOL, E_APPROVAL_REQUIRED, E_ABORTED, E_TOOL_FAILED, ...)
 */
export async function runCall(c: RunContext): Promise<ToolRunResult> {
  const { id, params: p, v1 } = c;
  const progress = (params: ProgressParams): void => c.sink({ jsonrpc: '2.0', method: PROGRESS_METHOD, params });
  let done = false;
  const tool = await c.registry.resolve(p.ref);
  const revision = tool.revision;
  c.onRevision(revision);
  progress({ id, stage: v1 ? 'resolved' : 'queued', revision });
  c.started();
  const timeoutMs = p.timeoutMs === undefined ? undefined : Math.min(p.timeoutMs, c.maxTimeoutMs);
  const onProgress = (e: RunProgress): void => {
    if (done) return;
    if (e.stage === 'started') progress({ id, stage: 'started', revision });
    else
      progress({
        id,
        stage: 'progress',
        revision,
        fraction: e.fraction,
        ...(e.message !== undefined ? { message: e.message } : {}),
      });
  };
  const r = await c.run(`${tool.name}@${revision}`, p.arguments ?? {}, {
    principal: c.principal,
    signal: c.signal,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(p.disposable !== undefined ? { disposable: p.disposable } : {}),
    ...(v1 ? {} : { onProgress }),
  });
  done = true;
  const error = r.ok ? undefined : new TyError(r.error.code, r.error.message);
  progress(v1 ? { id, stage: 'done', revision } : doneParams(id, revision, error, c.signal.aborted));
  if (!r.ok) throw error!;
  return r.feedback?.length
    ? { revision: r.revision, result: r.result, feedback: r.feedback }
    : { revision: r.revision, result: r.result };
}
