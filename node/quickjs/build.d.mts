// Types of node/quickjs/build.mjs (the build step bundling the QuickJS sandbox host); build time, trusted side.
/** Where the bundle goes, relative to the package root. */
export declare const SANDBOX_HOST_BUNDLE: string;
/** Bundle the sandbox host into `outFile` (default SANDBOX_HOST_BUNDLE); resolves to the path written. */
export declare function buildSandboxHost(outFile?: string): Promise<string>;
