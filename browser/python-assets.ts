// Fetches the Pyodide files from the app's own build and checks each against its compiled-in sha-256 digest; browser host, trusted side.
import { TyError } from '../core/errors.js';

/** `{ version, base, files: { [name]: { sha256 (hex), bytes } } }`, produced at build time. */
export interface PyodideManifest {
  version: string;
  /** URL path (or absolute URL) of the folder holding the files, e.g. `/pyodide/`. */
  base: string;
  files: Record<string, { sha256: string; bytes: number }>;
}
/** Verified file contents by name. */
export type PyodideAssets = Record<string, ArrayBuffer>;

async function sha256Hex(bytes: ArrayBuffer): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(d, (x) => x.toString(16).padStart(2, '0')).join('');
}

const cache = new Map<string, Promise<PyodideAssets>>();

/**
 * Fetch every file of `manifest` (same origin, no credentials) and verify size and sha-256 before any byte
 * is used. Cached per page and manifest; a failure is not cached.
 * @param fetchFn the page's fetch (injectable for tests).
 * @throws TyError E_INTEGRITY (digest or size mismatch), E_SANDBOX_UNAVAILABLE (a file could not be fetched).
 */
export function loadPyodideAssets(manifest: PyodideManifest, fetchFn: typeof fetch = fetch.bind(globalThis)): Promise<PyodideAssets> {
  const key = JSON.stringify(manifest);
  let p = cache.get(key);
  if (!p) {
    p = (async () => {
      const out: PyodideAssets = {};
      await Promise.all(
        Object.entries(manifest.files).map(async ([name, want]) => {
          if (!/^[A-Za-z0-9._-]{1,100}$/.test(name)) throw new TyError('E_INTEGRITY', `bad Pyodide file name in the manifest`);
          let res: Response;
          try {
            res = await fetchFn(new URL(name, new URL(manifest.base, location.href)).href, { credentials: 'omit', redirect: 'error' });
          } catch {
            throw new TyError('E_SANDBOX_UNAVAILABLE', `could not fetch the Python runtime file ${name}`);
          }
          if (!res.ok) throw new TyError('E_SANDBOX_UNAVAILABLE', `could not fetch the Python runtime file ${name} (HTTP ${res.status})`);
          const bytes = await res.arrayBuffer();
          const got = await sha256Hex(bytes);
          if (bytes.byteLength !== want.bytes || got !== want.sha256) {
            throw new TyError('E_INTEGRITY', `Python runtime file ${name} does not match the digest built into the app (sha-256 ${got.slice(0, 16)}…, expected ${want.sha256.slice(0, 16)}…); refusing to run it`);
          }
          out[name] = bytes;
        }),
      );
      return out;
    })();
    cache.set(key, p);
    p.catch(() => cache.delete(key));
  }
  return p;
}
