// After a reload or on opening a conversation: the journal's partial answer and every call without a result become
// tasks, so the history stays valid for every provider; browser app, trusted side.
import type { DraftTask, Task } from '../../../protocol/task.js';
import type { ToolRegistry } from '../../../core/revisions/registry.js';
import type { AppDb } from '../app-db.js';
import type { CallOutcome } from './convert.js';
import type { ConversationTree } from './tree.js';

/** The outcome a call gets when the page went away before it ended. */
export function interruptedOutcome(): CallOutcome {
  return {
    ok: false,
    error: {
      code: 'E_INTERRUPTED',
      message:
        'the call was interrupted before it ended (the page was reloaded or closed); it may have run partly; run it again to retry',
    },
  };
}

function isOutcome(v: unknown): v is CallOutcome {
  const o = v as { ok?: unknown; error?: { code?: unknown; message?: unknown } } | null;
  return (
    !!o &&
    typeof o === 'object' &&
    (o.ok === true || (o.ok === false && typeof o.error?.code === 'string' && typeof o.error.message === 'string'))
  );
}

/** The function-call tasks of `path` that no toolresult answers, in path order. */
export function unansweredCalls(path: Task[]): Task[] {
  const answered = new Set<string>();
  for (const t of path) if (t.content.type === 'toolresult' && t.content.callTask) answered.add(t.content.callTask);
  return path.filter((t) => t.content.type === 'functioncall' && !answered.has(t.id));
}

/** Toolresult drafts for `calls` (chained in call order), each with its known outcome or E_INTERRUPTED. */
export function resultDrafts(calls: Task[], known: Record<string, unknown> = {}): Omit<DraftTask, 'parent'>[] {
  return calls.map((c) => {
    const k = known[c.id];
    const o = isOutcome(k) ? k : interruptedOutcome();
    const rev = c.content.type === 'functioncall' ? c.content.toolRevision : undefined;
    return {
      role: 'function',
      state: o.ok ? 'completed' : 'failed',
      content: { type: 'toolresult', callTask: c.id, ...(rev ? { toolRevision: rev } : {}), result: o },
    };
  });
}

/**
 * Give every call of the selected branch that has no result one: the outcome the journal kept, else E_INTERRUPTED.
 * Results go after the branch's last task, in call order (a call without a result is only ever at the end of a branch:
 * nothing is added after a reply's calls until their results are). Returns true when tasks were added.
 */
export async function completeCalls(
  tree: ConversationTree,
  registry: Pick<ToolRegistry, 'resolve'>,
  known: Record<string, unknown> = {},
): Promise<boolean> {
  const missing = unansweredCalls(await tree.path());
  if (missing.length === 0) return false;
  await tree.append(tree.record.leaf, resultDrafts(missing, known), registry);
  return true;
}

/**
 * Put what the journal of the conversation kept into its tree: the text streamed before the page went away becomes
 * an assistant message marked interrupted (when nothing was added after it), and every call without a result gets
 * one (completeCalls). The journal record is then removed. Returns true when the tree changed.
 */
export async function recoverTurn(
  tree: ConversationTree,
  db: AppDb,
  registry: Pick<ToolRegistry, 'resolve'>,
): Promise<boolean> {
  const rec = await db.getTurn(tree.record.id);
  let changed = false;
  if (rec?.text && rec.leaf === tree.record.leaf) {
    const [t] = await tree.append(
      tree.record.leaf,
      [{ role: 'assistant', content: { type: 'message', text: rec.text } }],
      registry,
    );
    if (t) await tree.markInterrupted(t.id);
    changed = true;
  }
  if (await completeCalls(tree, registry, rec?.calls ?? {})) changed = true;
  if (rec) await db.deleteTurn(tree.record.id);
  return changed;
}
