// Public surface of the Node host (package export "./node"); Node host, trusted side.
export { createNodeHost, type NodeHost } from './host/host.js';
export type { HostFlags, HostIO, NodeHostOptions } from './host/options.js';
export { FileStoreBackend, type FileStoreOptions } from './store/file-store.js';
export { resolveHome, tycliPaths, ensurePrivateDir, type TycliPaths } from './store/paths.js';
export { NodeSandboxRuntime, type NodeSandboxRuntimeOptions, type SpawnWrapper } from './sandbox/runtime.js';
export { main as tycliMain } from './cli/main.js';
export type { CliCommand, CliContext, CliIO, GlobalOptions } from './cli/types.js';
export * from './os-sandbox/index.js';
export * from './diagnostics/index.js';
export { HostToolRegistry, type ListedTool } from './host/builtin-tools.js';
export {
  PythonTool,
  detectPython,
  pythonToolManifest,
  pythonApprovalQuestion,
  pythonForSandbox,
  pythonReachableBy,
  registerPythonTool,
  PYTHON_NATIVE_ENTRY,
  type PythonInfo,
  type PythonToolOptions,
  type PythonResult,
} from './python/native-tool.js';
export { protocolServerFor, serveProtocolStream, cliPrincipal } from './registration/stdio.js';
export {
  serveProtocolHttp,
  SESSION_HEADER,
  type ProtocolHttpOptions,
  type ProtocolHttpHandle,
} from './registration/http.js';
export { checkLoopbackRequest, newBearerToken } from './http/guard.js';
