// Fetches the Pyodide files from the app's own build and checks each against its compiled-in sha-256 digest, once per
// page; browser host, trusted side.
import { TyError } from '../../core/errors.js';
import { checkPureWheel } from '../../core/manifest/wheel.js';

/** `{ version, base, files: { [name]: { sha256 (hex), bytes } } }`, produced at build time. */
export interface PyodideManifest {
  version: string;
  /** URL path (or absolute URL) of the folder holding the files, e.g. `/pyodide/`. */
  base: string;
  files: Record<string, { sha256: string; bytes: number }>;
}
/** Verified file contents by name. */
export type PyodideAssets = Record<string, ArrayBuffer>;

/**
 * Python load progress. `fetch`: bytes arriving (`loaded` of `total` bytes over every file); `verify`: digests
 * being checked; `ready`: every file verified (also reported at once when the files were verified earlier in this
 * page, `cached: true`); `start`: a sandbox is starting Pyodide from the verified files.
 */
export interface PythonProgress {
  phase: 'fetch' | 'verify' | 'ready' | 'start';
  /** Bytes received so far over every file. */
  loaded: number;
  /** Bytes of every file together (from the manifest). */
  total: number;
  cached?: boolean;
}

async function sha256Hex(bytes: ArrayBuffer): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(d, (x) => x.toString(16).padStart(2, '0')).join('');
}

const cache = new Map<string, Promise<PyodideAssets>>();
const verified = new Set<string>();

async function readAll(res: Response, onBytes: (n: number) => void): Promise<ArrayBuffer> {
  if (!res.body) return res.arrayBuffer();
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.length;
    onBytes(value.length);
  }
  const out = new Uint8Array(size);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out.buffer;
}

/**
 * Fetch every file of `manifest` (no credentials, no redirects) and verify size and sha-256 before any byte is
 * used. Verified once per page and manifest, then served from memory (every sandbox gets copies; one Pyodide per
 * sandbox stays); a failure is not cached.
 * @param fetchFn the page's fetch (injectable for tests).
 * @param onProgress receives PythonProgress events (fetch bytes, verify, ready).
 * @throws TyError E_INTEGRITY (digest or size mismatch), E_SANDBOX_UNAVAILABLE (a file could not be fetched).
 */
export function loadPyodideAssets(
  manifest: PyodideManifest,
  fetchFn: typeof fetch = fetch.bind(globalThis),
  onProgress?: (p: PythonProgress) => void,
): Promise<PyodideAssets> {
  const key = JSON.stringify(manifest);
  const total = Object.values(manifest.files).reduce((n, f) => n + f.bytes, 0);
  const report = (p: PythonProgress) => {
    try {
      onProgress?.(p);
    } catch {
      /* a listener's failure is its own */
    }
  };
  let p = cache.get(key);
  if (p) {
    if (verified.has(key)) report({ phase: 'ready', loaded: total, total, cached: true });
    return p;
  }
  p = (async () => {
    const out: PyodideAssets = {};
    let loaded = 0;
    report({ phase: 'fetch', loaded, total });
    await Promise.all(
      Object.entries(manifest.files).map(async ([name, want]) => {
        if (!/^[A-Za-z0-9._-]{1,100}$/.test(name))
          throw new TyError('E_INTEGRITY', `bad Pyodide file name in the manifest`);
        let res: Response;
        try {
          res = await fetchFn(new URL(name, new URL(manifest.base, location.href)).href, {
            credentials: 'omit',
            redirect: 'error',
          });
        } catch {
          throw new TyError(
            'E_SANDBOX_UNAVAILABLE',
            `could not fetch the Python runtime file ${name} from ${manifest.base.slice(0, 200)} (is pyodideBaseUrl right?)`,
          );
        }
        if (!res.ok)
          throw new TyError(
            'E_SANDBOX_UNAVAILABLE',
            `could not fetch the Python runtime file ${name} from ${manifest.base.slice(0, 200)} (HTTP ${res.status}; is pyodideBaseUrl right?)`,
          );
        const bytes = await readAll(res, (n) => {
          loaded += n;
          report({ phase: 'fetch', loaded, total });
        });
        report({ phase: 'verify', loaded, total });
        const got = await sha256Hex(bytes);
        if (bytes.byteLength !== want.bytes || got !== want.sha256) {
          throw new TyError(
            'E_INTEGRITY',
            `Python runtime file ${name} does not match the digest built into the app (sha-256 ${got.slice(0, 16)}…, expected ${want.sha256.slice(0, 16)}…); refusing to run it`,
          );
        }
        out[name] = bytes;
      }),
    );
    verified.add(key);
    report({ phase: 'ready', loaded: total, total });
    return out;
  })();
  cache.set(key, p);
  p.catch(() => cache.delete(key));
  return p;
}

/**
 * Fetch a Python revision's declared wheels from the app's asset folder `base` (no credentials, no redirects) and
 * check each against its sha-256 before the worker gets a byte. Not cached: every sandbox start checks again.
 * Then its contents: pure Python only, no entry outside the install folder (core/manifest/wheel.ts checkPureWheel).
 * @throws TyError E_SANDBOX_UNAVAILABLE (a wheel could not be fetched), E_INTEGRITY (a digest differs),
 *   E_INVALID_MANIFEST (native code, an entry leaving the install folder, not a zip archive).
 */
export async function loadPythonPackages(
  base: string,
  packages: readonly { file: string; sha256: string }[],
  fetchFn: typeof fetch = fetch.bind(globalThis),
): Promise<{ file: string; bytes: ArrayBuffer }[]> {
  return Promise.all(
    packages.map(async ({ file, sha256 }) => {
      let res: Response;
      try {
        res = await fetchFn(new URL(file, new URL(base, location.href)).href, {
          credentials: 'omit',
          redirect: 'error',
        });
      } catch {
        throw new TyError('E_SANDBOX_UNAVAILABLE', `could not fetch the Python wheel ${file}`);
      }
      if (!res.ok)
        throw new TyError(
          'E_SANDBOX_UNAVAILABLE',
          `could not fetch the Python wheel ${file} (HTTP ${res.status}); put it in the app's python-packages/ folder`,
        );
      const bytes = await res.arrayBuffer();
      const got = await sha256Hex(bytes);
      if (got !== sha256)
        throw new TyError(
          'E_INTEGRITY',
          `the Python wheel ${file} does not match its sha256 in the manifest (got ${got.slice(0, 16)}…); refusing to load it`,
        );
      // pure Python only, checked on the host before the worker gets a byte (the worker checks again as it installs)
      checkPureWheel(file, new Uint8Array(bytes));
      return { file, bytes };
    }),
  );
}
