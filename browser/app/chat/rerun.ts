// "Run again" for an interrupted call: the calls of its reply get new results on a sibling branch, the interrupted
// ones run again and the others keep theirs; browser app, trusted side.
import type { Task } from '../../../protocol/task.js';
import type { CallOutcome } from './convert.js';
import type { ConversationTree } from './tree.js';

export interface RerunPlan {
  /** The reply's last call (or failed call): the new results go under it, beside the old ones. */
  parent: string;
  /** The reply's function calls, in order. */
  calls: Task[];
  /** Outcomes kept: every call's old result except the interrupted ones and `call` itself. */
  keep: Map<string, CallOutcome>;
}

const rerunCodes = new Set(['E_INTERRUPTED', 'E_ABORTED']);

/**
 * Plan "Run again" for `call` on the selected branch: find the run of function-call (and failed-call) tasks it belongs
 * to and their results. Undefined when `call` is not on the selected branch.
 */
export async function planRerun(tree: ConversationTree, call: Task): Promise<RerunPlan | undefined> {
  const path = await tree.path();
  const i = path.findIndex((t) => t.id === call.id);
  if (i < 0) return undefined;
  const isCall = (t: Task | undefined) =>
    !!t && (t.content.type === 'functioncall' || (t.content.type === 'error' && t.role === 'assistant'));
  let a = i;
  while (isCall(path[a - 1])) a--;
  let b = i;
  while (isCall(path[b + 1])) b++;
  const group = path.slice(a, b + 1);
  const calls = group.filter((t) => t.content.type === 'functioncall');
  const keep = new Map<string, CallOutcome>();
  for (const t of path.slice(b + 1)) {
    if (t.content.type !== 'toolresult') break;
    const o = t.content.result as CallOutcome;
    const id = t.content.callTask;
    if (id && id !== call.id && !(o && !o.ok && rerunCodes.has(o.error.code))) keep.set(id, o);
  }
  return { parent: path[b]!.id, calls, keep };
}
