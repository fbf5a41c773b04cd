// Public surface of the security-contract diagnostics (contracts, the CLI contract host, escape probes); Node host,
// trusted side.
export {
  CONTRACTS,
  selectContracts,
  runContracts,
  ProbeFixture,
  type Contract,
  type ContractResult,
  type ContractRun,
} from './contracts.js';
export {
  CliContractHost,
  withoutEnginePermissions,
  type ContractHost,
  type RunToolOptions,
  type RunToolResult,
  type Engine,
  type Layers,
} from './cli-host.js';
export {
  PROBES,
  PROBE_TOOL_SOURCE,
  processesWithMarker,
  waitNoMarker,
  killMarker,
  type ProbeName,
  type ProbeArgs,
  type Observation,
  type Observations,
} from './probes.js';
export {
  runBrowserHostContracts,
  BROWSER_GROUPS,
  browserGroupOf,
  browserSelected,
  findRepoRoot,
  type HostContractRow,
  type BrowserRunOptions,
} from './browser.js';
