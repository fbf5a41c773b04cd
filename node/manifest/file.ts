// Reads a manifest file for installing: inlines `sourceFile` (bundling JavaScript with its imports) and checks syntax;
// Node host, trusted side.
import { readFile, realpath, stat } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { TyError } from '../../core/errors.js';
import { sourceFileRecord } from '../../core/manifest/source-file.js';
import { bundleTool, checkSyntax } from './bundle.js';

/** Largest manifest or source file read, bytes (the manifest schema caps source at 4 MiB). */
const MAX_FILE_BYTES = 8 * 1024 * 1024;

/** Refuse the input as a usage error (exit 2 on the command line). */
function usage(message: string): never {
  throw new TyError('E_USAGE', message);
}

/** The text of a regular file of at most MAX_FILE_BYTES. @throws TyError E_USAGE (absent, not a file, too large) */
async function readText(path: string, what: string): Promise<string> {
  let st;
  try {
    st = await stat(path);
  } catch {
    usage(`cannot read ${what} ${path}: no such file`);
  }
  if (!st.isFile()) usage(`${what} ${path} is not a file`);
  if (st.size > MAX_FILE_BYTES) usage(`${what} ${path} is larger than ${MAX_FILE_BYTES} bytes`);
  return readFile(path, 'utf8');
}

/**
 * Read a manifest file and inline `execution.sourceFile` (relative to the manifest's folder, and
 * required to stay inside it after resolving symlinks) as `execution.source`. JavaScript (and TypeScript) is
 * bundled with its relative imports and npm packages from the manifest's folder (node/manifest/bundle.ts), and
 * `execution.bundle` records its inputs and source map; inline JavaScript `source` is checked to parse.
 * @throws TyError E_USAGE (file unreadable), E_INVALID_MANIFEST (not JSON, both or neither of source/sourceFile,
 *   sourceFile outside, a syntax error or a refused import naming `file:line:column`)
 */
export async function loadManifestFile(path: string): Promise<unknown> {
  const text = await readText(path, 'manifest');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new TyError('E_INVALID_MANIFEST', `${path} is not valid JSON: ${(e as Error).message}`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
    throw new TyError('E_INVALID_MANIFEST', 'a manifest is a JSON object');
  const exec = (doc as { execution?: unknown }).execution;
  if (exec === null || typeof exec !== 'object' || Array.isArray(exec)) return doc; // the schema reports it
  const e = exec as Record<string, unknown>;
  if (e.sourceFile === undefined) {
    if (e.kind === 'sandboxed-code' && e.source === undefined)
      throw new TyError(
        'E_INVALID_MANIFEST',
        'execution needs "source" (the code) or "sourceFile" (a file next to the manifest)',
        { path: 'execution.source' },
      );
    if (e.kind === 'sandboxed-code' && e.runtime === 'javascript' && typeof e.source === 'string')
      await checkSyntax(e.source, 'execution.source');
    return doc;
  }
  if (e.source !== undefined)
    throw new TyError('E_INVALID_MANIFEST', 'execution has both "source" and "sourceFile"; keep one', {
      path: 'execution.sourceFile',
    });
  if (typeof e.sourceFile !== 'string' || e.sourceFile === '' || isAbsolute(e.sourceFile))
    throw new TyError('E_INVALID_MANIFEST', 'execution.sourceFile must be a relative path next to the manifest', {
      path: 'execution.sourceFile',
    });
  const base = await realpath(dirname(resolve(path)));
  let target: string;
  try {
    target = await realpath(resolve(base, e.sourceFile));
  } catch {
    throw new TyError(
      'E_INVALID_MANIFEST',
      `execution.sourceFile "${e.sourceFile}" does not exist next to the manifest`,
      { path: 'execution.sourceFile' },
    );
  }
  const rel = relative(base, target);
  if (rel === '' || rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel)) {
    throw new TyError(
      'E_INVALID_MANIFEST',
      `execution.sourceFile "${e.sourceFile}" leaves the manifest's folder; keep the source next to the manifest`,
      { path: 'execution.sourceFile' },
    );
  }
  const { sourceFile: _drop, ...restExec } = e;
  if (e.kind === 'sandboxed-code' && e.runtime === 'javascript') {
    if (restExec.bundle !== undefined)
      throw new TyError(
        'E_INVALID_MANIFEST',
        'execution.bundle is written by the bundler; remove it from a manifest with "sourceFile"',
        { path: 'execution.bundle' },
      );
    await readText(target, 'source file'); // size and kind checks
    const { source, bundle } = await bundleTool(base, rel);
    return { ...(doc as Record<string, unknown>), execution: { ...restExec, source, bundle } };
  }
  const source = await readText(target, 'source file');
  if (e.kind === 'sandboxed-code' && e.runtime === 'python') {
    // The file's name (and integrity) is kept with the revision, so a raising tool's frames name it
    // (core/exec/stack.ts).
    const bundle = await sourceFileRecord(rel.split(sep).join('/'), source);
    return { ...(doc as Record<string, unknown>), execution: { ...restExec, source, bundle } };
  }
  return { ...(doc as Record<string, unknown>), execution: { ...restExec, source } };
}

/**
 * A Python revision's declared wheels, checked next to the manifest file `path`: each `python.packages[].file`
 * exists in the manifest's folder and matches its sha256. Undefined when the manifest declares none.
 * @throws TyError E_INVALID_MANIFEST (packages on a non-Python revision), E_SANDBOX_UNAVAILABLE (a wheel
 *   missing or outside the folder), E_INTEGRITY (a digest differs).
 */
export async function pythonPackagesOf(path: string, doc: unknown): Promise<{ dir: string } | undefined> {
  const m = doc as { python?: { packages?: unknown }; execution?: { runtime?: unknown } };
  const packages = m?.python?.packages;
  if (!Array.isArray(packages) || packages.length === 0) return undefined;
  if (m.execution?.runtime !== 'python')
    throw new TyError('E_INVALID_MANIFEST', 'python.packages is for revisions with execution.runtime "python"', {
      path: 'python.packages',
    });
  const dir = await realpath(dirname(resolve(path)));
  const { resolvePythonPackages } = await import('../python/sandbox.js');
  const { PythonPackageSchema } = await import('../../protocol/manifest.js');
  const parsed = PythonPackageSchema.array().safeParse(packages);
  if (!parsed.success) return undefined; // installing reports the schema's own message (e.g. pure-Python wheels only)
  resolvePythonPackages(dir, parsed.data);
  return { dir };
}
