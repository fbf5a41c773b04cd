// Bundles a multi-file JavaScript/TypeScript tool (its modules and npm packages) into one ES module at add time; Node
// host, trusted side.
import { builtinModules } from 'node:module';
import { createHash } from 'node:crypto';
import { readFile, realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import * as esbuild from 'esbuild';
import { TyError } from '../../core/errors.js';
import { sourceFileRecord } from '../../core/manifest/source-file.js';
import type { ToolBundle } from '../../protocol/manifest.js';

/** The bundler and version recorded in every bundle (a different version may emit other bytes, hence another id). */
export const BUNDLER = `esbuild ${esbuild.version}`;

const BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
const SOURCE_EXT = /\.(m?[jt]s|cjs|cts|mts|jsx|tsx|json)$/;

/** `file:line:column` of an esbuild message (1-based column, as editors and V8 stack traces count). */
function where(m: esbuild.Message): string {
  const l = m.location;
  return l ? `${l.file}:${l.line}:${l.column + 1}` : '';
}

/** POSIX form of a path relative to the tool folder (the same on every machine). */
function rel(root: string, abs: string): string {
  return relative(root, abs).split(sep).join('/');
}

function inside(root: string, abs: string): boolean {
  const r = relative(root, abs);
  return r !== '' && !r.startsWith(`..${sep}`) && r !== '..' && !isAbsolute(r);
}

const sri = (bytes: Uint8Array): string => `sha256-${createHash('sha256').update(bytes).digest('base64')}`;

/**
 * Check that `source` parses as an ES module; `label` names it in the error (e.g. `execution.source`).
 * @throws TyError E_INVALID_MANIFEST `LABEL:LINE:COLUMN: parser message`
 */
export async function checkSyntax(source: string, label: string, loader: 'js' | 'ts' = 'js'): Promise<void> {
  try {
    await esbuild.transform(source, {
      loader,
      format: 'esm',
      sourcefile: label,
      logLevel: 'silent',
      tsconfigRaw: '{}',
    });
  } catch (e) {
    const first = (e as esbuild.TransformFailure).errors?.[0];
    if (!first) throw e;
    throw new TyError('E_INVALID_MANIFEST', `${where(first)}: syntax error: ${first.text}`, {
      path: 'execution.source',
      file: first.location?.file,
      line: first.location?.line,
      column: (first.location?.column ?? 0) + 1,
    });
  }
}

/** The package a node_modules file belongs to: its folder (relative, POSIX), e.g. `node_modules/@scope/pkg`. */
function packageDirOf(relPath: string): string | undefined {
  const parts = relPath.split('/');
  let dir: string | undefined;
  for (let i = 0; i < parts.length - 1; i++) {
    if (parts[i] !== 'node_modules') continue;
    const scoped = parts[i + 1]?.startsWith('@');
    const end = scoped ? i + 3 : i + 2;
    if (end > parts.length - 1) break;
    dir = parts.slice(0, end).join('/');
    i = end - 1;
  }
  return dir;
}

async function readJson(path: string): Promise<Record<string, unknown> | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/**
 * Bundle `entry` (a file inside `folder`) with its relative imports and npm packages (resolved from `folder`, its
 * package.json and node_modules) into one ES module, deterministically: paths in the output, the metadata and the
 * source map are relative to the folder, and the same inputs give the same bytes on every machine.
 * Refused at add time, naming the import and where it is: a Node built-in (`fs`, `node:fs`), anything that
 * resolves outside the folder (after symlinks), a package that cannot be found, a file that does not parse.
 * A module that imports nothing is kept byte-exact (no bundling, no source map).
 * @returns the module source and the bundle record kept in the revision (protocol/manifest.ts ToolBundle)
 * @throws TyError E_INVALID_MANIFEST
 */
export async function bundleTool(folder: string, entry: string): Promise<{ source: string; bundle: ToolBundle }> {
  const root = await realpath(folder);
  const entryAbs = await realpath(join(root, entry));
  if (!inside(root, entryAbs))
    throw new TyError('E_INVALID_MANIFEST', `execution.sourceFile "${entry}" leaves the manifest's folder`, {
      path: 'execution.sourceFile',
    });
  const entryRel = rel(root, entryAbs);
  const isTs = /\.[cm]?tsx?$/.test(entryAbs);
  const guard: esbuild.Plugin = {
    name: 'tysandbox-tool-folder',
    setup(build) {
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData === 'inner') return undefined;
        const from = args.importer ? `${rel(root, args.importer)}` : entryRel;
        if (BUILTINS.has(args.path)) {
          return {
            errors: [
              {
                text: `import of the Node built-in "${args.path}" (from ${from}): a tool is bundled without Node's modules and reaches the outside through the capabilities in ctx`,
              },
            ],
          };
        }
        if (/^[a-z][a-z0-9+.-]*:/i.test(args.path))
          return {
            errors: [
              {
                text: `import of "${args.path}" (from ${from}): only files inside the tool's folder and its node_modules can be bundled`,
              },
            ],
          };
        const r = await build.resolve(args.path, {
          kind: args.kind,
          resolveDir: args.resolveDir,
          importer: args.importer,
          pluginData: 'inner',
        });
        if (r.errors.length > 0)
          return {
            errors: r.errors.map((e) => ({
              text: `cannot resolve "${args.path}" (from ${from}): ${e.text}; install it into the tool's folder (npm install there)`,
            })),
          };
        let real: string;
        try {
          real = await realpath(r.path);
        } catch {
          return { errors: [{ text: `cannot read "${args.path}" (from ${from})` }] };
        }
        if (!inside(root, real))
          return {
            errors: [
              {
                text: `import of "${args.path}" (from ${from}) resolves outside the tool's folder; keep every module and package inside it`,
              },
            ],
          };
        if (!SOURCE_EXT.test(real))
          return {
            errors: [
              {
                text: `import of "${args.path}" (from ${from}): ${rel(root, real)} is not a JavaScript, TypeScript or JSON module`,
              },
            ],
          };
        return { path: real };
      });
    },
  };
  let result: esbuild.BuildResult<{ write: false; metafile: true; outfile: string }>;
  try {
    result = await esbuild.build({
      absWorkingDir: root,
      entryPoints: [entryAbs],
      bundle: true,
      write: false,
      metafile: true,
      outfile: join(root, '__tysandbox_bundle.mjs'),
      format: 'esm',
      platform: 'neutral',
      mainFields: ['module', 'main'],
      conditions: ['import', 'default'],
      resolveExtensions: ['.mjs', '.js', '.ts', '.mts', '.cjs', '.cts', '.json'],
      target: 'es2022',
      sourcemap: 'external',
      sourcesContent: true,
      sourceRoot: '',
      legalComments: 'none',
      charset: 'utf8',
      logLevel: 'silent',
      tsconfigRaw: '{}',
      nodePaths: [],
      preserveSymlinks: false,
      plugins: [guard],
    });
  } catch (e) {
    const f = e as esbuild.BuildFailure;
    const first = f.errors?.[0];
    if (!first) throw e;
    const loc = where(first);
    const syntax = first.pluginName === '' && !/^(cannot resolve|import of)/.test(first.text) ? 'syntax error: ' : '';
    const more = f.errors.length > 1 ? ` (and ${f.errors.length - 1} more)` : '';
    throw new TyError('E_INVALID_MANIFEST', `${loc ? `${loc}: ` : ''}${syntax}${first.text}${more}`, {
      path: 'execution.sourceFile',
      ...(first.location
        ? { file: first.location.file, line: first.location.line, column: first.location.column + 1 }
        : {}),
    });
  }
  const inputsRel = Object.keys(result.metafile.inputs).sort();
  const inputs: ToolBundle['inputs'] = [];
  const packages = new Map<string, ToolBundle['packages'][number]>();
  for (const p of inputsRel) {
    const abs = join(root, p);
    const bytes = await readFile(abs);
    inputs.push({ path: p, bytes: bytes.byteLength, integrity: sri(bytes) });
    const pkgDir = packageDirOf(p);
    if (pkgDir && !packages.has(pkgDir)) {
      const pj = await readJson(join(root, pkgDir, 'package.json'));
      const name = typeof pj?.name === 'string' ? pj.name : pkgDir.slice(pkgDir.lastIndexOf('node_modules/') + 13);
      const version = typeof pj?.version === 'string' ? pj.version : '0.0.0';
      packages.set(pkgDir, { name, version, path: pkgDir });
    }
  }
  // Lockfile integrity (the registry tarball's), when the tool's package-lock.json lists the package.
  const lock = await readJson(join(root, 'package-lock.json'));
  const lockPkgs = (lock?.packages ?? {}) as Record<string, { integrity?: unknown; version?: unknown }>;
  for (const [dir, p] of packages) {
    const l = lockPkgs[dir];
    if (l && typeof l.integrity === 'string') p.integrity = l.integrity;
  }
  const direct = result.metafile.inputs[entryRel]?.imports ?? [];
  if (inputsRel.length === 1 && direct.length === 0) {
    const source = await readFile(entryAbs, 'utf8');
    if (!isTs) {
      await checkSyntax(source, entryRel);
      // The same record every host builds for a single-file tool (core/manifest/source-file.ts), so the ids agree.
      return { source, bundle: await sourceFileRecord(entryRel, await readFile(entryAbs)) };
    }
  }
  const out = result.outputFiles.find((f) => f.path.endsWith('.mjs'));
  const map = result.outputFiles.find((f) => f.path.endsWith('.map'));
  if (!out || !map) throw new TyError('E_INVALID_MANIFEST', 'the bundler produced no module');
  // The trailing sourceMappingURL comment names a file that does not exist in a sandbox; the map is kept in the
  // revision.
  const source = out.text.replace(/\n\/\/# sourceMappingURL=[^\n]*\n?$/, '\n');
  const sourceMap = normalizeMap(map.text, root);
  if (source.includes(root) || sourceMap.includes(root))
    throw new TyError(
      'E_INVALID_MANIFEST',
      "the bundle would contain the tool folder's absolute path; move the tool to a folder without unusual characters",
    );
  return {
    source,
    bundle: {
      entry: entryRel,
      bundler: BUNDLER,
      inputs,
      packages: [...packages.values()].sort((a, b) => a.path.localeCompare(b.path)),
      sourceMap,
    },
  };
}

/** The source map with `sources` relative to the tool folder (POSIX), no `sourceRoot`, keys in a fixed order. */
function normalizeMap(text: string, root: string): string {
  const m = JSON.parse(text) as {
    version: number;
    sources: string[];
    sourcesContent?: string[];
    mappings: string;
    names: string[];
  };
  const outDir = root;
  const sources = m.sources.map((s) => rel(root, join(outDir, s)));
  return JSON.stringify({
    version: m.version,
    sources,
    sourcesContent: m.sourcesContent ?? [],
    names: m.names,
    mappings: m.mappings,
  });
}
