// Deleting a conversation for good once its "Undo" ran out: its record, search text, journal, the tasks no other
// conversation reaches and the files no other conversation uses; browser app, trusted side.
import type { Store } from '../../../core/store/contract.js';
import type { AppDb, ConversationRecord } from '../app-db.js';

/** How long "Undo" is offered after a delete (ms). */
export const UNDO_MS = 8000;

/** Every task id a conversation's branch index reaches (its root, every parent and child). */
export function taskIds(r: Pick<ConversationRecord, 'root' | 'children'>): Set<string> {
  const out = new Set([r.root]);
  for (const [parent, kids] of Object.entries(r.children)) {
    out.add(parent);
    for (const k of kids) out.add(k);
  }
  return out;
}

/**
 * Delete conversation `id` for good. Tasks are content-addressed and shared (every conversation's root, the same
 * first message in two conversations, an imported copy), so only the tasks no other conversation reaches are deleted
 * from the host store; files likewise (AppDb.releaseFiles).
 */
export async function purgeConversation(db: AppDb, store: Store, id: string): Promise<void> {
  const rec = await db.getConversation(id);
  if (!rec) return;
  const others = (await db.listConversations()).filter((c) => c.id !== id);
  const kept = new Set<string>();
  for (const o of others) for (const t of taskIds(o)) kept.add(t);
  await db.deleteConversation(id);
  await db.deleteSearchText(id);
  await db.deleteTurn(id);
  await db.releaseFiles(id);
  for (const t of taskIds(rec)) if (!kept.has(t)) await store.backend.delete('tasks', t);
}

/** Purge every conversation deleted before now (at start: their Undo ended with the page that offered it). */
export async function purgeDeleted(db: AppDb, store: Store): Promise<void> {
  for (const c of await db.listConversations()) if (c.deleted !== undefined) await purgeConversation(db, store, c.id);
}
