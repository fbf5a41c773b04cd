// Types of node/diagnostics/browser-driver.mjs; test code, trusted side.
export interface ContractRow {
  name: string;
  host: 'browser';
  ok: boolean;
  detail: string;
}
export declare const REPO_ROOT: string;
export declare const CHROMIUM_PATH: string;
export declare const CHROMIUM_ARGS: string[];
export declare function buildBrowserApp(opts?: { outDir?: string }): Promise<string>;
export declare function serveDir(
  dir: string,
  opts?: {
    headers?: (path: string) => Record<string, string>;
    files?: Record<string, { type: string; body: string | Buffer }>;
  },
): Promise<{ origin: string; beacons: string[]; requests: string[]; close(): Promise<void> }>;
export declare function launchChromium(): Promise<import('playwright-core').Browser>;
export declare function openDiagnostics(
  browser: import('playwright-core').Browser,
  origin: string,
  frame?: 'network' | 'srcdoc',
): Promise<{ page: import('playwright-core').Page; consoleLines: string[] }>;
export declare function runBrowserContracts(opts?: {
  filter?: string;
  build?: boolean;
  outDir?: string;
  frame?: 'network' | 'srcdoc';
}): Promise<ContractRow[]>;
export declare function srcdocBootstrapHash(): string;
export declare function srcdocPageCsp(): string;
