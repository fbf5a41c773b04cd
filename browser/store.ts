// IndexedDB StoreBackend for the browser host (through idb); browser host, trusted side.
import { openDB, type DBSchema, type IDBPDatabase } from 'idb';
import { TyError } from '../core/errors.js';
import { checkKey, type StoreBackend } from '../core/store/contract.js';
import { serializeByName } from '../core/store/memory.js';
import { checkSecretName, type SecretValues } from '../core/capabilities/secrets.js';
import type { Store } from '../core/store/contract.js';

interface TyDb extends DBSchema {
  /** Bytes keyed by [namespace, key]: objects (revisions), bindings, tasks, tool storage, questions... */
  kv: { key: [string, string]; value: Uint8Array };
  /** Log lines, auto-increment key = append order; index `log` on the log name. */
  logs: { key: number; value: { log: string; line: string }; indexes: { log: string } };
}

export interface IdbStoreOptions {
  /** Database name (default `tysandbox`). One app origin may hold several stores under different names. */
  name?: string;
}

interface LockManagerLike {
  request<T>(name: string, cb: () => Promise<T>): Promise<T>;
}

/**
 * The browser's store: one IndexedDB database with an object store `kv` (bytes under `[ns, key]`) and an
 * append-only `logs` store. Each put/delete/append is one readwrite transaction, so a reader sees the
 * old bytes or the new ones (IndexedDB transactions are atomic, W3C Indexed Database API 3.0 §2.7).
 * `withLock` uses the Web Locks API (shared by every tab of the origin) when present, else an
 * in-page queue. Integrity of content-addressed objects is re-checked by core's Store wrapper.
 * @throws TyError E_STORE for bad namespaces/keys or when IndexedDB is unavailable (e.g. opaque origin).
 */
export class IdbStoreBackend implements StoreBackend {
  readonly #db: IDBPDatabase<TyDb>;
  readonly #locks = new Map<string, Promise<unknown>>();
  readonly #lockManager: LockManagerLike | undefined;

  private constructor(db: IDBPDatabase<TyDb>, lockManager: LockManagerLike | undefined) {
    this.#db = db;
    this.#lockManager = lockManager;
  }

  /** Open (creating if needed) the database. @throws TyError E_STORE */
  static async open(opts: IdbStoreOptions = {}): Promise<IdbStoreBackend> {
    const name = opts.name ?? 'tysandbox';
    let db: IDBPDatabase<TyDb>;
    try {
      db = await openDB<TyDb>(name, 1, {
        upgrade(d) {
          d.createObjectStore('kv');
          const logs = d.createObjectStore('logs', { autoIncrement: true });
          logs.createIndex('log', 'log');
        },
      });
    } catch (e) {
      throw new TyError('E_STORE', `IndexedDB is not available here: ${e instanceof Error ? e.message : String(e)}`);
    }
    const nav = (globalThis as { navigator?: { locks?: LockManagerLike } }).navigator;
    return new IdbStoreBackend(db, nav?.locks && typeof nav.locks.request === 'function' ? nav.locks : undefined);
  }

  async get(ns: string, key: string): Promise<Uint8Array | undefined> {
    checkKey(ns, key);
    const v = await this.#db.get('kv', [ns, key]);
    return v === undefined ? undefined : new Uint8Array(v);
  }
  async put(ns: string, key: string, bytes: Uint8Array): Promise<void> {
    checkKey(ns, key);
    if (!(bytes instanceof Uint8Array)) throw new TyError('E_STORE', 'store values are bytes (Uint8Array)');
    await this.#db.put('kv', bytes.slice(), [ns, key]);
  }
  async delete(ns: string, key: string): Promise<void> {
    checkKey(ns, key);
    await this.#db.delete('kv', [ns, key]);
  }
  async list(ns: string): Promise<string[]> {
    checkKey(ns);
    // Keys are [ns, key]; every valid key is ASCII below '\u007f', so this range covers exactly one namespace.
    const keys = await this.#db.getAllKeys('kv', IDBKeyRange.bound([ns, ''], [ns, '\u007f'], false, true));
    return keys.map((k) => k[1]).sort();
  }
  async append(log: string, line: string): Promise<void> {
    checkKey(log);
    if (line.includes('\n')) throw new TyError('E_STORE', 'a log line must not contain a newline');
    await this.#db.add('logs', { log, line });
  }
  async readLog(log: string): Promise<string[]> {
    checkKey(log);
    // Index order is (log, primary key), i.e. append order within one log.
    return (await this.#db.getAllFromIndex('logs', 'log', log)).map((r) => r.line);
  }
  async withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    if (this.#lockManager) return this.#lockManager.request(`tysandbox:${name}`, fn);
    return serializeByName(this.#locks, name, fn);
  }
  /** Close the database connection. */
  close(): void {
    this.#db.close();
  }
}

/**
 * SecretValues (core/capabilities/secrets.ts) kept in the host's store under their own namespace (default
 * `mcp-secrets`): the
 * browser host's MCP header values. Apart from the tools' secret values (`createBrowserHost({ secretValues })`),
 * so no tool revision can be granted one; never in the audit, never exported.
 */
export class StoreSecretValues implements SecretValues {
  constructor(
    private readonly store: Store,
    private readonly ns = 'mcp-secrets',
  ) {}
  async get(name: string): Promise<string | undefined> {
    checkSecretName(name);
    return this.store.getJson<string>(this.ns, name);
  }
  async set(name: string, value: string): Promise<void> {
    checkSecretName(name);
    if (typeof value !== 'string') throw new TyError('E_USAGE', 'a secret value is a string');
    await this.store.putJson(this.ns, name, value);
  }
  async delete(name: string): Promise<boolean> {
    checkSecretName(name);
    const had = (await this.store.getJson<string>(this.ns, name)) !== undefined;
    await this.store.backend.delete(this.ns, name);
    return had;
  }
  async names(): Promise<string[]> {
    return this.store.backend.list(this.ns);
  }
}
