// Where the app keeps its data when another site frames it: IndexedDB as the browser allows it there (unpartitioned
// after the Storage Access API granted it, partitioned, or, where the browser refuses it, in memory); browser app,
// trusted side.
//
// Storage Access API (https://privacycg.github.io/storage-access/, and "beyond cookies" for IndexedDB:
// `document.requestStorageAccess({ indexedDB: true })` returns a handle whose `indexedDB` is the unpartitioned one).
// The app opens every database through the global `indexedDB` (idb), so the chosen factory is installed there once,
// before anything opens a database.

/** How the app stores its data in this page. */
export interface AppStorage {
  /**
   * `first-party`: the app's own site (top level or a same-site frame); `unpartitioned`: a cross-site frame the person
   * let keep the app's own data; `partitioned`: a cross-site frame, with data kept for that embedding site only;
   * `memory`: the browser refuses storage here, nothing outlives the page.
   */
  mode: 'first-party' | 'unpartitioned' | 'partitioned' | 'memory';
  /** True when the Storage Access API can be asked (a button may offer it). */
  canRequest: boolean;
  /** Why the browser refused storage (`memory`), as it said. */
  refused?: string;
}

type Doc = Document & {
  hasStorageAccess?: () => Promise<boolean>;
  requestStorageAccess?: (types?: { indexedDB?: boolean }) => Promise<{ indexedDB?: IDBFactory } | undefined>;
};

/** undefined when `factory` opens a database, else the browser's reason (a refusal, or no answer in 3 s). */
export function idbRefusal(factory: IDBFactory): Promise<string | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('no answer from IndexedDB'), 3000);
    try {
      const r = factory.open('tysandbox-storage-probe');
      r.onsuccess = () => {
        clearTimeout(timer);
        r.result.close();
        resolve(undefined);
      };
      r.onerror = () => {
        clearTimeout(timer);
        resolve(r.error?.message ?? 'refused');
      };
    } catch (e) {
      clearTimeout(timer);
      resolve(e instanceof Error ? e.message : String(e));
    }
  });
}

function useFactory(factory: IDBFactory): void {
  Object.defineProperty(globalThis, 'indexedDB', { value: factory, configurable: true, writable: true });
}

async function permissionGranted(): Promise<boolean> {
  try {
    const p = await navigator.permissions.query({ name: 'storage-access' as PermissionName });
    return p.state === 'granted';
  } catch {
    return false;
  }
}

/** A Storage (Web Storage API) kept in memory for this page only: the stand-in where the browser refuses its own. */
class MemoryStorage implements Storage {
  readonly #items = new Map<string, string>();
  get length(): number {
    return this.#items.size;
  }
  key(index: number): string | null {
    return [...this.#items.keys()][index] ?? null;
  }
  getItem(key: string): string | null {
    return this.#items.get(String(key)) ?? null;
  }
  setItem(key: string, value: string): void {
    this.#items.set(String(key), String(value));
  }
  removeItem(key: string): void {
    this.#items.delete(String(key));
  }
  clear(): void {
    this.#items.clear();
  }
}

/**
 * Web Storage the browser refuses here (Chromium with third-party cookies blocked throws a SecurityError on the first
 * touch of `sessionStorage` in a cross-site frame): replaced by one in memory, so the app's per-tab notes still work
 * for as long as the page lives. Storage the browser allows is left alone.
 */
function ensureWebStorage(): void {
  for (const name of ['sessionStorage', 'localStorage'] as const) {
    try {
      void globalThis[name].length;
    } catch {
      Object.defineProperty(globalThis, name, { value: new MemoryStorage(), configurable: true });
    }
  }
}

/**
 * Decide where the app keeps its data, before it opens any database. Not framed, or framed by its own site:
 * `first-party`. In a cross-site frame: a storage-access permission the person granted before is used without a click
 * (`unpartitioned`); else the IndexedDB the browser gives this frame (`partitioned`); else an in-memory IndexedDB
 * (fake-indexeddb, loaded only then: `memory`).
 */
export async function prepareAppStorage(): Promise<AppStorage> {
  const doc = document as Doc;
  const canRequest = typeof doc.requestStorageAccess === 'function';
  if (window.parent === window || typeof doc.hasStorageAccess !== 'function')
    return { mode: 'first-party', canRequest: false };
  ensureWebStorage();
  const has = await doc.hasStorageAccess().catch(() => false);
  if (has) return { mode: 'first-party', canRequest: false };
  if (canRequest && (await permissionGranted())) {
    const handle = await doc.requestStorageAccess!({ indexedDB: true }).catch(() => undefined);
    if (handle?.indexedDB && (await idbRefusal(handle.indexedDB)) === undefined) {
      useFactory(handle.indexedDB);
      return { mode: 'unpartitioned', canRequest: false };
    }
  }
  const refused = await idbRefusal(indexedDB);
  if (refused === undefined) return { mode: 'partitioned', canRequest };
  await import('fake-indexeddb/auto');
  // Web Locks are storage too and refused with it ("The request was denied."): this page's data is its own, so the
  // store's in-page lock queue is enough
  Object.defineProperty(navigator, 'locks', { value: undefined, configurable: true });
  return { mode: 'memory', canRequest, refused };
}

/**
 * The button's action (it needs the click's user activation): ask for storage access with IndexedDB; when the browser
 * grants it and the database opens, reload so the app starts on the kept data.
 * @returns undefined when granted (the page reloads), else what the browser said
 */
export async function requestAppStorage(): Promise<string | undefined> {
  const doc = document as Doc;
  try {
    const handle = await doc.requestStorageAccess!({ indexedDB: true });
    const refused = handle?.indexedDB ? await idbRefusal(handle.indexedDB) : 'no IndexedDB came with the access';
    if (refused !== undefined) return `access was granted but its database refused: ${refused}`;
    location.reload();
    return undefined;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}
