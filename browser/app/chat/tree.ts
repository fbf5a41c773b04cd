// A conversation as a task tree: content-addressed tasks in the host store, branches indexed in the app database;
// browser app, trusted side.
import { compileDrafts, persistTask, taskId, type CompileOptions } from '../../../core/revisions/tasks.js';
import { TyError } from '../../../core/errors.js';
import { TaskSchema, type DraftTask, type Task } from '../../../protocol/task.js';
import type { Store } from '../../../core/store/contract.js';
import type { ToolRegistry } from '../../../core/revisions/registry.js';
import type { AppDb, ConversationRecord, ReplyMeta } from '../app-db.js';
import { APP_SENTENCE } from './system.js';

/** Longest searchable text kept per conversation (characters; the newest is kept). */
export const MAX_SEARCH_TEXT = 400_000;

/** The searchable text of a message task: its text and its attachments' names. */
export function searchTextOf(t: Task): string {
  if (t.content.type !== 'message' || t.role === 'system') return '';
  const names = (t.content.attachments ?? []).map((a) => a.name).join(' ');
  return [t.content.text, names].filter(Boolean).join('\n');
}

/**
 * One conversation. Tasks are compiled with core/revisions/tasks.ts (every function call pinned to a revision before
 * the task is hashed) and stored under `tasks/<id>` of the host store; on load each task is re-hashed and a
 * mismatch is E_INTEGRITY. The app database keeps only the branch index (children per task) and the
 * selected leaf, so editing a message and sending it again adds a sibling under the same parent, and every
 * branch stays reachable.
 */
export class ConversationTree {
  readonly #cache = new Map<string, Task>();

  private constructor(
    readonly record: ConversationRecord,
    private readonly store: Store,
    private readonly db: AppDb,
  ) {}

  /**
   * Start a conversation: a root system task holding the app's sentence (chat/system.ts; the person's system prompt is
   * kept in the record and put before it in each request), a fresh record (the id is random: two conversations never
   * share an index).
   */
  static async create(
    store: Store,
    db: AppDb,
    init: Partial<Pick<ConversationRecord, 'title' | 'systemPrompt' | 'connection' | 'model'>> = {},
  ): Promise<ConversationTree> {
    const [root] = await compileDrafts([{ role: 'system', content: { type: 'message', text: APP_SENTENCE } }]);
    await persistTask(store, root!);
    const now = Date.now();
    const rec: ConversationRecord = {
      ...init,
      id: crypto.randomUUID(),
      title: init.title ?? 'New conversation',
      created: now,
      updated: now,
      root: root!.id,
      children: {},
      leaf: root!.id,
    };
    await db.putConversation(rec);
    const t = new ConversationTree(rec, store, db);
    t.#cache.set(root!.id, root!);
    return t;
  }

  static async open(store: Store, db: AppDb, id: string): Promise<ConversationTree | undefined> {
    const rec = await db.getConversation(id);
    return rec ? new ConversationTree(rec, store, db) : undefined;
  }

  /** Load and re-hash one task. @throws TyError E_INTEGRITY, E_STORE */
  async task(id: string): Promise<Task> {
    const hit = this.#cache.get(id);
    if (hit) return hit;
    const raw = await this.store.getJson<unknown>('tasks', id);
    const parsed = TaskSchema.safeParse(raw);
    if (!parsed.success) throw new TyError('E_STORE', `task ${id} is missing or malformed in the store`);
    if ((await taskId(parsed.data)) !== id)
      throw new TyError('E_INTEGRITY', `stored task ${id} does not match its content`);
    this.#cache.set(id, parsed.data);
    return parsed.data;
  }

  /** The tasks from the root to `leaf` (default the selected leaf), root first. */
  async path(leaf = this.record.leaf): Promise<Task[]> {
    const out: Task[] = [];
    const seen = new Set<string>();
    for (let id: string | undefined = leaf; id !== undefined; ) {
      if (seen.has(id)) throw new TyError('E_INVALID_TASK', 'the conversation has a cycle');
      seen.add(id);
      const t = await this.task(id);
      out.push(t);
      id = t.parent;
    }
    return out.reverse();
  }

  children(id: string): string[] {
    return this.record.children[id] ?? [];
  }

  /** Siblings of `id` (itself included), in creation order. */
  async siblings(id: string): Promise<string[]> {
    const t = await this.task(id);
    return t.parent === undefined ? [id] : this.children(t.parent);
  }

  /**
   * Compile drafts as a chain under `parent` (each draft's parent is the previous one), store them and move
   * the selected leaf to the last. `lineage` defaults to the path to `parent`: its tooldefinition tasks are in
   * scope for pinning. Returns the compiled tasks.
   * @throws TyError E_UNPINNED_TASK, E_INVALID_TASK, E_UNKNOWN_TOOL, E_INTEGRITY
   */
  async append(
    parent: string,
    drafts: Omit<DraftTask, 'parent'>[],
    registry: Pick<ToolRegistry, 'resolve'>,
    settings?: CompileOptions['settings'],
  ): Promise<Task[]> {
    const lineage = await this.path(parent);
    const chained = drafts.map((d, i) => ({ ...d, parent: i === 0 ? parent : i - 1 }));
    const tasks = await compileDrafts(chained, settings ? { registry, lineage, settings } : { registry, lineage });
    for (const t of tasks) await persistTask(this.store, t);
    for (const t of tasks) {
      this.#cache.set(t.id, t);
      const p = t.parent!;
      const list = this.record.children[p] ?? (this.record.children[p] = []);
      if (!list.includes(t.id)) list.push(t.id);
    }
    if (tasks.length > 0) this.record.leaf = tasks[tasks.length - 1]!.id;
    await this.save();
    const text = tasks.map(searchTextOf).filter(Boolean).join('\n');
    if (text) {
      const old = (await this.db.getSearchText(this.record.id)) ?? '';
      await this.db.putSearchText(this.record.id, `${old}\n${text}`.slice(-MAX_SEARCH_TEXT));
    }
    return tasks;
  }

  /** Select the branch through `id`: follow the newest child down to a leaf. */
  async select(id: string): Promise<void> {
    let cur = id;
    for (let guard = 0; guard < 100_000; guard++) {
      const kids = this.children(cur);
      if (kids.length === 0) break;
      cur = kids[kids.length - 1]!;
    }
    this.record.leaf = cur;
    await this.save();
  }

  /** Mark an assistant message as cut off (it offers "Continue"). */
  async markInterrupted(id: string): Promise<void> {
    const list = (this.record.interrupted ??= []);
    if (!list.includes(id)) list.push(id);
    await this.save();
  }

  /** Move the selected leaf to `id` (a task of this conversation), e.g. to ask the model again from there. */
  async setLeaf(id: string): Promise<void> {
    this.record.leaf = id;
    await this.save();
  }

  /** Set the title; `source` says who chose it (a person's title is never replaced by the app's). */
  async setTitle(title: string, source: NonNullable<ConversationRecord['titleSource']> = 'person'): Promise<void> {
    this.record.title = title.slice(0, 80);
    this.record.titleSource = source;
    await this.save(false);
  }

  /** Note who answered with assistant message `id` and the tokens the provider reported (chat/turn.ts onReply). */
  async noteReply(id: string, meta: ReplyMeta): Promise<void> {
    (this.record.replies ??= {})[id] = meta;
    await this.save();
  }

  /** Save the record; `touch` (default) marks it updated now, which orders the conversation list. */
  async save(touch = true): Promise<void> {
    if (touch) this.record.updated = Date.now();
    await this.db.putConversation(this.record);
  }

  /** Every task of the conversation (all branches), root first, for export. */
  async allTasks(): Promise<Task[]> {
    const out: Task[] = [];
    const walk = async (id: string) => {
      out.push(await this.task(id));
      for (const c of this.children(id)) await walk(c);
    };
    await walk(this.record.root);
    return out;
  }
}
