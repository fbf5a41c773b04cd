// Install-time syntax check of a tool's JavaScript source with a real parser (acorn), without running it; core, trusted side.
import { parse } from 'acorn';
import { TyError } from './errors.js';
import type { ToolManifest } from '../protocol/manifest.js';

/**
 * Parse a sandboxed JavaScript tool's `execution.source` as an ECMAScript module (acorn, `ecmaVersion: 'latest'`)
 * on the trusted side; nothing runs. Python sources are parsed by Pyodide when the sandbox loads them.
 * @throws TyError E_INVALID_MANIFEST `{ path: 'execution.source', line, column }` (1-based) naming where and what.
 */
export function checkToolSource(manifest: ToolManifest): void {
  const exec = manifest.execution;
  if (exec.kind !== 'sandboxed-code' || exec.runtime !== 'javascript') return;
  try {
    parse(exec.source, { ecmaVersion: 'latest', sourceType: 'module', allowHashBang: true });
  } catch (e) {
    const loc = (e as { loc?: { line?: unknown; column?: unknown } }).loc;
    const line = typeof loc?.line === 'number' ? loc.line : undefined;
    const column = typeof loc?.column === 'number' ? loc.column + 1 : undefined;
    const why = (e instanceof Error ? e.message : String(e)).replace(/\s*\(\d+:\d+\)$/, '').slice(0, 200);
    const at = line !== undefined && column !== undefined ? ` at line ${line}, column ${column}` : '';
    throw new TyError('E_INVALID_MANIFEST', `execution.source does not parse as a JavaScript module${at}: ${why}`, { path: 'execution.source', ...(line !== undefined ? { line } : {}), ...(column !== undefined ? { column } : {}) });
  }
}
