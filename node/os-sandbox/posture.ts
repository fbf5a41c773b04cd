// OS isolation posture (auto | required | off): picks the wrapper from the probe, fails closed or warns once; Node
// host, trusted side.
import { TyError } from '../../core/errors.js';
import { createBwrapWrapper, type SpawnWrapperFn } from './bwrap.js';
import { osLimitsFor, type OsLimits } from './limits.js';
import type { SandboxProbe } from './probe.js';
import { createSeatbeltWrapper } from './seatbelt.js';

export const POSTURES = ['auto', 'required', 'off'] as const;
export type Posture = (typeof POSTURES)[number];

/** The settings key holding the posture (`"sandbox": "auto" | "required" | "off"`). */
export const POSTURE_SETTINGS_KEY = 'sandbox';

/**
 * Parse a posture from `--sandbox` or the settings key.
 * @throws TyError E_USAGE for anything but auto, required, off.
 */
export function parsePosture(value: unknown, source = '--sandbox'): Posture {
  if (typeof value === 'string' && (POSTURES as readonly string[]).includes(value)) return value as Posture;
  throw new TyError('E_USAGE', `${source} must be one of auto, required, off`);
}

/** Flag first, then the settings value, else `auto`. @throws TyError E_USAGE (flag) / E_INVALID_SETTINGS (setting) */
export function resolvePosture(flag: unknown, setting: unknown): Posture {
  if (flag !== undefined) return parsePosture(flag, '--sandbox');
  if (setting !== undefined) {
    try {
      return parsePosture(setting, `settings "${POSTURE_SETTINGS_KEY}"`);
    } catch (e) {
      throw new TyError('E_INVALID_SETTINGS', (e as Error).message);
    }
  }
  return 'auto';
}

export type RuntimeKind = 'node' | 'deno' | 'quickjs' | 'python';

/** What is no longer enforced when a runtime runs without the OS sandbox, per runtime. */
export const UNENFORCED_WITHOUT_BACKEND: Record<RuntimeKind, string[]> = {
  node: [
    "network: Node's permission model does not restrict sockets or DNS, so tool code can reach the network and local services",
    "environment and files: only Node's own permission model and the empty environment stand between tool code and your files",
    'process-count, CPU and data-size limits (only the heap cap and the wall-clock timeout remain)',
  ],
  deno: [
    "a second layer: only Deno's permission checks stand between tool code and your network, files and environment",
    'process-count, CPU and data-size limits (only the heap cap and the wall-clock timeout remain)',
  ],
  quickjs: [
    "a second layer around QuickJS: a tool that escaped QuickJS and WebAssembly would hold the sandbox host process, with your user's network, files and environment",
    'process-count, CPU and data-size limits of the sandbox host process (the per-sandbox memory and time limits remain)',
  ],
  python: ["everything: native Python runs with your user's full permissions (files, network, environment, processes)"],
};

/** The one-time warning text for posture `auto` without a backend. Plain words, one line per limit. */
export function fallbackWarning(probe: SandboxProbe, runtimes: RuntimeKind[] = ['node', 'deno']): string {
  const lines = [
    `warning: OS sandbox unavailable (${probe.reason ?? 'no backend'}); continuing without it (--sandbox auto).`,
    'Not enforced now:',
  ];
  for (const r of runtimes) for (const l of UNENFORCED_WITHOUT_BACKEND[r]) lines.push(`  - ${r}: ${l}`);
  lines.push('Use --sandbox required to refuse to run instead.');
  return lines.join('\n');
}

/** Text for an explicit `off`. */
export const OFF_NOTICE =
  "notice: OS sandbox switched off (--sandbox off); tools run with the engine's own checks only.";

export interface IsolationPlan {
  posture: Posture;
  backend: SandboxProbe['backend'];
  /** True when tools run inside the OS sandbox. */
  enforced: boolean;
  /** The wrapper to pass as NodeSandboxRuntime's `wrap` (undefined when not enforced). */
  wrap?: SpawnWrapperFn;
  /** Text to show once (fallback warning or off notice), if any. */
  warning?: string;
  limits?: OsLimits;
}

export interface PlanOptions {
  /**
   * CPU seconds per sandbox process lifetime (default 600); other limits follow the heap flag (see wrapperWithLimits).
   */
  cpuSeconds?: number;
  /** Tasks per sandbox (default limits.ts DEFAULT_NPROC). */
  nproc?: number;
  /** Runtimes to name in the warning. */
  runtimes?: RuntimeKind[];
  /** `minimal` for node/deno; `system` for interpreters such as Python. */
  libraries?: 'minimal' | 'system';
}

/** Heap cap (MiB) from a runtime's argv (`--max-old-space-size=N`, also inside `--v8-flags=`), else undefined. */
export function heapMbFromArgs(args: string[]): number | undefined {
  for (const a of args) {
    const m = /--max-old-space-size=(\d+)/.exec(a);
    if (m) return Number(m[1]);
  }
  return undefined;
}

/**
 * Decide isolation for a posture and probe result.
 * - `required` without a working backend: throws E_SANDBOX_UNAVAILABLE (fail closed; nothing runs).
 * - `auto` without one: no wrapper and the fallback warning (show it once; see warnOnce).
 * - `off`: no wrapper and the off notice.
 * The data limit follows each spawn's heap flag (4 x heap + 512 MiB, at least 1 GiB).
 * @throws TyError E_SANDBOX_UNAVAILABLE
 */
export function planIsolation(posture: Posture, probe: SandboxProbe, opts: PlanOptions = {}): IsolationPlan {
  if (posture === 'off') return { posture, backend: probe.backend, enforced: false, warning: OFF_NOTICE };
  if (!probe.available || probe.backend === 'none') {
    if (posture === 'required') {
      throw new TyError(
        'E_SANDBOX_UNAVAILABLE',
        `--sandbox required, but no OS sandbox works here: ${probe.reason ?? 'no backend'}`,
      );
    }
    return { posture, backend: probe.backend, enforced: false, warning: fallbackWarning(probe, opts.runtimes) };
  }
  const limitsFor = (args: string[]) =>
    osLimitsFor(
      { memoryMb: heapMbFromArgs(args) ?? 256, timeoutMs: 60_000 },
      { cpuSeconds: opts.cpuSeconds ?? 600, ...(opts.nproc ? { nproc: opts.nproc } : {}) },
    );
  const limits = limitsFor([]);
  if (probe.backend === 'bwrap') {
    const path = probe.path as string;
    const wrap: SpawnWrapperFn = (req) =>
      createBwrapWrapper({
        bwrapPath: path,
        ...(probe.prlimit ? { prlimitPath: probe.prlimit, limits: limitsFor(req.args) } : {}),
        ...(probe.dropTo ? { dropTo: probe.dropTo } : {}),
        libraries: opts.libraries ?? 'minimal',
      })(req);
    return { posture, backend: 'bwrap', enforced: true, wrap, limits };
  }
  const wrap: SpawnWrapperFn = (req) => createSeatbeltWrapper({ limits: limitsFor(req.args) })(req);
  return { posture, backend: 'seatbelt', enforced: true, wrap, limits };
}

const warned = new WeakMap<object, Set<string>>();
/** Write `text` to `stream` once per stream and text (the "warn once" of posture auto). Returns whether it wrote. */
export function warnOnce(stream: { write(s: string): unknown }, text: string): boolean {
  let seen = warned.get(stream);
  if (!seen) warned.set(stream, (seen = new Set()));
  if (seen.has(text)) return false;
  seen.add(text);
  stream.write(`${text}\n`);
  return true;
}
