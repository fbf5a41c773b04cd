// OS sandbox availability probe: bubblewrap with working user namespaces (Linux), sandbox-exec (macOS); Node host,
// trusted side.
import { execFile } from 'node:child_process';
import { accessSync, constants as fsConstants } from 'node:fs';
import { bwrapArgv, type BwrapOptions } from './bwrap.js';
import { osLimitsFor } from './limits.js';
import { defaultUidPool, type UidPool } from './uid-pool.js';

export type BackendName = 'bwrap' | 'seatbelt' | 'none';

/** What the probe found. `available` is true only after a real sandboxed process ran and exited 0. */
export interface SandboxProbe {
  platform: string;
  backend: BackendName;
  available: boolean;
  /** Absolute path of the backend binary, when found. */
  path?: string;
  /** Backend version text (`bubblewrap 0.8.0`), when known. */
  version?: string;
  /** Why the backend is not available, in plain words. */
  reason?: string;
  /** Linux: absolute path of prlimit(1), used for process-count, CPU, data and file-size limits. */
  prlimit?: string;
  /**
   * Linux, CLI running as root: the sandbox drops to an unprivileged host uid/gid with setpriv(1) first (RLIMIT_NPROC
   * ignores uid 0): each sandbox its own uid leased from `pool` (uid-pool.ts reserved range); `uid`/`gid` (nobody)
   * when there is no pool, and as the representative "other" uid for reachability checks.
   */
  dropTo?: { setprivPath: string; uid: number; gid: number; pool?: UidPool };
}

/** Fixed install locations, most trusted first; PATH is not searched. */
export const BWRAP_CANDIDATES = ['/usr/bin/bwrap', '/bin/bwrap', '/usr/local/bin/bwrap'];
export const PRLIMIT_CANDIDATES = ['/usr/bin/prlimit', '/bin/prlimit'];
export const SETPRIV_CANDIDATES = ['/usr/bin/setpriv', '/bin/setpriv'];
export const TRUE_CANDIDATES = ['/usr/bin/true', '/bin/true'];
export const SANDBOX_EXEC = '/usr/bin/sandbox-exec';
/** The unprivileged uid/gid a root CLI runs sandboxes as (`nobody` on Debian, Fedora, Arch, Alpine). */
export const NOBODY = 65534;
/** Timeout of each probe step, ms. */
export const PROBE_TIMEOUT_MS = 5000;

/** Injectable system access, so the platform branches can be unit-tested anywhere. */
export interface ProbeSystem {
  platform: string;
  /** Effective uid (`process.geteuid()`), undefined where there is none. */
  euid: number | undefined;
  isExecutable(path: string): boolean;
  run(
    command: string,
    args: string[],
    timeoutMs: number,
  ): Promise<{ code: number | null; stdout: string; stderr: string }>;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Run with an empty environment, no shell, SIGKILL on timeout. */
function run(
  command: string,
  args: string[],
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { env: {}, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 * 1024, windowsHide: true },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === 'number'
            ? (err as { code: number }).code
            : null
          : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}

export const realSystem: ProbeSystem = {
  platform: process.platform,
  euid: typeof process.geteuid === 'function' ? process.geteuid() : undefined,
  isExecutable,
  run,
};

/** The first executable of `candidates` (fixed paths, most trusted first). */
export function first(candidates: string[], sys: ProbeSystem): string | undefined {
  return candidates.find((p) => sys.isExecutable(p));
}

function firstLine(s: string): string {
  return (
    s
      .split('\n')
      .find((l) => l.trim() !== '')
      ?.trim()
      .slice(0, 200) ?? ''
  );
}

/**
 * Probe without cache. Linux: bwrap at a fixed path, `bwrap --version`, then a real sandbox (the same
 * namespaces, binds, uid drop and prlimit the runtime uses) running `true`. macOS: sandbox-exec running
 * `true` under a `(deny default)` profile. Each step has a 5 s timeout. Never throws.
 */
export async function probeUncached(sys: ProbeSystem = realSystem): Promise<SandboxProbe> {
  if (sys.platform === 'linux') return probeLinux(sys);
  if (sys.platform === 'darwin') return probeDarwin(sys);
  return {
    platform: sys.platform,
    backend: 'none',
    available: false,
    reason: `no OS sandbox backend exists for platform ${sys.platform}`,
  };
}

/**
 * Linux probe. `verified` (node/os-sandbox/probe-cache.ts): the version text of an earlier full probe of these very
 * binaries on this kernel and uid that passed; the binaries are looked up again as always, the two runs are skipped.
 */
export async function probeLinux(sys: ProbeSystem, verified?: { version: string }): Promise<SandboxProbe> {
  const base: SandboxProbe = { platform: 'linux', backend: 'bwrap', available: false };
  const path = first(BWRAP_CANDIDATES, sys);
  if (!path) return { ...base, reason: 'bubblewrap (bwrap) is not installed (e.g. apt-get install bubblewrap)' };
  base.path = path;
  if (verified) base.version = verified.version;
  else {
    const v = await sys.run(path, ['--version'], PROBE_TIMEOUT_MS);
    if (v.code !== 0)
      return { ...base, reason: `\`bwrap --version\` failed: ${firstLine(v.stderr) || `exit ${v.code ?? 'timeout'}`}` };
    base.version = firstLine(v.stdout);
  }
  const prlimit = first(PRLIMIT_CANDIDATES, sys);
  if (prlimit) base.prlimit = prlimit;
  if (sys.euid === 0) {
    const setpriv = first(SETPRIV_CANDIDATES, sys);
    if (!setpriv)
      return {
        ...base,
        reason: 'running as root and setpriv(1) is missing: the sandbox cannot drop to an unprivileged uid',
      };
    base.dropTo = { setprivPath: setpriv, uid: NOBODY, gid: NOBODY, pool: defaultUidPool() };
  }
  const truePath = first(TRUE_CANDIDATES, sys);
  if (!truePath) return { ...base, reason: 'no `true` binary to probe with' };
  if (verified) return { ...base, available: true };
  const opts: BwrapOptions = { bwrapPath: path };
  if (base.prlimit) {
    opts.prlimitPath = base.prlimit;
    opts.limits = osLimitsFor({ memoryMb: 64, timeoutMs: PROBE_TIMEOUT_MS });
  }
  if (base.dropTo) opts.dropTo = base.dropTo;
  let argv: string[];
  try {
    argv = bwrapArgv({ command: truePath, args: [], env: {}, readOnlyPaths: [], writablePaths: [] }, opts);
  } catch (e) {
    return { ...base, reason: `cannot build the probe sandbox: ${(e as Error).message}` };
  }
  const r = await sys.run(argv[0] as string, argv.slice(1), PROBE_TIMEOUT_MS);
  if (r.code !== 0) {
    return {
      ...base,
      reason: `a test sandbox failed (user namespaces disabled or restricted?): ${firstLine(r.stderr) || `exit ${r.code ?? 'timeout'}`}`,
    };
  }
  return { ...base, available: true };
}

async function probeDarwin(sys: ProbeSystem): Promise<SandboxProbe> {
  const base: SandboxProbe = { platform: 'darwin', backend: 'seatbelt', available: false };
  if (!sys.isExecutable(SANDBOX_EXEC)) return { ...base, reason: `${SANDBOX_EXEC} not found` };
  base.path = SANDBOX_EXEC;
  const r = await sys.run(
    SANDBOX_EXEC,
    ['-p', '(version 1)(deny default)(allow process-exec)(allow file-read*)', '/usr/bin/true'],
    PROBE_TIMEOUT_MS,
  );
  if (r.code !== 0)
    return { ...base, reason: `sandbox-exec test failed: ${firstLine(r.stderr) || `exit ${r.code ?? 'timeout'}`}` };
  return { ...base, available: true };
}

let cached: Promise<SandboxProbe> | undefined;
let override: SandboxProbe | undefined;

/**
 * The probe result, computed once per process. `kept`: how to probe through the cross-process cache on Linux (the
 * host passes node/os-sandbox/probe-cache.ts probeWithCache bound to its state folder's file), used for that one
 * computation; a passing probe is then also kept across processes, keyed by the binaries, kernel and uid.
 */
export function probeSandbox(opts: { kept?: (sys: ProbeSystem) => Promise<SandboxProbe> } = {}): Promise<SandboxProbe> {
  if (override) return Promise.resolve(override);
  if (opts.kept && realSystem.platform === 'linux' && !cached) cached = opts.kept(realSystem);
  cached ??= probeUncached(realSystem);
  return cached;
}

/** Forget this process's probe result (the cross-process cache is dropped by probe-cache.ts forgetProbe). */
export function resetProbe(): void {
  cached = undefined;
}

/**
 * Test-only: replace the probe result (e.g. `{ backend: 'none', available: false }` to exercise the
 * fallback path). Reachable only from the JS API; no flag, setting or environment variable sets it.
 */
export function setProbeOverrideForTests(p: SandboxProbe | undefined): void {
  override = p;
}
