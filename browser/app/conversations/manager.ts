// Managing the conversations: the list with "Search conversations", rename, pin, delete with "Undo", titles from the
// first exchange; browser app, trusted side.
import type { Store } from '../../../core/store/contract.js';
import type { AppDb, ConversationRecord } from '../app-db.js';
import { ConversationTree, MAX_SEARCH_TEXT, searchTextOf } from '../chat/tree.js';
import { h } from '../dom.js';
import type { Toast } from '../ui/toast.js';
import { distinctTitle, firstWordsTitle, matchConversation, searchTerms } from './groups.js';
import { ConversationList } from './list.js';
import { purgeConversation, UNDO_MS } from './purge.js';

/** What the manager needs from the app. */
export interface ManagerHost {
  db: AppDb;
  store(): Store;
  /** The conversation shown. */
  current(): ConversationTree;
  /** A turn is running in the conversation shown (it is not deleted then). */
  busy(): boolean;
  open(id: string): Promise<void>;
  openNew(): Promise<void>;
  /** The conversation shown changed (title, pin): show it again. */
  changed(): void;
  toast: Toast;
}

/**
 * The sidebar's conversations: "Search conversations" (titles and message text, every word must match), the grouped
 * list (list.ts), and what can be done to a conversation: rename (its title source becomes the person's), pin, delete
 * (hidden at once, "Undo" for UNDO_MS, then purged for good).
 */
export class ConversationManager {
  readonly search = h('input', {
    type: 'search',
    class: 'conv-search',
    'aria-label': 'Search conversations',
    placeholder: 'Search conversations',
    autocomplete: 'off',
    spellcheck: 'false',
  });
  readonly list: ConversationList;
  #query = '';
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Deletions waiting for their Undo to run out, by id. */
  readonly #pending = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(private readonly host: ManagerHost) {
    this.list = new ConversationList({
      open: (id) => void host.open(id),
      rename: (id, t) => void this.rename(id, t),
      remove: (id) => void this.remove(id),
    });
    this.search.addEventListener('input', () => {
      clearTimeout(this.#timer);
      this.#timer = setTimeout(() => void this.render(), 120);
    });
    this.search.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape' && this.search.value) {
        ev.preventDefault();
        ev.stopPropagation();
        this.search.value = '';
        void this.render();
      } else if (ev.key === 'ArrowDown') {
        ev.preventDefault();
        this.list.focus();
      }
    });
  }

  /** The sidebar's content: the search box and the list. */
  get elements(): HTMLElement[] {
    return [this.search, ...this.list.element];
  }

  /** Show the list (searched when a search is typed). */
  async render(): Promise<void> {
    const all = (await this.host.db.listConversations()).filter((c) => c.deleted === undefined);
    const q = this.search.value.trim();
    this.#query = q;
    const terms = searchTerms(q);
    const entries = [];
    for (const c of all) {
      let snippet = '';
      if (terms.length) {
        const m = matchConversation(c.title, await this.#text(c), terms);
        if (m === undefined) continue;
        snippet = m;
      }
      entries.push({ id: c.id, title: c.title, updated: c.updated, pinned: c.pinned === true, snippet });
    }
    if (this.#query !== q) return; // a newer search is on its way
    this.list.render(entries, this.host.current().record.id, Date.now(), q);
  }

  /** The searchable text of a conversation, built once from its tasks when it was made before the index. */
  async #text(c: ConversationRecord): Promise<string> {
    const have = await this.host.db.getSearchText(c.id);
    if (have !== undefined) return have;
    const tree = await ConversationTree.open(this.host.store(), this.host.db, c.id);
    let text = '';
    try {
      text = (await tree?.allTasks())?.map(searchTextOf).filter(Boolean).join('\n') ?? '';
    } catch {
      /* a task that fails its check is not searchable */
    }
    await this.host.db.putSearchText(c.id, text.slice(-MAX_SEARCH_TEXT));
    return text;
  }

  async #record(id: string): Promise<{ rec: ConversationRecord; tree?: ConversationTree } | undefined> {
    const cur = this.host.current();
    if (cur.record.id === id) return { rec: cur.record, tree: cur };
    const rec = await this.host.db.getConversation(id);
    return rec ? { rec } : undefined;
  }

  /** Rename conversation `id` (the person's title: the app never replaces it). */
  async rename(id: string, title: string): Promise<void> {
    const r = await this.#record(id);
    if (!r) return;
    if (r.tree) await r.tree.setTitle(title, 'person');
    else await this.host.db.putConversation({ ...r.rec, title: title.slice(0, 80), titleSource: 'person' });
    this.host.changed();
    await this.render();
    this.host.toast.show(`Renamed to "${title}".`);
  }

  /** Pin or unpin conversation `id` (pinned ones are listed first). */
  async togglePin(id: string): Promise<void> {
    const r = await this.#record(id);
    if (!r) return;
    const pinned = !r.rec.pinned;
    if (r.tree) {
      r.tree.record.pinned = pinned;
      await r.tree.save(false);
    } else await this.host.db.putConversation({ ...r.rec, pinned });
    this.host.changed();
    await this.render();
    this.host.toast.show(pinned ? `Pinned "${r.rec.title}".` : `Unpinned "${r.rec.title}".`);
  }

  /**
   * Delete conversation `id`: hidden from the list at once (the mark is saved, so a reload keeps it hidden and purges
   * it), "Undo" offered for UNDO_MS, then purged. Deleting the conversation shown opens the newest other one (or a new
   * one). Not while a turn runs in it.
   */
  async remove(id: string): Promise<void> {
    const r = await this.#record(id);
    if (!r) return;
    if (r.tree && this.host.busy()) {
      this.host.toast.show('Stop the running answer before deleting this conversation.');
      return;
    }
    const rec = { ...r.rec, deleted: Date.now() };
    await this.host.db.putConversation(rec);
    if (r.tree) {
      r.tree.record.deleted = rec.deleted;
      const next = (await this.host.db.listConversations()).find((c) => c.deleted === undefined && c.id !== id);
      await (next ? this.host.open(next.id) : this.host.openNew());
    }
    await this.render();
    const purge = () => {
      this.#pending.delete(id);
      void purgeConversation(this.host.db, this.host.store(), id).then(() => this.render());
    };
    this.#pending.set(id, setTimeout(purge, UNDO_MS + 500));
    this.host.toast.show(`Deleted "${rec.title}".`, UNDO_MS, { label: 'Undo', run: () => void this.undo(id) });
  }

  /** Bring back a deleted conversation whose Undo has not run out, and open it. */
  async undo(id: string): Promise<void> {
    clearTimeout(this.#pending.get(id));
    this.#pending.delete(id);
    const rec = await this.host.db.getConversation(id);
    if (!rec) return;
    delete rec.deleted;
    await this.host.db.putConversation(rec);
    await this.host.open(id);
    await this.render();
    this.host.toast.show(`Restored "${rec.title}".`);
  }

  /**
   * The title of a conversation's first message when it has none yet: its first words (or the first file's name),
   * made distinct from the other conversations' titles.
   */
  async firstTitle(tree: ConversationTree, text: string, fileName?: string): Promise<void> {
    if (tree.record.titleSource !== undefined || tree.record.title !== 'New conversation') return;
    const others = (await this.host.db.listConversations()).filter((c) => c.id !== tree.record.id).map((c) => c.title);
    await tree.setTitle(distinctTitle(firstWordsTitle(text || fileName || ''), others), 'words');
  }
}
