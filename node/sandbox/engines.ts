// Where a sandbox's engine and runner are, and the engine flags it gets (permission flag, V8 flags, Deno's cache dir);
// Node host, trusted side.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TyError } from '../../core/errors.js';

/**
 * Walk up from this module to the folder whose package.json is named `tysandbox` (works from sources and from dist/).
 */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pj = join(dir, 'package.json');
    if (existsSync(pj)) {
      try {
        if ((JSON.parse(readFileSync(pj, 'utf8')) as { name?: unknown }).name === 'tysandbox') return dir;
      } catch {
        /* unreadable package.json: keep walking */
      }
    }
    const up = dirname(dir);
    if (up === dir) throw new TyError('E_SANDBOX_UNAVAILABLE', 'cannot locate the tysandbox package root');
    dir = up;
  }
}

const runnerPathCache = new Map<string, string>();
/**
 * Absolute path of the file the sandbox process runs: node/runner/sandbox-runner-entry.cjs for Node (CommonJS, for
 * start-up time; it compiles the guest runtime and sandbox-runner.cjs as one script with the build's code cache),
 * node/runner/sandbox-runner.mjs for Deno (an ES module importing the guest runtime). Both are thin stdio adapters of
 * core/guest/core.mjs.
 * @throws TyError E_SANDBOX_UNAVAILABLE when the file is missing from the package.
 */
export function runnerPath(engine: 'node' | 'deno' = 'node'): string {
  const hit = runnerPathCache.get(engine);
  if (hit) return hit;
  const p = join(
    packageRoot(),
    'node',
    'runner',
    engine === 'node' ? 'sandbox-runner-entry.cjs' : 'sandbox-runner.mjs',
  );
  if (!existsSync(p)) throw new TyError('E_SANDBOX_UNAVAILABLE', 'sandbox runner file is missing from the package');
  runnerPathCache.set(engine, p);
  return p;
}
/**
 * A guest runtime file (core/guest/: the code inside every sandbox, shared with the browser worker) as the runner in
 * `runnerDir` finds it: two folders up, in the package's core/guest/.
 */
export function guestFile(
  runnerDir: string,
  name: 'commons.mjs' | 'core.mjs' | 'python.mjs' | 'python-limits.mjs',
): string {
  return resolve(runnerDir, '..', '..', 'core', 'guest', name);
}
/**
 * The files the Node entry in `runnerDir` compiles as one script for a JavaScript sandbox, in order, which its code
 * cache holds copies of (node/runner/sandbox-runner-entry.cjs SOURCES): the captured built-ins, the guest core, the
 * runner.
 */
export function nodeRunnerSources(runnerDir: string): string[] {
  return [guestFile(runnerDir, 'commons.mjs'), guestFile(runnerDir, 'core.mjs'), join(runnerDir, 'sandbox-runner.cjs')];
}
/** The Node runner's V8 code cache (written by node/runner/build-code-cache.mjs during the build; optional). */
export const NODE_RUNNER_CODE_CACHE = 'sandbox-runner.cache';
/**
 * First word of a code cache file (node/runner/sandbox-runner-entry.cjs: `MAGIC <bytes of each source file>\n`, the
 * files' bytes in nodeRunnerSources order, V8's data).
 */
const CODE_CACHE_MAGIC = 'tysandbox-code-cache-2';

const codeCacheChecks = new Map<string, { stamp: string; ok: boolean }>();
const stampOf = (p: string): string => {
  try {
    const st = statSync(p, { bigint: true });
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}`;
  } catch {
    return '-';
  }
};
/**
 * Whether the code cache in `dir` holds exactly the bytes of the files nodeRunnerSources lists there (the check
 * sandbox-runner-entry.cjs makes itself whenever it can read those files). Remembered per file stamps (device, inode,
 * size, mtime) of the cache and those files.
 */
export function codeCacheMatches(dir: string): boolean {
  const sources = nodeRunnerSources(dir);
  const files = [join(dir, NODE_RUNNER_CODE_CACHE), ...sources];
  const stamp = files.map(stampOf).join('|');
  const hit = codeCacheChecks.get(dir);
  if (hit && hit.stamp === stamp) return hit.ok;
  let ok = false;
  try {
    const [cache, ...bytes] = files.map((f) => readFileSync(f)) as [Buffer, ...Buffer[]];
    const nl = cache.indexOf(10);
    const head = nl > 0 && nl <= 100 ? cache.toString('latin1', 0, nl).split(' ') : [];
    ok = head.length === sources.length + 1 && head[0] === CODE_CACHE_MAGIC;
    let at = nl + 1;
    for (let i = 0; ok && i < bytes.length; i++) {
      const b = bytes[i]!;
      ok = Number(head[i + 1]) === b.length && cache.subarray(at, at + b.length).equals(b);
      at += b.length;
    }
    ok = ok && cache.length > at;
  } catch {
    ok = false;
  }
  codeCacheChecks.set(dir, { stamp, ok });
  return ok;
}

/**
 * The project files a sandbox may read, all read-only: its runner file and what that loads. Node: the entry and either
 * the runner's V8 code cache alone, when the build made one and it holds exactly the bytes of the files the entry
 * compiles (nodeRunnerSources; codeCacheMatches: the entry then compiles those copies, two files and binds fewer),
 * or else those files themselves: the captured built-ins (core/guest/commons.mjs), the guest core (core/guest/core.mjs)
 * and the runner (node/runner/sandbox-runner.cjs); `codeCache: false` (a Python sandbox, whose V8 flags the cache was
 * not made for) always the latter. Deno: the runner and the two guest modules it imports.
 * @throws TyError E_SANDBOX_UNAVAILABLE when a source file is missing from the package.
 */
export function runnerFiles(engine: 'node' | 'deno' = 'node', opts: { codeCache?: boolean } = {}): string[] {
  const runner = runnerPath(engine);
  const dir = dirname(runner);
  if (engine === 'node' && opts.codeCache !== false && codeCacheMatches(dir))
    return [runner, join(dir, NODE_RUNNER_CODE_CACHE)];
  const files =
    engine === 'node'
      ? [runner, ...nodeRunnerSources(dir)]
      : [runner, guestFile(dir, 'commons.mjs'), guestFile(dir, 'core.mjs')];
  if (!files.every((f) => existsSync(f)))
    throw new TyError('E_SANDBOX_UNAVAILABLE', 'a sandbox runner file is missing from the package');
  return files;
}

/** Node's --allow-fs-* and Deno's --allow-* split on "," and treat "*" as a wildcard: such paths would grant more. */
export function flagSafe(p: string): boolean {
  return !/[,*\x00-\x1f]/.test(p);
}

const permissionFlagCache = new Map<string, string>();
/** Seed permissionFlag's answer for `nodePath` (the host's cross-process cache, node/os-sandbox/probe-cache.ts). */
export function rememberPermissionFlag(nodePath: string, flag: '--permission' | '--experimental-permission'): void {
  permissionFlagCache.set(nodePath, flag);
}
/**
 * `--permission` where the binary supports it (Node >= 22.13/23.5), else `--experimental-permission` (Node 20). Probed
 * once per binary.
 */
export function permissionFlag(nodePath: string): string {
  const hit = permissionFlagCache.get(nodePath);
  if (hit) return hit;
  const r = spawnSync(nodePath, ['--permission', '--allow-fs-read=*', '-e', '0'], {
    env: {},
    stdio: 'ignore',
    timeout: 10_000,
  });
  const flag = r.status === 0 ? '--permission' : '--experimental-permission';
  permissionFlagCache.set(nodePath, flag);
  return flag;
}

/** The deno binary shipped by the `deno` npm package (or its platform package), else undefined. */
export function resolveDeno(): string | undefined {
  const req = createRequire(join(packageRoot(), 'package.json'));
  const exe = process.platform === 'win32' ? 'deno.exe' : 'deno';
  const candidates: string[] = [];
  try {
    candidates.push(join(dirname(req.resolve('deno/package.json')), exe));
  } catch {
    /* not installed */
  }
  const plat = `${process.platform === 'win32' ? 'win32' : process.platform}-${process.arch}`;
  for (const name of [`@deno/${plat}-glibc`, `@deno/${plat}`]) {
    try {
      candidates.push(join(dirname(req.resolve(`${name}/package.json`)), exe));
    } catch {
      /* not this platform */
    }
  }
  return candidates.find((c) => existsSync(c));
}

/**
 * Deno's DENO_DIR in every sandbox: below a character device, so neither the host nor the sandbox can ever create it
 * (ENOTDIR); Deno then keeps its module-analysis caches in SQLite databases in memory. Nothing else needs it here:
 * no remote or npm modules, no code cache, no type checking (`--no-remote --no-npm --no-code-cache`).
 */
export const DENO_NO_CACHE_DIR = '/dev/null/tysandbox-deno';
/**
 * Remove temporary DENO_DIRs (`tysandbox-deno-PID-*` in the temp folder) that earlier versions gave each Deno sandbox
 * and that hosts killed without running their exit hook left behind; a directory whose host is gone is removed.
 * Returns how many were removed.
 */
export function sweepStaleDenoDirs(): number {
  let n = 0;
  let names: string[];
  try {
    names = readdirSync(tmpdir());
  } catch {
    return 0;
  }
  for (const name of names) {
    const m = /^tysandbox-deno-(\d+)-/.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid) continue;
    try {
      process.kill(pid, 0);
      continue; // host alive (or pid reused: leave it)
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EPERM') continue;
    }
    try {
      rmSync(join(tmpdir(), name), { recursive: true, force: true });
      n++;
    } catch {
      /* someone else's: leave it */
    }
  }
  return n;
}

/**
 * The JavaScript runners' semi-space cap for a heap limit of `heapMb` MiB: 1/256 of it, at least 1 and at most 16 MiB
 * (1 MiB at the default 256 MiB heap). V8 lets each of the two semi-spaces grow to 16 MiB, which a sandbox that once
 * saw large arguments keeps: at 1 MiB a retained sandbox holds 3-7 MiB less after a small tool's work, at no measured
 * compute cost (test/bench/warm.bench.mjs, runner flag rows).
 */
export function semiSpaceMb(heapMb: number): number {
  return Math.min(16, Math.max(1, Math.floor(heapMb / 256)));
}

/**
 * V8 flags of a JavaScript (not Python) Node sandbox beyond the heap limit: the young generation cap (semiSpaceMb), and
 * one V8 platform worker thread instead of four (`--v8-pool-size=1`: concurrent marking, parallel scavenges and
 * background compilation share one thread; three threads and about 1 MiB fewer per sandbox, measured in
 * test/bench/warm.bench.mjs). Pyodide keeps V8's defaults (its WebAssembly tier-up compiles on those workers).
 */
export function nodeRunnerV8Flags(heapMb: number): string[] {
  return [`--max-semi-space-size=${semiSpaceMb(heapMb)}`, '--v8-pool-size=1'];
}
