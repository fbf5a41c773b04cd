// Saved model connections (any number, each with its own key): the list, the default, the connection and model a
// conversation uses, the one-time move from the single endpoint of before; browser app, trusted side.
import type { AppDb, AppSettings, ConnectionRecord, ConversationRecord, LinkOverride } from '../app-db.js';
import { connectSource } from '../connect.js';
import { API_KINDS, type ApiKind } from '../models/types.js';
import { presetById } from './presets.js';

/** The connection and model a request goes to. `link`: the endpoint came from the page's URL for this visit. */
export interface Choice {
  connection: ConnectionRecord;
  model: string;
  link?: boolean;
}

/** A header name a connection may add: an HTTP token (RFC 9110 §5.6.2), not one the clients set themselves. */
export function headerNameProblem(name: string): string | undefined {
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/.test(name)) return `"${name.slice(0, 40)}" is not a header name`;
  const own = ['authorization', 'x-api-key', 'content-type', 'accept', 'anthropic-version', 'cookie', 'host', 'origin'];
  if (own.includes(name.toLowerCase()) || name.toLowerCase().startsWith('anthropic-'))
    return `${name} is set by the app itself (the key goes in the API key field)`;
  return undefined;
}

/** A header value: visible ASCII and spaces, no line breaks (RFC 9110 §5.5), at most 4000 characters. */
export function headerValueProblem(value: string): string | undefined {
  return /^[\t\x20-\x7e]{0,4000}$/.test(value) ? undefined : 'a header value must be printable ASCII on one line';
}

/** The host of an endpoint, for names and questions ("api.openai.com"), or the text itself. */
export function endpointHost(endpoint: string): string {
  try {
    return new URL(endpoint).host;
  } catch {
    return endpoint;
  }
}

/**
 * The person's connections, kept in the app database (`connections`; keys and header values in `keys`, see
 * AppDb.getCredentials). `changed` listeners run after every change (the Model menus, the CSP's origins).
 */
export class Connections {
  #list: ConnectionRecord[] = [];
  readonly #listeners = new Set<() => void>();

  private constructor(
    private readonly db: AppDb,
    private readonly settings: AppSettings,
  ) {}

  /**
   * Load the connections. The first start after connections came moves the single endpoint of before (settings
   * `api`, `endpoint`, `model` and the key `apiKey` with its confirmed origins) into one connection, its default.
   */
  static async load(db: AppDb, settings: AppSettings): Promise<Connections> {
    const c = new Connections(db, settings);
    c.#list = await db.listConnections();
    const legacy = settings as AppSettings & { api?: unknown; endpoint?: unknown; model?: unknown };
    const key = await db.legacyKey();
    if (c.#list.length === 0 && (typeof legacy.endpoint === 'string' || key)) {
      const endpoint = typeof legacy.endpoint === 'string' ? legacy.endpoint : '';
      const api = API_KINDS.includes(legacy.api as ApiKind) ? (legacy.api as ApiKind) : 'openai';
      const made = await c.add({
        name: endpoint ? endpointHost(endpoint) : 'My connection',
        api,
        endpoint,
        model: typeof legacy.model === 'string' ? legacy.model : '',
      });
      if (key) {
        await db.putKey(made.id, key.key, undefined);
        for (const o of key.origins) await db.confirmKeyOrigin(made.id, o);
      }
    }
    if (key) await db.deleteLegacyKey();
    if ('endpoint' in legacy || 'api' in legacy || 'model' in legacy) {
      delete legacy.api;
      delete legacy.endpoint;
      delete legacy.model;
      await db.putSettings(settings);
    }
    return c;
  }

  all(): readonly ConnectionRecord[] {
    return this.#list;
  }

  get(id: string | undefined): ConnectionRecord | undefined {
    return id === undefined ? undefined : this.#list.find((c) => c.id === id);
  }

  /** Run `fn` after every change. Returns the unsubscribe function. */
  onChange(fn: () => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  #changed(): void {
    for (const fn of this.#listeners) fn();
  }

  /** Save a new connection (a fresh id); the first one becomes the default. */
  async add(init: Partial<Omit<ConnectionRecord, 'id' | 'created'>>): Promise<ConnectionRecord> {
    const preset = presetById(init.preset);
    const c: ConnectionRecord = {
      id: crypto.randomUUID(),
      name: (init.name ?? preset?.label ?? 'New connection').slice(0, 80),
      api: init.api ?? preset?.api ?? 'openai',
      endpoint: init.endpoint ?? preset?.endpoint ?? '',
      model: init.model ?? '',
      images: init.images ?? preset?.images ?? true,
      created: Date.now() + this.#list.length,
      ...(init.preset ? { preset: init.preset } : {}),
      ...(init.models ? { models: init.models } : {}),
      ...(init.headerNames ? { headerNames: init.headerNames } : {}),
    };
    await this.db.putConnection(c);
    this.#list.push(c);
    if (!this.get(this.settings.defaultConnection)) await this.#setDefault(c.id);
    this.#changed();
    return c;
  }

  /** Change a connection's fields and save it. */
  async update(id: string, patch: Partial<Omit<ConnectionRecord, 'id' | 'created'>>): Promise<ConnectionRecord> {
    const c = this.get(id);
    if (!c) throw new Error(`no connection ${id}`);
    Object.assign(c, patch);
    c.name = c.name.slice(0, 80);
    await this.db.putConnection(c);
    this.#changed();
    return c;
  }

  /** Remove a connection and its key; conversations that used it fall back to the default. */
  async remove(id: string): Promise<void> {
    await this.db.deleteConnection(id);
    this.#list = this.#list.filter((c) => c.id !== id);
    if (this.settings.defaultConnection === id) await this.#setDefault(this.#list[0]?.id);
    this.#changed();
  }

  async #setDefault(id: string | undefined): Promise<void> {
    if (id) this.settings.defaultConnection = id;
    else delete this.settings.defaultConnection;
    await this.db.putSettings(this.settings);
  }

  /** The connection new conversations use: the one last picked, else the first. */
  defaultConnection(): ConnectionRecord | undefined {
    return this.get(this.settings.defaultConnection) ?? this.#list[0];
  }

  /**
   * What `conv` sends to: the connection and model picked in its "Model" menu while that connection exists, else the
   * default connection and its model. `link` (the page's URL parameters) replaces the API, endpoint and model for
   * this visit; the connection's key then belongs to another origin, so it is asked about before it is sent. With no
   * connection a link still names one for this visit (no key). Undefined: nothing is configured.
   */
  choiceFor(conv: Pick<ConversationRecord, 'connection' | 'model'>, link?: LinkOverride): Choice | undefined {
    const picked = this.get(conv.connection);
    const c = picked ?? this.defaultConnection();
    const base: Choice | undefined = c ? { connection: c, model: (picked && conv.model) || c.model } : undefined;
    if (!link?.endpoint) return base;
    const over: ConnectionRecord = base
      ? { ...base.connection, api: link.api ?? base.connection.api, endpoint: link.endpoint }
      : {
          id: 'link',
          name: `From the link: ${endpointHost(link.endpoint)}`,
          api: link.api ?? 'openai',
          endpoint: link.endpoint,
          model: '',
          images: true,
          created: 0,
        };
    return { connection: over, model: link.model ?? base?.model ?? '', link: true };
  }

  /**
   * The person picked `model` of connection `id` in a conversation's "Model" menu: it becomes that conversation's
   * choice (the caller saves the record), the connection's default model and the default connection of new
   * conversations.
   */
  async pick(conv: ConversationRecord, id: string, model: string): Promise<void> {
    const c = this.get(id);
    if (!c) return;
    conv.connection = id;
    conv.model = model;
    if (c.model !== model) await this.update(id, { model });
    if (this.settings.defaultConnection !== id) {
      await this.#setDefault(id);
      this.#changed();
    }
  }

  /** The origins of every saved connection's endpoint (what the page's connect-src lists for them). */
  origins(): string[] {
    return this.#list.flatMap((c) => connectSource(c.endpoint) ?? []);
  }
}
