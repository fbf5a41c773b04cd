// What a Python (Pyodide) revision adds to a Node or Deno sandbox process: verified assets, read grants, flags, memory
// needs; Node host, trusted side.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join, relative } from 'node:path';
import { TyError } from '../../core/errors.js';
import { checkPureWheel } from '../../core/manifest/wheel.js';
import { guestFile } from '../sandbox/engines.js';

/** The one Pyodide asset manifest (core/pyodide-manifest.json), shared with the browser build. */
export interface PyodideAssetManifest {
  version: string;
  files: Record<string, { sha256: string; bytes: number }>;
}

/** Resolved assets: the manifest plus the absolute path of each file in the installed `pyodide` package. */
export interface PyodideAssets extends PyodideAssetManifest {
  dir: string;
  paths: Record<string, string>;
}

/**
 * Memory a Pyodide sandbox needs, kept in this one place for the OS limits (node/os-sandbox/limits.ts):
 * - `minHeapMb`: V8 heap floor (--max-old-space-size); Pyodide's JavaScript side and the stdlib zip's copies.
 * - `addressSpaceBytes`: virtual address space a wasm32 memory reserves up front (4 GiB + guard regions, about
 *   10 GiB on x86-64 V8) on top of the engine's own; an RLIMIT_AS below this makes Pyodide fail to start.
 *   Untouched reservations are not resident and are not counted by RLIMIT_DATA.
 * - `dataBytes`: RLIMIT_DATA floor: the wasm heap grows in writable private pages (Python objects live there).
 * - `startTimeoutMs`: budget for spawn + verify + Pyodide start (a cold start is 1-3 s here; slow disks more).
 */
export const PYTHON_SANDBOX_NEEDS = Object.freeze({
  minHeapMb: 256,
  addressSpaceBytes: 16 * 1024 * 1024 * 1024,
  dataBytes: 2 * 1024 * 1024 * 1024,
  startTimeoutMs: 120_000,
});

/** The runner argument that carries the asset spec into the sandbox (base64 JSON; no secret in it). */
export const PYTHON_RUNNER_FLAG = '--tysandbox-python=';

/**
 * The Pyodide sandbox side files of the runner in `runnerDir` (guestFile: two folders up): core/guest/python.mjs and
 * the memory limit it imports, core/guest/python-limits.mjs. The captured built-ins they import
 * (core/guest/commons.mjs) are among the runner's files (runnerFiles).
 * @throws TyError E_SANDBOX_UNAVAILABLE when one is missing.
 */
export function pythonGuestFiles(runnerDir: string): string[] {
  const files = [guestFile(runnerDir, 'python.mjs'), guestFile(runnerDir, 'python-limits.mjs')];
  if (!files.every((p) => existsSync(p)))
    throw new TyError('E_SANDBOX_UNAVAILABLE', 'the Python sandbox files are missing from the package');
  return files;
}

const assetCache = new Map<string, PyodideAssets>();
/**
 * The manifest and the installed files. `root` is the tysandbox package root (node/sandbox/runtime.ts packageRoot).
 * @throws TyError E_SANDBOX_UNAVAILABLE (no `pyodide` package, a file missing, no manifest).
 */
export function pyodideAssets(root: string): PyodideAssets {
  const hit = assetCache.get(root);
  if (hit) return hit;
  let manifest: PyodideAssetManifest;
  try {
    manifest = JSON.parse(readFileSync(join(root, 'core', 'pyodide-manifest.json'), 'utf8')) as PyodideAssetManifest;
  } catch {
    throw new TyError(
      'E_SANDBOX_UNAVAILABLE',
      'the Pyodide manifest (core/pyodide-manifest.json) is missing from the package',
    );
  }
  let dir: string;
  try {
    dir = dirname(createRequire(join(root, 'package.json')).resolve('pyodide/package.json'));
  } catch {
    throw new TyError(
      'E_SANDBOX_UNAVAILABLE',
      'the `pyodide` package is not installed, so Python tools cannot run here',
    );
  }
  const paths: Record<string, string> = {};
  for (const name of Object.keys(manifest.files)) {
    if (!/^[A-Za-z0-9._-]{1,100}$/.test(name))
      throw new TyError('E_INTEGRITY', 'bad file name in the Pyodide manifest');
    const p = join(dir, name);
    if (!existsSync(p))
      throw new TyError('E_SANDBOX_UNAVAILABLE', `the Pyodide file ${name} is missing from the installed package`);
    paths[name] = p;
  }
  const out = { version: manifest.version, files: manifest.files, dir, paths };
  assetCache.set(root, out);
  return out;
}

const verified = new Map<string, string>();
/**
 * Check each installed file against the manifest (size and sha-256) on the host, once per file state (size,
 * mtime, inode) per process, so a mismatch is reported before any process starts. The sandbox checks the bytes it
 * actually evaluates again (core/guest/python.mjs), which closes the window between the two reads.
 * @throws TyError E_INTEGRITY naming the file.
 */
export function verifyPyodideAssets(a: PyodideAssets): void {
  for (const [name, want] of Object.entries(a.files)) {
    const p = a.paths[name]!;
    const st = statSync(p);
    const key = `${st.size}:${st.mtimeMs}:${st.ino}`;
    if (verified.get(p) === key) continue;
    const bytes = readFileSync(p);
    const got = createHash('sha256').update(bytes).digest('hex');
    if (bytes.length !== want.bytes || got !== want.sha256) {
      throw new TyError(
        'E_INTEGRITY',
        `the installed Pyodide file ${name} does not match core/pyodide-manifest.json (sha-256 ${got.slice(0, 16)}…, expected ${want.sha256.slice(0, 16)}…); refusing to run it`,
      );
    }
    verified.set(p, key);
  }
}

/**
 * The assets of a copy of the Pyodide files in `dir` (tests, embedders with their own copy), checked against the same
 * manifest.
 */
export function pyodideAssetsIn(root: string, dir: string): PyodideAssets {
  const base = pyodideAssets(root);
  const paths: Record<string, string> = {};
  for (const name of Object.keys(base.files)) paths[name] = join(dir, name);
  return { version: base.version, files: base.files, dir, paths };
}

/**
 * What the sandbox command gains for a Python revision: the guest files the runner compiles (`guestFiles`, read by the
 * Node entry; Deno imports them as modules), the Pyodide files and wheels the guest reads (`readFiles`), and the runner
 * argument: the asset spec, with `retainState` and `memoryMb` (limits.memoryMb, the cap on Pyodide's memory and
 * in-memory files: core/guest/python-limits.mjs).
 */
export function pythonSandboxPlan(
  assets: string | PyodideAssets,
  runnerDir: string,
  opts: { retainState: boolean; packages?: PythonPackageFile[]; memoryMb?: number },
): { guestFiles: string[]; readFiles: string[]; runnerArg: string; version: string } {
  const a = typeof assets === 'string' ? pyodideAssets(assets) : assets;
  verifyPyodideAssets(a);
  const packages = opts.packages ?? [];
  const spec = {
    version: a.version,
    files: a.files,
    paths: a.paths,
    retainState: opts.retainState,
    packages,
    ...(opts.memoryMb !== undefined ? { memoryMb: opts.memoryMb } : {}),
  };
  return {
    guestFiles: pythonGuestFiles(runnerDir),
    readFiles: [...Object.values(a.paths), ...packages.map((p) => p.path)],
    runnerArg: PYTHON_RUNNER_FLAG + Buffer.from(JSON.stringify(spec)).toString('base64'),
    version: a.version,
  };
}

/** What `tycli sandbox status` and `tycli diagnostics` report about sandboxed Python on this host. */
export interface PyodideStatus {
  /** Pyodide version of the manifest. */
  version?: string;
  /** Folder of the installed files. */
  path?: string;
  /** True when every installed file matches core/pyodide-manifest.json (size and sha-256). */
  verified: boolean;
  /** Why Python revisions cannot run here, when they cannot. */
  reason?: string;
}
/** Resolve and verify the Pyodide files (never throws). */
export function pyodideStatus(root: string): PyodideStatus {
  try {
    const a = pyodideAssets(root);
    try {
      verifyPyodideAssets(a);
      return { version: a.version, path: a.dir, verified: true };
    } catch (e) {
      return {
        version: a.version,
        path: a.dir,
        verified: false,
        reason: `${(e as TyError).code}: ${(e as Error).message}`,
      };
    }
  } catch (e) {
    return { verified: false, reason: `${(e as TyError).code ?? 'E_SANDBOX_UNAVAILABLE'}: ${(e as Error).message}` };
  }
}

/** A declared wheel resolved to a file the sandbox may read. */
export interface PythonPackageFile {
  file: string;
  sha256: string;
  path: string;
}

/** Store namespace of the folder each Python revision's wheels are read from (host-local, not part of the revision). */
export const PYTHON_PACKAGES_NS = 'python-packages';

/**
 * Resolve `packages` in `dir` (the folder of the manifest the revision was added from) and check each file's
 * sha-256 before anything uses it, then its contents (core/manifest/wheel.ts checkPureWheel: pure Python only, no
 * entry outside the install folder). Files must stay inside `dir` after resolving symlinks. Runs at `tool add` and
 * again at every sandbox start.
 * @throws TyError E_SANDBOX_UNAVAILABLE (a file missing or outside the folder), E_INTEGRITY (a digest differs),
 *   E_INVALID_MANIFEST (native code, an entry leaving the install folder, not a zip archive).
 */
export function resolvePythonPackages(
  dir: string,
  packages: readonly { file: string; sha256: string }[],
): PythonPackageFile[] {
  const base = realpathSync(dir);
  return packages.map(({ file, sha256 }) => {
    let path: string;
    try {
      path = realpathSync(join(base, file));
    } catch {
      throw new TyError(
        'E_SANDBOX_UNAVAILABLE',
        `the wheel ${file} is not in ${base} (the folder of the manifest it was added from)`,
      );
    }
    const rel = relative(base, path);
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel))
      throw new TyError('E_SANDBOX_UNAVAILABLE', `the wheel ${file} leaves the manifest's folder`);
    const bytes = readFileSync(path);
    const got = createHash('sha256').update(bytes).digest('hex');
    if (got !== sha256)
      throw new TyError(
        'E_INTEGRITY',
        `the wheel ${file} does not match its sha256 in the manifest (got ${got.slice(0, 16)}…); refusing to load it`,
      );
    // pure Python only, every entry inside the install folder: refused here, at tool add, not first at a run
    checkPureWheel(file, bytes);
    return { file, sha256, path };
  });
}
