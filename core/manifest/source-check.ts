// Install-time syntax check of a tool's JavaScript source with a real parser (acorn), without running it; core, trusted
// side.
import { parse } from 'acorn';
import { TyError } from '../errors.js';
import type { ToolManifest } from '../../protocol/manifest.js';

/**
 * Parse a sandboxed JavaScript tool's `execution.source` as an ECMAScript module (acorn, `ecmaVersion: 'latest'`)
 * on the trusted side; nothing runs. Python sources are parsed by Pyodide when the sandbox loads them. A static
 * `import` / `export ... from` is refused (the source is one module; a bundle has none left). A dynamic `import()`
 * cannot be judged before it runs: at run time the engine's own modules are bounded by its permission model and
 * the OS sandbox (SECURITY.md).
 * @throws TyError E_INVALID_MANIFEST `{ path: 'execution.source', line, column, import? }` (1-based) naming where and
 *   what.
 */
export function checkToolSource(manifest: ToolManifest): void {
  const exec = manifest.execution;
  if (exec.kind !== 'sandboxed-code' || exec.runtime !== 'javascript') return;
  let program: {
    body: { type: string; source?: { value?: unknown; loc?: { start: { line: number; column: number } } } | null }[];
  };
  try {
    program = parse(exec.source, {
      ecmaVersion: 'latest',
      sourceType: 'module',
      allowHashBang: true,
      locations: true,
    }) as unknown as typeof program;
  } catch (e) {
    const loc = (e as { loc?: { line?: unknown; column?: unknown } }).loc;
    const line = typeof loc?.line === 'number' ? loc.line : undefined;
    const column = typeof loc?.column === 'number' ? loc.column + 1 : undefined;
    const why = (e instanceof Error ? e.message : String(e)).replace(/\s*\(\d+:\d+\)$/, '').slice(0, 200);
    const at = line !== undefined && column !== undefined ? ` at line ${line}, column ${column}` : '';
    throw new TyError('E_INVALID_MANIFEST', `execution.source does not parse as a JavaScript module${at}: ${why}`, {
      path: 'execution.source',
      ...(line !== undefined ? { line } : {}),
      ...(column !== undefined ? { column } : {}),
    });
  }
  // One module with nothing beside it: a static import names a Node built-in (refused in bundles too), a URL or a
  // file that is not there. Files and packages are bundled from a folder (execution.sourceFile, CLI).
  for (const node of program.body) {
    if (!STATIC_IMPORTS.has(node.type) || !node.source) continue;
    const spec = String(node.source.value).slice(0, 80);
    const loc = node.source.loc?.start;
    const line = loc?.line;
    const column = loc === undefined ? undefined : loc.column + 1;
    throw new TyError(
      'E_INVALID_MANIFEST',
      `execution.source${line !== undefined ? ` at line ${line}, column ${column}` : ''}: a static ` +
        `import of "${spec}": a tool's source is one module with no Node built-ins, files or packages ` +
        `beside it; reach the outside through the capabilities in ctx, and bundle files and packages ` +
        `from a folder (execution.sourceFile)`,
      { path: 'execution.source', ...(line !== undefined ? { line, column } : {}), import: spec },
    );
  }
}

const STATIC_IMPORTS = new Set(['ImportDeclaration', 'ExportAllDeclaration', 'ExportNamedDeclaration']);
