// Public surface of the command-line OS isolation (probe, bubblewrap, Seatbelt, posture, limits); Node host, trusted
// side.
export {
  probeSandbox,
  probeUncached,
  setProbeOverrideForTests,
  type SandboxProbe,
  type BackendName,
  type ProbeSystem,
} from './probe.js';
export {
  bwrapArgv,
  createBwrapWrapper,
  canonical,
  SANDBOX_DENO_DIR,
  type BwrapOptions,
  type SpawnRequest,
  type WrappedSpawn,
  type SpawnWrapperFn,
} from './bwrap.js';
export { seatbeltArgv, seatbeltProfile, createSeatbeltWrapper, type SeatbeltOptions } from './seatbelt.js';
export {
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
} from './posture.js';
export { osLimitsFor, prlimitPrefix, ulimitPrefix, DEFAULT_NPROC, type OsLimits } from './limits.js';
export {
  BWRAP_ADVISORIES,
  bwrapAdvisories,
  isSetuidRoot,
  parseBwrapVersion,
  type BwrapAdvisory,
  type BwrapAdvisoryReport,
} from './advisories.js';
export { othersCanWrite, planMounts, setupPathViolations, type MountEntry } from './mount-plan.js';
