// The complete public surface of the Node host (package export "./node"): every export by name, nothing else is
// public; the command line (node/cli/) is not part of it. Node host, trusted side.

// The host: store, registry, gate, pool and invoker assembled (node/host/).
export { createNodeHost, type NodeHost } from './host/host.js';
export type { HostFlags, HostIO, NodeHostOptions } from './host/options.js';
export { HostToolRegistry, type ListedTool } from './host/builtin-tools.js';

// The file store in the per-user data folder (node/store/).
export { FileStoreBackend, type FileStoreOptions } from './store/file-store.js';
export { resolveHome, tycliPaths, ensurePrivateDir, type TycliPaths } from './store/paths.js';

// Sandbox processes (Node, Deno) and their OS isolation: probe, bubblewrap, Seatbelt, posture, limits.
export { NodeSandboxRuntime, type NodeSandboxRuntimeOptions, type SpawnWrapper } from './sandbox/runtime.js';
export {
  probeSandbox,
  probeUncached,
  setProbeOverrideForTests,
  type SandboxProbe,
  type BackendName,
  type ProbeSystem,
  bwrapArgv,
  createBwrapWrapper,
  canonical,
  SANDBOX_DENO_DIR,
  type BwrapOptions,
  type SpawnRequest,
  type WrappedSpawn,
  type SpawnWrapperFn,
  seatbeltArgv,
  seatbeltProfile,
  createSeatbeltWrapper,
  type SeatbeltOptions,
  POSTURES,
  POSTURE_SETTINGS_KEY,
  parsePosture,
  resolvePosture,
  planIsolation,
  fallbackWarning,
  warnOnce,
  OFF_NOTICE,
  UNENFORCED_WITHOUT_BACKEND,
  type Posture,
  type IsolationPlan,
  type PlanOptions,
  type RuntimeKind,
  osLimitsFor,
  prlimitPrefix,
  ulimitPrefix,
  DEFAULT_NPROC,
  type OsLimits,
} from './os-sandbox/index.js';

// The built-in native `python` tool (trusted-native, asked about once per session).
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

// The registration protocol's server over stdio and loopback HTTP, and the loopback guard.
export { protocolServerFor, serveProtocolStream, cliPrincipal } from './registration/stdio.js';
export {
  serveProtocolHttp,
  SESSION_HEADER,
  type ProtocolHttpOptions,
  type ProtocolHttpHandle,
} from './registration/http.js';
export { checkLoopbackRequest, newBearerToken } from './http/guard.js';

// The security-contract diagnostics: the contracts, the contract hosts, the escape probes.
export {
  CONTRACTS,
  selectContracts,
  runContracts,
  ProbeFixture,
  type Contract,
  type ContractResult,
  type ContractRun,
  CliContractHost,
  withoutEnginePermissions,
  type ContractHost,
  type RunToolOptions,
  type RunToolResult,
  type Engine,
  type Layers,
  PROBES,
  PROBE_TOOL_SOURCE,
  processesWithMarker,
  waitNoMarker,
  killMarker,
  type ProbeName,
  type ProbeArgs,
  type Observation,
  type Observations,
  runBrowserHostContracts,
  BROWSER_GROUPS,
  browserGroupOf,
  browserSelected,
  findRepoRoot,
  type HostContractRow,
  type BrowserRunOptions,
} from './diagnostics/index.js';
