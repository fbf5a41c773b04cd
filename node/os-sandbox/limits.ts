// OS resource limits for a sandboxed process (process count, CPU seconds, data size) as prlimit arguments; Node host,
// trusted side.
import type { CallLimits } from '../../core/exec/runtime.js';
import { LINEAR_RESERVE_MB } from '../../core/quickjs/limits.js';

/**
 * Kernel resource limits (setrlimit(2)) applied to the sandboxed process tree, soft = hard (except RLIMIT_CPU).
 * - `nproc`: RLIMIT_NPROC, tasks (processes *and threads*) of the sandbox's uid. Under bubblewrap the
 *   sandbox has its own user namespace, and since Linux 5.14 the count is kept per (user namespace, uid),
 *   so it counts only the sandbox's own tasks. The kernel never applies it to host uid 0, which is why
 *   a root CLI drops the sandbox to an unprivileged uid (see bwrap.ts).
 * - `cpuSeconds`: RLIMIT_CPU, CPU seconds over the process lifetime: soft limit S (SIGXCPU, so the host can
 *   report "CPU time limit reached"), hard limit S+1 (SIGKILL; with soft = hard Linux sends only SIGKILL). For a
 *   retained sandbox this accumulates across calls; the wall-clock timeout is the per-call limit.
 * - `dataBytes`: RLIMIT_DATA, bytes of private writable memory (heap, ArrayBuffers, wasm memory, stacks): for a
 *   JavaScript sandbox the manifest's `limits.memoryMb` (the V8 heap cap) plus DATA_MARGIN_MB of its engine, so
 *   ArrayBuffers beyond it fail with a RangeError instead of growing the process. Untouched reservations
 *   (PROT_NONE, e.g. a wasm32 memory's 4 GiB + guards) are not counted.
 * - `fileBytes`: RLIMIT_FSIZE, largest file the sandbox may write, bytes.
 */
export interface OsLimits {
  nproc: number;
  cpuSeconds: number;
  dataBytes: number;
  fileBytes: number;
}

const MiB = 1024 * 1024;

/** Tasks for one runtime: Node uses about 11 threads, Deno about 2 per CPU; a fork bomb stops here. */
export const DEFAULT_NPROC = 128;

/**
 * Private writable memory a JavaScript sandbox may use beyond its heap cap, MiB, per engine: what the engine
 * needs to run (measured at start here: Node about 50 MiB of stacks, code space and young generation; Deno about
 * 560 MiB of allocator arenas reserved writable) plus room for ArrayBuffers of about the heap's size or less.
 */
export const DATA_MARGIN_MB: Readonly<Record<'node' | 'deno', number>> = Object.freeze({ node: 256, deno: 768 });

/**
 * RLIMIT_DATA of a JavaScript sandbox, MiB: heap cap (`memoryMb`) + DATA_MARGIN_MB of the engine, at least what
 * the revision's runtime states it needs (`minDataBytes`, e.g. Pyodide's wasm heap: node/python/sandbox.ts
 * PYTHON_SANDBOX_NEEDS.dataBytes). Also what the sandbox is charged against the host's memory budget.
 */
export function dataLimitMb(memoryMb: number, engine: 'node' | 'deno', minDataBytes = 0): number {
  return Math.max(Math.ceil(memoryMb) + DATA_MARGIN_MB[engine], Math.ceil(minDataBytes / MiB));
}

/**
 * What a QuickJS sandbox is charged against the host's memory budget when it starts, MiB; from then on it is charged
 * what its sandbox host reports it holds (node/quickjs/runtime.ts QuickJsInstance.heldMb). Its own limit is its
 * linear memory's maximum (core/quickjs/memory.ts maxPagesFor); the process's RLIMIT_DATA bounds them all.
 */
export const QUICKJS_START_MB = 2;

/**
 * OS limits of a QuickJS sandbox host process (node/quickjs/sandbox-host.ts), one per principal holding many sandboxes:
 * RLIMIT_DATA covers the host's whole memory budget for retained sandboxes (`budgetMb`, each charged what it holds),
 * the writable but untouched part of each linear memory for as many sandboxes as the pool may keep (`maxSandboxes` x
 * LINEAR_RESERVE_MB: Linux counts it, it takes no RAM), `threadHeapMb` of V8 heap for each of `threads` threads and
 * 512 MiB for Node itself; RLIMIT_CPU is a day (the process lives as long as its principal's sandboxes; each call's
 * time is bounded by QuickJS's interrupt, not by it). Measured: a sandbox host with 1000 retained sandboxes maps about
 * 6.6 GB of data for about 1 GB of RSS.
 */
export function quickJsHostLimits(
  budgetMb: number,
  threads: number,
  threadHeapMb: number,
  maxSandboxes: number,
): OsLimits {
  const dataMb = Math.ceil(budgetMb) + maxSandboxes * LINEAR_RESERVE_MB + threads * threadHeapMb + 512;
  return osLimitsFor({ memoryMb: 256, timeoutMs: 60_000 }, { cpuSeconds: 24 * 3600, dataBytes: dataMb * MiB });
}

/**
 * Derive OS limits from a call's limits. With `sandbox` (a JavaScript sandbox: its engine and its runtime's stated
 * data need) dataBytes = dataLimitMb(...); otherwise (native processes) max(1 GiB, 4 x heap MiB + 512 MiB).
 * cpuSeconds = max(60, 2 x timeout s) capped at 3600; fileBytes = 64 MiB (also the size of the private /tmp).
 */
export function osLimitsFor(
  limits: Pick<CallLimits, 'memoryMb' | 'timeoutMs'>,
  overrides: Partial<OsLimits> = {},
  sandbox?: { engine: 'node' | 'deno'; minDataBytes?: number },
): OsLimits {
  const dataBytes = sandbox
    ? dataLimitMb(limits.memoryMb, sandbox.engine, sandbox.minDataBytes) * MiB
    : Math.max(1024 * MiB, (4 * limits.memoryMb + 512) * MiB);
  const cpuSeconds = Math.min(3600, Math.max(60, Math.ceil((2 * limits.timeoutMs) / 1000)));
  const out: OsLimits = { nproc: DEFAULT_NPROC, cpuSeconds, dataBytes, fileBytes: 64 * MiB, ...overrides };
  for (const [k, v] of Object.entries(out)) {
    if (!Number.isSafeInteger(v) || v <= 0) throw new RangeError(`OS limit ${k} must be a positive integer`);
  }
  return out;
}

/**
 * The `prlimit(1)` (util-linux) prefix that applies `l` to the command that follows it:
 * `[prlimitPath, --nproc=N:N, --cpu=S:S+1, --data=B:B, --fsize=B:B, --core=0:0, --]`.
 */
export function prlimitPrefix(prlimitPath: string, l: OsLimits): string[] {
  return [
    prlimitPath,
    `--nproc=${l.nproc}:${l.nproc}`,
    `--cpu=${l.cpuSeconds}:${l.cpuSeconds + 1}`,
    `--data=${l.dataBytes}:${l.dataBytes}`,
    `--fsize=${l.fileBytes}:${l.fileBytes}`,
    '--core=0:0',
    '--',
  ];
}

/**
 * The POSIX-shell equivalent for hosts without prlimit (macOS): `/bin/sh -c 'ulimit ...; exec "$@"' sh`.
 * ulimit -d and -f take KiB, -t seconds. On macOS RLIMIT_NPROC counts every process of the user, so it
 * is not set there (a small value would break the user's session; a large one contains nothing).
 */
export function ulimitPrefix(l: OsLimits, opts: { nproc: boolean }): string[] {
  const parts = [
    `ulimit -t ${l.cpuSeconds}`,
    `ulimit -d ${Math.floor(l.dataBytes / 1024)}`,
    `ulimit -f ${Math.floor(l.fileBytes / 1024)}`,
    'ulimit -c 0',
  ];
  if (opts.nproc) parts.unshift(`ulimit -u ${l.nproc}`);
  return ['/bin/sh', '-c', `${parts.join(' && ')} && exec "$@"`, 'sh'];
}
