// Type declarations for build-time imports of the browser host (vite `?raw` text imports); browser host, trusted side.
declare module '*?raw' {
  const text: string;
  export default text;
}
declare module 'virtual:tysandbox/pyodide-manifest' {
  const manifest: { version: string; base: string; files: Record<string, { sha256: string; bytes: number }> };
  export default manifest;
}
declare module '*.css';
declare module 'virtual:tysandbox/quickjs-worker' {
  /** The QuickJS sandbox worker's classic script (browser/build/quickjs.mjs quickJsWorkerSource). */
  const source: string;
  export default source;
}
