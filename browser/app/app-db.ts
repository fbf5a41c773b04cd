// The chat app's own IndexedDB database: settings, connections and their keys, conversation indexes, attached files,
// search text; browser app, trusted side.
import { openDB, type DBSchema, type IDBPDatabase } from 'idb';
import type { ApiKind } from './models/types.js';
import type { SecretValues } from '../../core/capabilities/secrets.js';

/** Settings a person sees in the settings panel. Connections and their keys are kept apart (providers/). */
export interface AppSettings {
  /** Stream replies (SSE). */
  stream: boolean;
  /** Origins allowed to embed this app and talk to it over postMessage; empty by default. */
  embeddingOrigins: string[];
  /** The example tools were offered once (first start). */
  examplesOffered: boolean;
  /** The built-in host tools (browser/app/host-tools.ts) were installed once. */
  hostToolsOffered?: boolean;
  /** Assistant text rendered as markdown (default); off: plain text. */
  markdown?: boolean;
  /** The connection new conversations use: the one last picked in a conversation's "Model" menu. */
  defaultConnection?: string;
  /** The system prompt new conversations start with ("Default system prompt"; each conversation keeps its own). */
  systemPrompt: string;
  /** Ask the model to title a new conversation after its first exchange (else its first words). Off by default. */
  modelTitles?: boolean;
}

/** The default system prompt: the app's sentence about sandboxed tools is added after it (chat/system.ts). */
export const DEFAULT_SYSTEM_PROMPT = 'You are a helpful assistant.';

export const DEFAULT_SETTINGS: AppSettings = {
  stream: true,
  embeddingOrigins: [],
  examplesOffered: false,
  systemPrompt: DEFAULT_SYSTEM_PROMPT,
};

/** What the app notes about one assistant reply: who answered and the tokens the provider reported. */
export interface ReplyMeta {
  /** The connection's name when the reply came (a connection may be renamed or removed later). */
  connection: string;
  model: string;
  /** Tokens in and out as the provider reported them; absent when it reported none (never estimated). */
  input?: number;
  output?: number;
}

/** One conversation's index over the content-addressed tasks in the host store. */
export interface ConversationRecord {
  id: string;
  title: string;
  created: number;
  updated: number;
  /** The root task (a system message). */
  root: string;
  /** Child task ids per task id, in creation order. */
  children: Record<string, string[]>;
  /** The selected branch ends here. */
  leaf: string;
  /** Assistant messages that were cut off (a reload, a closed tab, a broken stream): they offer "Continue". */
  interrupted?: string[];
  /** Where the title came from: the first words, the model, or the person (a person's title is never replaced). */
  titleSource?: 'words' | 'model' | 'person';
  pinned?: boolean;
  /** Deleted at this time (ms); kept until its "Undo" ran out, then purged (conversations/purge.ts). */
  deleted?: number;
  /** The connection and model picked in this conversation's "Model" menu (absent: the default connection's model). */
  connection?: string;
  model?: string;
  /** This conversation's system prompt (absent in conversations from before it could be set: the root holds it). */
  systemPrompt?: string;
  temperature?: number;
  maxTokens?: number;
  /** Per assistant message task id: who answered, tokens in and out. */
  replies?: Record<string, ReplyMeta>;
}

/**
 * A turn's state while it runs, written as it goes (chat/journal.ts): the text streamed so far after `leaf`, and the
 * outcomes of the calls that ended. A reload finds it and puts what it holds in the tree (chat/recover.ts).
 */
export interface TurnRecord {
  /** The conversation id. */
  id: string;
  /** The task the streamed text answers (the tree's leaf when the request was made). */
  leaf: string;
  text: string;
  /** Outcomes of calls that ended, by function-call task id. */
  calls: Record<string, unknown>;
  updated: number;
}

/**
 * A connection's secrets: its API key, its extra headers (names and values), and the endpoint origins the person
 * confirmed them for (RFC 6454 origins: `https://api.openai.com`). Sent only to those origins.
 */
export interface Credentials {
  key: string;
  origins: string[];
  headers: { name: string; value: string }[];
}

/** A saved model connection (providers/connections.ts); its key and header values live in `keys` (Credentials). */
export interface ConnectionRecord {
  id: string;
  name: string;
  api: ApiKind;
  /** Base URL of the API, e.g. `http://127.0.0.1:11434/v1`. */
  endpoint: string;
  /** The model a conversation uses when it has not picked one (free text). */
  model: string;
  /** The models GET /v1/models listed last (sorted). */
  models?: string[];
  /** Names of the extra headers (their values are in Credentials). */
  headerNames?: string[];
  /** Send image attachments to this connection's models. */
  images: boolean;
  /** The preset it was made from (providers/presets.ts), for its CORS note. */
  preset?: string;
  created: number;
}

/** A file attached to a message, by its sha-256 (hex): the bytes and the conversations that use it. */
export interface FileRecord {
  sha256: string;
  mediaType: string;
  bytes: Uint8Array;
  /** Conversation ids whose messages attach it (empty: attached in the composer, not sent yet). */
  conversations: string[];
  added: number;
}

interface Schema extends DBSchema {
  settings: { key: string; value: unknown };
  /** Only connection secrets live here (`conn:<id>`: Credentials; `apiKey`: the one key of before connections, moved
   * by providers/migrate.ts): read by the model clients, never by tools, audit or export. */
  keys: { key: string; value: Credentials | { key: string; origins: string[] } | string };
  connections: { key: string; value: ConnectionRecord };
  /** Attached files by sha-256. */
  files: { key: string; value: FileRecord };
  /** Searchable text per conversation (titles are searched from the records). */
  search: { key: string; value: { id: string; text: string } };
  conversations: { key: string; value: ConversationRecord };
  /** Secret values for tools (by name), handed to the host's secret broker; a revision reads one only after a grant. */
  secrets: { key: string; value: string };
  /** A running turn's state per conversation (TurnRecord). */
  turns: { key: string; value: TurnRecord };
}

/** Open the app database (name default `tysandbox-app`, next to the host's `tysandbox` database). */
export class AppDb {
  private constructor(readonly db: IDBPDatabase<Schema>) {}

  static async open(name = 'tysandbox-app'): Promise<AppDb> {
    const db = await openDB<Schema>(name, 4, {
      upgrade(d, oldVersion) {
        if (oldVersion < 1) {
          d.createObjectStore('settings');
          d.createObjectStore('keys');
          d.createObjectStore('conversations', { keyPath: 'id' });
        }
        if (oldVersion < 2) d.createObjectStore('secrets');
        if (oldVersion < 3) d.createObjectStore('turns', { keyPath: 'id' });
        if (oldVersion < 4) {
          d.createObjectStore('connections', { keyPath: 'id' });
          d.createObjectStore('files', { keyPath: 'sha256' });
          d.createObjectStore('search', { keyPath: 'id' });
        }
      },
    });
    return new AppDb(db);
  }

  async getSettings(): Promise<AppSettings> {
    const s = (await this.db.get('settings', 'app')) as Partial<AppSettings> | undefined;
    return { ...DEFAULT_SETTINGS, ...(s ?? {}) };
  }
  async putSettings(s: AppSettings): Promise<void> {
    await this.db.put('settings', { ...s }, 'app');
  }
  async listConnections(): Promise<ConnectionRecord[]> {
    return (await this.db.getAll('connections')).sort((a, b) => a.created - b.created);
  }
  async getConnection(id: string): Promise<ConnectionRecord | undefined> {
    return this.db.get('connections', id);
  }
  async putConnection(c: ConnectionRecord): Promise<void> {
    await this.db.put('connections', structuredClone(c));
  }
  /** Remove a connection and its secrets. */
  async deleteConnection(id: string): Promise<void> {
    await this.db.delete('connections', id);
    await this.db.delete('keys', `conn:${id}`);
  }
  /** A connection's key, headers and confirmed origins (undefined: none saved). */
  async getCredentials(id: string): Promise<Credentials | undefined> {
    const v = await this.db.get('keys', `conn:${id}`);
    if (!v || typeof v !== 'object' || !('origins' in v)) return undefined;
    const headers = 'headers' in v && Array.isArray(v.headers) ? v.headers : [];
    if (!v.key && headers.length === 0) return undefined;
    return { key: v.key, origins: [...v.origins], headers: headers.map((x) => ({ ...x })) };
  }
  async #putCredentials(id: string, c: Credentials): Promise<void> {
    if (c.key || c.headers.length) await this.db.put('keys', structuredClone(c), `conn:${id}`);
    else await this.db.delete('keys', `conn:${id}`);
  }
  /**
   * Save a connection's key for exactly `origin` (the endpoint it was entered for; none: confirmed for no origin yet):
   * a new key is confirmed for that origin only, whatever the old one was.
   */
  async putKey(id: string, key: string, origin: string | undefined): Promise<void> {
    const c = (await this.getCredentials(id)) ?? { key: '', origins: [], headers: [] };
    await this.#putCredentials(id, { key, origins: origin ? [origin] : [], headers: c.headers });
  }
  /** Save a connection's extra headers; like a new key, they are confirmed for `origin` only. */
  async putHeaders(id: string, headers: { name: string; value: string }[], origin: string | undefined): Promise<void> {
    const c = (await this.getCredentials(id)) ?? { key: '', origins: [], headers: [] };
    const same = c.origins.length === 1 && c.origins[0] === origin;
    await this.#putCredentials(id, { key: c.key, origins: same ? c.origins : origin ? [origin] : [], headers });
  }
  /** The person confirmed sending the connection's key and headers to `origin`. */
  async confirmKeyOrigin(id: string, origin: string): Promise<void> {
    const c = await this.getCredentials(id);
    if (c && !c.origins.includes(origin)) await this.#putCredentials(id, { ...c, origins: [...c.origins, origin] });
  }
  /** The key of before connections (`apiKey`, with its origins; a bare string: confirmed for none), if any. */
  async legacyKey(): Promise<{ key: string; origins: string[] } | undefined> {
    const v = await this.db.get('keys', 'apiKey');
    if (v === undefined || v === '') return undefined;
    if (typeof v === 'string') return { key: v, origins: [] };
    return 'key' in v && typeof v.key === 'string' ? { key: v.key, origins: [...(v.origins ?? [])] } : undefined;
  }
  async deleteLegacyKey(): Promise<void> {
    await this.db.delete('keys', 'apiKey');
  }
  /** Store an attached file (idempotent), noting `conversation` as a user of it when given. */
  async putFile(f: Omit<FileRecord, 'conversations' | 'added'>, conversation?: string): Promise<void> {
    const tx = this.db.transaction('files', 'readwrite');
    const old = await tx.store.get(f.sha256);
    const conversations = [...new Set([...(old?.conversations ?? []), ...(conversation ? [conversation] : [])])];
    await tx.store.put({ ...(old ?? { ...f, added: Date.now() }), conversations });
    await tx.done;
  }
  /** Note that `conversation` uses these files (they were sent in one of its messages). */
  async claimFiles(conversation: string, sha256s: string[]): Promise<void> {
    const tx = this.db.transaction('files', 'readwrite');
    for (const sha of sha256s) {
      const f = await tx.store.get(sha);
      if (f && !f.conversations.includes(conversation))
        await tx.store.put({ ...f, conversations: [...f.conversations, conversation] });
    }
    await tx.done;
  }
  async getFile(sha256: string): Promise<FileRecord | undefined> {
    return this.db.get('files', sha256);
  }
  /** Forget that `conversation` uses its files; a file no conversation uses any more is deleted. */
  async releaseFiles(conversation: string): Promise<void> {
    const tx = this.db.transaction('files', 'readwrite');
    for (const f of await tx.store.getAll()) {
      if (!f.conversations.includes(conversation)) continue;
      const rest = f.conversations.filter((c) => c !== conversation);
      if (rest.length === 0) await tx.store.delete(f.sha256);
      else await tx.store.put({ ...f, conversations: rest });
    }
    await tx.done;
  }
  /** Delete files attached in the composer but never sent, added before `before` (ms), except those in `keep`. */
  async dropUnsentFiles(before: number, keep: ReadonlySet<string> = new Set()): Promise<void> {
    const tx = this.db.transaction('files', 'readwrite');
    for (const f of await tx.store.getAll())
      if (f.conversations.length === 0 && f.added < before && !keep.has(f.sha256)) await tx.store.delete(f.sha256);
    await tx.done;
  }
  async getSearchText(id: string): Promise<string | undefined> {
    return (await this.db.get('search', id))?.text;
  }
  async putSearchText(id: string, text: string): Promise<void> {
    await this.db.put('search', { id, text });
  }
  async deleteSearchText(id: string): Promise<void> {
    await this.db.delete('search', id);
  }
  async getTurn(id: string): Promise<TurnRecord | undefined> {
    return this.db.get('turns', id);
  }
  async putTurn(t: TurnRecord): Promise<void> {
    await this.db.put('turns', structuredClone(t));
  }
  async deleteTurn(id: string): Promise<void> {
    await this.db.delete('turns', id);
  }
  async getConversation(id: string): Promise<ConversationRecord | undefined> {
    return this.db.get('conversations', id);
  }
  async putConversation(c: ConversationRecord): Promise<void> {
    await this.db.put('conversations', structuredClone(c));
  }
  async deleteConversation(id: string): Promise<void> {
    await this.db.delete('conversations', id);
  }
  async listConversations(): Promise<ConversationRecord[]> {
    return (await this.db.getAll('conversations')).sort((a, b) => b.updated - a.updated);
  }
  /**
   * Tool secrets as the host's SecretValues (core/capabilities/secrets.ts): the host reads a value only for a granted
   * revision.
   */
  secretValues(): SecretValues {
    const db = this.db;
    return {
      get: async (name) => db.get('secrets', name),
      set: async (name, value) => void (await db.put('secrets', value, name)),
      delete: async (name) => {
        const had = (await db.get('secrets', name)) !== undefined;
        await db.delete('secrets', name);
        return had;
      },
      names: async () => (await db.getAllKeys('secrets')).map(String).sort(),
    };
  }
  async getValue<T>(key: string): Promise<T | undefined> {
    return (await this.db.get('settings', key)) as T | undefined;
  }
  async putValue(key: string, v: unknown): Promise<void> {
    await this.db.put('settings', v, key);
  }
}

/**
 * What a link may set for one visit: `?api=openai|anthropic|openai-responses&endpoint=URL&model=NAME`. A key is never
 * read from the URL (it would land in history, logs and referrers); unknown values are ignored. The endpoint is used
 * for this visit only, and no saved key goes to it before the person answers "Send your key to HOST?".
 */
export interface LinkOverride {
  api?: ApiKind;
  endpoint?: string;
  model?: string;
}

export function settingsFromUrl(search: string): LinkOverride {
  const p = new URLSearchParams(search);
  const out: LinkOverride = {};
  const api = p.get('api');
  if (api === 'openai' || api === 'anthropic' || api === 'openai-responses') out.api = api;
  const endpoint = p.get('endpoint');
  if (endpoint && /^https?:\/\//i.test(endpoint)) out.endpoint = endpoint;
  const model = p.get('model');
  if (model) out.model = model.slice(0, 200);
  return out;
}
