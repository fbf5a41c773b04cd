// The chat app's own IndexedDB database: settings, the API key, conversation indexes; browser app, trusted side.
import { openDB, type DBSchema, type IDBPDatabase } from 'idb';
import type { ApiKind } from './models/types.js';
import type { SecretValues } from '../../core/capabilities/secrets.js';

/** Settings a person sees in the settings panel. The API key is kept apart (see `AppDb.getKey`). */
export interface AppSettings {
  api: ApiKind;
  /** Base URL of the model API, e.g. `http://127.0.0.1:11434/v1`. */
  endpoint: string;
  model: string;
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
}

export const DEFAULT_SETTINGS: AppSettings = {
  api: 'openai',
  endpoint: '',
  model: '',
  stream: true,
  embeddingOrigins: [],
  examplesOffered: false,
};

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

/** The API key and the endpoint origins the person confirmed it for (RFC 6454 origins: `https://api.openai.com`). */
export interface KeyRecord {
  key: string;
  origins: string[];
}

interface Schema extends DBSchema {
  settings: { key: string; value: unknown };
  /** Only the API key lives here (a KeyRecord; a string from before keys were bound to origins): read by the model
   * client, never by tools, audit or export. */
  keys: { key: string; value: KeyRecord | string };
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
    const db = await openDB<Schema>(name, 3, {
      upgrade(d, oldVersion) {
        if (oldVersion < 1) {
          d.createObjectStore('settings');
          d.createObjectStore('keys');
          d.createObjectStore('conversations', { keyPath: 'id' });
        }
        if (oldVersion < 2) d.createObjectStore('secrets');
        if (oldVersion < 3) d.createObjectStore('turns', { keyPath: 'id' });
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
  /** The saved key and the origins it is confirmed for (a key saved before origins were kept: confirmed for none). */
  async getKeyRecord(): Promise<KeyRecord | undefined> {
    const v = await this.db.get('keys', 'apiKey');
    if (v === undefined || v === '') return undefined;
    return typeof v === 'string' ? { key: v, origins: [] } : { key: v.key, origins: [...v.origins] };
  }
  /** Save the key for exactly `origin` (the endpoint it was entered for; none: confirmed for no origin yet). */
  async putKey(key: string, origin: string | undefined): Promise<void> {
    if (key) await this.db.put('keys', { key, origins: origin ? [origin] : [] }, 'apiKey');
    else await this.db.delete('keys', 'apiKey');
  }
  /** The person confirmed sending the key to `origin`. */
  async confirmKeyOrigin(origin: string): Promise<void> {
    const r = await this.getKeyRecord();
    if (r && !r.origins.includes(origin))
      await this.db.put('keys', { key: r.key, origins: [...r.origins, origin] }, 'apiKey');
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
 * Settings from the page URL: `?api=openai|anthropic&endpoint=URL&model=NAME`. A key is never read from the
 * URL (it would land in history, logs and referrers); unknown values are ignored.
 */
export function settingsFromUrl(search: string): Partial<AppSettings> {
  const p = new URLSearchParams(search);
  const out: Partial<AppSettings> = {};
  const api = p.get('api');
  if (api === 'openai' || api === 'anthropic') out.api = api;
  const endpoint = p.get('endpoint');
  if (endpoint && /^https?:\/\//i.test(endpoint)) out.endpoint = endpoint;
  const model = p.get('model');
  if (model) out.model = model.slice(0, 200);
  return out;
}
