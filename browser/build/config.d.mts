// Types of browser/build/config.mjs; build time, trusted side.
import type { BuildEnvironmentOptions, Plugin } from 'vite';
export declare const BROWSER_OUT_DIR: string;
export declare const PYODIDE_FILES: string[];
export declare const PYODIDE_MANIFEST_FILE: string;
export declare function hashPyodidePackage(): Promise<{
  version: string;
  files: Record<string, { sha256: string; bytes: number }>;
}>;
export declare const PYODIDE_MANIFEST_ID: string;
export declare function pyodideAssetsPlugin(): Plugin;
/** The `zod` the project's own modules import, narrowed to the members they name (build only). */
export declare function zodUsedOnly(): Plugin;
export declare function browserBuildOptions(outDir?: string): BuildEnvironmentOptions;
