// Public surface of the browser host (sandbox runtime, IndexedDB store, dialog asking, host popups, Pyodide assets);
// browser host, trusted side.
import './zod-jitless.js';
export {
  BrowserSandboxRuntime,
  isTrustedHello,
  openSandboxFrame,
  sandboxCsp,
  defaultAssetBase,
  FRAME_HTML,
  FRAME_SCRIPT,
  type BrowserSandboxOptions,
  type SandboxFrame,
} from './sandbox/runtime.js';
export { IdbStoreBackend, StoreSecretValues, type IdbStoreOptions } from './store.js';
export {
  BrowserMcp,
  MCP_SERVER_NAME_RE,
  type BrowserMcpServer,
  type McpServerInfo,
  type McpOfferedTool,
  type McpHeaderValue,
  type McpConnectionState,
} from './mcp/servers.js';
export { DialogAskChannel, type DialogAskOptions } from './ask/dialog.js';
export { ApprovalChannel, type ApprovalChannelOptions, type ApprovalChoice, type ApprovalQuestion } from './ask/app.js';
export { plainQuestion, SHORT_REVISION_CHARS, type PlainQuestion } from './ask/text.js';
export { openHostPopup, POPUP_CONTENT_CSP, type HostPopup, type PopupRequest } from './popup.js';
export { loadPyodideAssets, type PyodideAssets, type PyodideManifest, type PythonProgress } from './python/assets.js';
export { PYODIDE_MANIFEST } from './python/pyodide-manifest.js';
export { createBrowserHost, type BrowserHost, type BrowserHostOptions } from './host.js';
export { BrowserFetchTransport } from './fetch.js';
export {
  serveProtocolWindow,
  windowPrincipal,
  type WindowServer,
  type WindowServerOptions,
} from './registration/window.js';
export { HostEvents, type HostEventMap, type HostEventName, type HostEventListener } from './events.js';
export { browserHint, withBrowserHint } from './hints.js';
export { DEFAULT_BROWSER_PAUSE_EXPIRE_MS } from './host.js';
