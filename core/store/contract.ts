// Store contract shared by every host (file store on Node, IndexedDB in the browser); core, trusted side.
import { TyError } from '../errors.js';
import { cidOfBytes, isContentId } from '../revisions/cid.js';

/**
 * What a host implements: raw bytes in namespaces, plus append-only logs and a cross-process lock.
 * Namespaces and keys are `[A-Za-z0-9._@:-]{1,200}`; hosts refuse anything else (no path tricks).
 * Every write is atomic: a reader sees the old bytes or the new ones, never a half-written entry.
 */
export interface StoreBackend {
  /** Read bytes, or undefined when absent. */
  get(ns: string, key: string): Promise<Uint8Array | undefined>;
  /** Write bytes atomically (temp file + rename, or one IndexedDB transaction). */
  put(ns: string, key: string, bytes: Uint8Array): Promise<void>;
  /** Delete; absent is not an error. */
  delete(ns: string, key: string): Promise<void>;
  /** Keys of a namespace, sorted. */
  list(ns: string): Promise<string[]>;
  /** Append one line (no newline inside) to a log; each append is atomic with respect to other appenders. */
  append(log: string, line: string): Promise<void>;
  /**
   * Optional two-step append: resolves once the line is written where the host process dying can no longer lose
   * it (e.g. handed to the OS), with `durable`, which settles once it is on disk (rejects when it cannot be).
   * Hosts without it get `append` (durable at once).
   */
  appendStaged?(log: string, line: string): Promise<{ durable: Promise<void> }>;
  /**
   * Optional: resolves once every line appended to `log` before this call (staged ones included) is on disk.
   * Hosts whose appends are durable when they resolve and that have no stages need not have it.
   */
  syncLog?(log: string): Promise<void>;
  /** All lines of a log, oldest first. */
  readLog(log: string): Promise<string[]>;
  /** Run `fn` holding an exclusive lock named `name`, across processes where the host has several. */
  withLock<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /**
   * Optional: a cheap synchronous stamp of an entry as it is now (any process's write changes it), `absent` when
   * there is none, or undefined when the host cannot vouch for it (then the entry is read). Lets
   * {@link Store.getJsonFresh} keep records in memory without missing another process's change.
   */
  stamp?(ns: string, key: string): string | undefined;
  /**
   * Optional: a cheap synchronous stamp of every mutable record at once (every namespace but UNGENERATED_NAMESPACES):
   * any process that writes or deletes such a record changes it after its change (a generation counter), so an
   * unchanged generation vouches for every record read before it was taken; undefined when the host cannot vouch.
   * Lets {@link Store.getJsonFresh} answer from memory after one check of the whole store instead of one per record.
   */
  generation?(): string | undefined;
}

/**
 * Namespaces whose writes do not move a backend's generation: content-addressed ones (`objects`, `tasks`: an entry
 * never changes) and tool storage (written by tools on their calls, never kept in memory by getJsonFresh).
 */
export const UNGENERATED_NAMESPACES: ReadonlySet<string> = new Set(['objects', 'tasks', 'tool-storage']);

/** Most records {@link Store.getJsonFresh} keeps in memory per Store. */
const FRESH_MAX = 512;
/**
 * Longest an unchanged generation alone vouches for a record kept in memory, ms; after it the record's own stamp is
 * checked (or the record read). Bounds how long a change stays unseen when its writer could not change the
 * generation after it (a process killed between the two steps, a writer that predates generations).
 */
export const GENERATION_VOUCH_MS = 1000;

/** A record kept in memory: its entry stamp and the generation it was last checked under, and when (ms). */
interface FreshEntry {
  stamp: string | undefined;
  value: unknown;
  gen: string | undefined;
  at: number;
}

function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v as Record<string, unknown>)) deepFreeze(x);
  }
  return v;
}

export const KEY_RE = /^[A-Za-z0-9._@:-]{1,200}$/;

/** Throws E_STORE for a namespace or key outside KEY_RE. Hosts call this before touching storage. */
export function checkKey(ns: string, key?: string): void {
  if (!KEY_RE.test(ns) || ns.startsWith('.'))
    throw new TyError('E_STORE', `invalid store namespace "${ns.slice(0, 64)}"`);
  if (key !== undefined && (!KEY_RE.test(key) || key.startsWith('.')))
    throw new TyError('E_STORE', `invalid store key "${key.slice(0, 64)}"`);
}

const dec = new TextDecoder();
const enc = new TextEncoder();

/**
 * The store as core uses it: content-addressed objects that are re-hashed on every read
 * (E_INTEGRITY on mismatch), JSON records, JSON Lines logs.
 */
export class Store {
  readonly #fresh = new Map<string, FreshEntry>();
  constructor(readonly backend: StoreBackend) {}

  /**
   * Store canonical document bytes under their CID; idempotent. An existing entry that no longer hashes to
   * its CID (altered or corrupt) is replaced, so adding the same document again repairs it.
   * @returns the CID and whether bytes were written (`created`: absent before; `repaired`: replaced a bad entry).
   */
  async putObjectChecked(bytes: Uint8Array): Promise<{ cid: string; created: boolean; repaired: boolean }> {
    const cid = await cidOfBytes(bytes);
    const existing = await this.backend.get('objects', cid);
    if (existing !== undefined && (await cidOfBytes(existing)) === cid) return { cid, created: false, repaired: false };
    await this.backend.put('objects', cid, bytes);
    return { cid, created: existing === undefined, repaired: existing !== undefined };
  }

  /** putObjectChecked, returning the CID only. */
  async putObject(bytes: Uint8Array): Promise<string> {
    return (await this.putObjectChecked(bytes)).cid;
  }

  /**
   * Read an object and re-hash it.
   * @throws TyError E_INTEGRITY when the bytes do not hash to `cid`; E_STORE for a malformed id.
   */
  async getObject(cid: string): Promise<Uint8Array | undefined> {
    if (!isContentId(cid)) throw new TyError('E_STORE', `"${cid.slice(0, 80)}" is not a content id`);
    const bytes = await this.backend.get('objects', cid);
    if (bytes === undefined) return undefined;
    const actual = await cidOfBytes(bytes);
    if (actual !== cid)
      throw new TyError(
        'E_INTEGRITY',
        `stored object ${cid} does not match its content (hashes to ${actual}); it was altered or corrupted. Install the same manifest again to repair it.`,
        { repair: 'install-again' },
      );
    return bytes;
  }

  async getJson<T>(ns: string, key: string): Promise<T | undefined> {
    const b = await this.backend.get(ns, key);
    if (b === undefined) return undefined;
    try {
      return JSON.parse(dec.decode(b)) as T;
    } catch {
      throw new TyError('E_STORE', `store record ${ns}/${key} is not valid JSON`);
    }
  }

  /**
   * getJson for records read on every call (bindings, pause state, permanent decisions): kept in memory (deep-frozen:
   * never mutate it), absence included, and answered from there while the backend vouches that nothing changed:
   * its {@link StoreBackend.generation} is the one the record was checked under (one check of the whole store per call,
   * for at most GENERATION_VOUCH_MS), else the entry's own {@link StoreBackend.stamp} is unchanged. A write by any
   * process is seen at the next read; a backend with neither (or an entry neither vouches for) is read every time.
   */
  async getJsonFresh<T>(ns: string, key: string): Promise<T | undefined> {
    // the generation is taken first: a change made after it changes the generation again
    const gen = UNGENERATED_NAMESPACES.has(ns) ? undefined : this.backend.generation?.();
    const id = `${ns}/${key}`;
    const hit = this.#fresh.get(id);
    const now = Date.now();
    if (hit !== undefined && gen !== undefined && hit.gen === gen && now - hit.at < GENERATION_VOUCH_MS)
      return hit.value as T;
    const stamp = this.backend.stamp?.(ns, key);
    if (hit !== undefined && stamp !== undefined && hit.stamp === stamp) {
      hit.gen = gen;
      hit.at = now;
      return hit.value as T;
    }
    if (stamp === 'absent') {
      this.#remember(id, { stamp, value: undefined, gen, at: now });
      return undefined;
    }
    if (stamp === undefined && gen === undefined) {
      this.#fresh.delete(id);
      return this.getJson<T>(ns, key);
    }
    const value = deepFreeze(await this.getJson<T>(ns, key));
    // kept only when nothing changed while it was read (the entry's stamp, and the generation where there is one)
    if (this.backend.stamp?.(ns, key) === stamp && (gen === undefined || this.backend.generation?.() === gen))
      this.#remember(id, { stamp: value === undefined ? 'absent' : stamp, value, gen, at: now });
    else this.#fresh.delete(id);
    return value;
  }

  #remember(id: string, e: FreshEntry): void {
    this.#fresh.delete(id);
    if (this.#fresh.size >= FRESH_MAX) this.#fresh.delete(this.#fresh.keys().next().value as string);
    this.#fresh.set(id, e);
  }

  async putJson(ns: string, key: string, value: unknown): Promise<void> {
    this.#fresh.delete(`${ns}/${key}`);
    try {
      await this.backend.put(ns, key, enc.encode(JSON.stringify(value)));
    } finally {
      this.#fresh.delete(`${ns}/${key}`);
    }
  }

  /** Delete a record (absent is not an error); a copy kept in memory by getJsonFresh is dropped. */
  async deleteKey(ns: string, key: string): Promise<void> {
    this.#fresh.delete(`${ns}/${key}`);
    try {
      await this.backend.delete(ns, key);
    } finally {
      this.#fresh.delete(`${ns}/${key}`);
    }
  }

  /** Read-modify-write under the lock `ns/key`. Returning undefined deletes the record. */
  async update<T>(
    ns: string,
    key: string,
    fn: (old: T | undefined) => T | undefined | Promise<T | undefined>,
  ): Promise<T | undefined> {
    return this.backend.withLock(`${ns}.${key}`, async () => {
      const next = await fn(await this.getJson<T>(ns, key));
      if (next === undefined) await this.deleteKey(ns, key);
      else await this.putJson(ns, key, next);
      return next;
    });
  }

  async appendJsonl(log: string, entry: unknown): Promise<void> {
    await this.backend.append(log, JSON.stringify(entry));
  }

  /**
   * appendJsonl in two steps (StoreBackend.appendStaged): written first, `durable` later; one step where the backend
   * has no stages.
   */
  async appendJsonlStaged(log: string, entry: unknown): Promise<{ durable: Promise<void> }> {
    const line = JSON.stringify(entry);
    if (this.backend.appendStaged) return this.backend.appendStaged(log, line);
    await this.backend.append(log, line);
    return { durable: Promise.resolve() };
  }

  /** Resolves once every line appended to `log` before now (staged ones included) is on disk (StoreBackend.syncLog). */
  async syncLog(log: string): Promise<void> {
    if (this.backend.syncLog) await this.backend.syncLog(log);
  }

  /** Parsed log lines; a torn or corrupt line is skipped and counted, never fatal. */
  async readJsonl<T>(log: string): Promise<{ entries: T[]; corrupt: number }> {
    const entries: T[] = [];
    let corrupt = 0;
    for (const line of await this.backend.readLog(log)) {
      if (!line) continue;
      try {
        entries.push(JSON.parse(line) as T);
      } catch {
        corrupt++;
      }
    }
    return { entries, corrupt };
  }
}
