// Types of browser/build/vite-plugin.mjs; build time, trusted side.
import type { Plugin } from 'vite';
/** Serves (dev) and emits (build) sandbox-frame.html, sandbox-frame.js and pyodide/* under `<base><dir>`. */
export declare function tysandboxAssets(opts?: {
  dir?: string;
  python?: boolean;
  quickjs?: boolean;
  from?: string;
}): Plugin;
