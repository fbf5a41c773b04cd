// Export and import of a conversation as JSON (every branch, content-addressed tasks; never the API key); browser app,
// trusted side.
import { persistTask, taskId } from '../../../core/revisions/tasks.js';
import type { Store } from '../../../core/store/contract.js';
import { TaskSchema, type Task } from '../../../protocol/task.js';
import type { AppDb, ConversationRecord } from '../app-db.js';
import type { ConversationTree } from './tree.js';

export const EXPORT_FORMAT = 'tysandbox-conversation';

/** The exported document: the branch index and the tasks. Settings and the key are not part of it. */
export interface ConversationExport {
  format: typeof EXPORT_FORMAT;
  version: 1;
  title: string;
  root: string;
  leaf: string;
  children: Record<string, string[]>;
  tasks: Task[];
}

export async function exportConversation(tree: ConversationTree): Promise<ConversationExport> {
  const r = tree.record;
  return {
    format: EXPORT_FORMAT,
    version: 1,
    title: r.title,
    root: r.root,
    leaf: r.leaf,
    children: structuredClone(r.children),
    tasks: await tree.allTasks(),
  };
}

/**
 * Import an export as a new conversation (fresh id). Every task must parse and hash to its id, every child and
 * the leaf must be among the tasks with the parent the index says, and the root must have none; nothing is
 * stored before all of it checks out.
 * @throws Error naming the first problem.
 */
export async function importConversation(text: string, store: Store, db: AppDb): Promise<ConversationRecord> {
  let doc: Partial<ConversationExport>;
  try {
    doc = JSON.parse(text) as Partial<ConversationExport>;
  } catch (e) {
    throw new Error(`not JSON: ${(e as Error).message}`);
  }
  if (doc.format !== EXPORT_FORMAT || doc.version !== 1) throw new Error(`not a ${EXPORT_FORMAT} version 1 document`);
  if (!Array.isArray(doc.tasks) || doc.tasks.length > 100_000)
    throw new Error('tasks must be an array (at most 100 000)');
  const tasks = new Map<string, Task>();
  for (const [i, raw] of doc.tasks.entries()) {
    const p = TaskSchema.safeParse(raw);
    if (!p.success) throw new Error(`task ${i} is malformed: ${p.error.issues[0]?.message ?? ''}`);
    if ((await taskId(p.data)) !== p.data.id) throw new Error(`task ${i} (${p.data.id}) does not match its content`);
    tasks.set(p.data.id, p.data);
  }
  const root = typeof doc.root === 'string' ? tasks.get(doc.root) : undefined;
  if (!root || root.parent !== undefined) throw new Error('the root task is missing or has a parent');
  const children: Record<string, string[]> = {};
  for (const [parent, kids] of Object.entries(doc.children ?? {})) {
    if (!tasks.has(parent) || !Array.isArray(kids))
      throw new Error(`the branch index names unknown task ${parent.slice(0, 80)}`);
    for (const k of kids)
      if (tasks.get(String(k))?.parent !== parent)
        throw new Error(`task ${String(k).slice(0, 80)} is not a child of ${parent.slice(0, 80)}`);
    children[parent] = kids.map(String);
  }
  if (typeof doc.leaf !== 'string' || !tasks.has(doc.leaf)) throw new Error('the selected leaf is not among the tasks');
  for (const t of tasks.values()) await persistTask(store, t);
  const now = Date.now();
  const rec: ConversationRecord = {
    id: crypto.randomUUID(),
    title: String(doc.title ?? 'Imported').slice(0, 80),
    created: now,
    updated: now,
    root: root.id,
    children,
    leaf: doc.leaf,
  };
  await db.putConversation(rec);
  return rec;
}
