// Types of node/quickjs/build.mjs (the build step bundling the QuickJS sandbox host); build time, trusted side.
/** Where the bundle goes, relative to the package root. */
export declare const SANDBOX_HOST_BUNDLE: string;
/** The guest script as QuickJS sandboxes evaluate it (core/guest/ files concatenated, whitespace removed). */
export declare function minifiedGuestScript(texts?: Record<string, string>): Promise<string>;
/** Bundle the sandbox host into `outFile` (default SANDBOX_HOST_BUNDLE); resolves to the path written. */
export declare function buildSandboxHost(outFile?: string): Promise<string>;
