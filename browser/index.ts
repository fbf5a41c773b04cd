// Public API of `tysandbox/browser` (package export "./browser"): the browser host (sandbox runtime, IndexedDB store,
// asking, host popups, Pyodide assets, MCP servers, the registration protocol over postMessage); browser host, trusted
// side.
//
// This file is the complete public surface of the entry: named exports only, no wildcards. Each member is used outside
// browser/ (by the chat app, a test, a docs example or the Node host), or is a type a listed member takes or returns.
// Anything added here becomes public API; the frame plumbing (openSandboxFrame, isTrustedHello, sandboxCsp ...) stays
// internal.
import './zod-jitless.js';

// The host: one call creates it, with its events
export {
  createBrowserHost,
  BROWSER_MAX_INSTANCES,
  DEFAULT_BROWSER_PAUSE_EXPIRE_MS,
  type BrowserHost,
  type BrowserHostOptions,
} from './host.js';
export type { HostEventMap, HostEventName, HostEventListener } from './events.js';

// Its parts, for a host assembled by hand
export { BrowserSandboxRuntime, type BrowserSandboxOptions } from './sandbox/runtime.js';
export { IdbStoreBackend, type IdbStoreOptions } from './store.js';
export { BrowserFetchTransport } from './fetch.js';
export { browserHint } from './hints.js';

// Asking a person: the host's dialog, or the app's own rendering of each question
export { DialogAskChannel, type DialogAskOptions } from './ask/dialog.js';
export { ApprovalChannel, type ApprovalChannelOptions, type ApprovalChoice, type ApprovalQuestion } from './ask/app.js';

// Host popups (a capability a tool asks for)
export { openHostPopup, POPUP_CONTENT_CSP, type HostPopup, type PopupRequest } from './popup.js';

// Python: the Pyodide assets the build pins
export { PYODIDE_MANIFEST } from './python/pyodide-manifest.js';
export type { PyodideAssets, PyodideManifest, PythonProgress } from './python/assets.js';

// MCP servers reached from the page
export {
  BrowserMcp,
  MCP_SERVER_NAME_RE,
  type BrowserMcpServer,
  type McpServerInfo,
  type McpOfferedTool,
  type McpHeaderValue,
  type McpConnectionState,
} from './mcp/servers.js';

// The registration protocol served to an embedding page over postMessage
export { serveProtocolWindow, type WindowServer, type WindowServerOptions } from './registration/window.js';
