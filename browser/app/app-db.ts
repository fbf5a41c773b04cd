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
}

interface Schema extends DBSchema {
  settings: { key: string; value: unknown };
  /** Only the API key lives here: read by the model client, never by tools, audit or export. */
  keys: { key: string; value: string };
  conversations: { key: string; value: ConversationRecord };
  /** Secret values for tools (by name), handed to the host's secret broker; a revision reads one only after a grant. */
  secrets: { key: string; value: string };
}

/** Open the app database (name default `tysandbox-app`, next to the host's `tysandbox` database). */
export class AppDb {
  private constructor(readonly db: IDBPDatabase<Schema>) {}

  static async open(name = 'tysandbox-app'): Promise<AppDb> {
    const db = await openDB<Schema>(name, 2, {
      upgrade(d, oldVersion) {
        if (oldVersion < 1) {
          d.createObjectStore('settings');
          d.createObjectStore('keys');
          d.createObjectStore('conversations', { keyPath: 'id' });
        }
        if (oldVersion < 2) d.createObjectStore('secrets');
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
  async getKey(): Promise<string> {
    return (await this.db.get('keys', 'apiKey')) ?? '';
  }
  async putKey(key: string): Promise<void> {
    if (key) await this.db.put('keys', key, 'apiKey');
    else await this.db.delete('keys', 'apiKey');
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
