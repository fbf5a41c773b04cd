// In-memory StoreBackend (tests, ephemeral sessions, embedders); core, trusted side.
import { UNGENERATED_NAMESPACES, checkKey, type StoreBackend } from './contract.js';

/** A StoreBackend kept in memory; locks are in-process only. */
export class MemoryStoreBackend implements StoreBackend {
  readonly #data = new Map<string, Map<string, Uint8Array>>();
  readonly #logs = new Map<string, string[]>();
  readonly #locks = new Map<string, Promise<unknown>>();
  #generation = 0;

  /** See StoreBackend.generation: a counter every put or delete outside UNGENERATED_NAMESPACES moves. */
  generation(): string {
    return String(this.#generation);
  }

  async get(ns: string, key: string): Promise<Uint8Array | undefined> {
    checkKey(ns, key);
    const v = this.#data.get(ns)?.get(key);
    return v ? v.slice() : undefined;
  }
  async put(ns: string, key: string, bytes: Uint8Array): Promise<void> {
    checkKey(ns, key);
    let m = this.#data.get(ns);
    if (!m) this.#data.set(ns, (m = new Map()));
    m.set(key, bytes.slice());
    if (!UNGENERATED_NAMESPACES.has(ns)) this.#generation++;
  }
  async delete(ns: string, key: string): Promise<void> {
    checkKey(ns, key);
    this.#data.get(ns)?.delete(key);
    if (!UNGENERATED_NAMESPACES.has(ns)) this.#generation++;
  }
  async list(ns: string): Promise<string[]> {
    checkKey(ns);
    return [...(this.#data.get(ns)?.keys() ?? [])].sort();
  }
  async append(log: string, line: string): Promise<void> {
    checkKey(log);
    if (line.includes('\n')) throw new Error('a log line must not contain a newline');
    let l = this.#logs.get(log);
    if (!l) this.#logs.set(log, (l = []));
    l.push(line);
  }
  async readLog(log: string): Promise<string[]> {
    checkKey(log);
    return [...(this.#logs.get(log) ?? [])];
  }
  async withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return serializeByName(this.#locks, name, fn);
  }
}

/**
 * Run `fn` after every earlier call queued under `name` in `locks` has settled (an in-process mutex per name).
 * Used by stores whose writers all live in one JavaScript realm.
 */
export async function serializeByName<T>(
  locks: Map<string, Promise<unknown>>,
  name: string,
  fn: () => Promise<T>,
): Promise<T> {
  const prev = locks.get(name) ?? Promise.resolve();
  const run = prev.then(fn, fn);
  const tail = run.catch(() => undefined);
  locks.set(name, tail);
  try {
    return await run;
  } finally {
    if (locks.get(name) === tail) locks.delete(name);
  }
}
