// Types of browser/build/quickjs.mjs (the quickjs engine's build-time pieces); build time, trusted side.
import type { Plugin } from 'vite';
/** Where the browser host fetches the QuickJS binary from, relative to its assetBaseUrl. */
export declare const QUICKJS_WASM_ASSET: string;
/** The virtual module whose default export is the QuickJS worker's classic script. */
export declare const QUICKJS_WORKER_ID: string;
/** The installed QuickJS binary's path. */
export declare function quickJsWasmFile(): string;
/** The guest script QuickJS sandboxes evaluate (core/guest/ files assembled, whitespace removed). */
export declare function minifiedGuestScript(texts?: Record<string, string>): Promise<string>;
/** The browser's QuickJS worker as one classic script. */
export declare function quickJsWorkerSource(): Promise<string>;
/** Vite plugin: the worker script as a virtual module, and the QuickJS binary as an asset at build. */
export declare function quickJsPlugin(): Plugin;
