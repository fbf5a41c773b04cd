// The Pyodide asset manifest (sha-256 digests compiled into the bundle by browser/build/config.mjs); browser host,
// trusted side.
import manifest from 'virtual:tysandbox/pyodide-manifest';
import type { PyodideManifest } from './assets.js';

/** Digests and location of the Pyodide files this build serves (vite build only). */
export const PYODIDE_MANIFEST: PyodideManifest = manifest;
