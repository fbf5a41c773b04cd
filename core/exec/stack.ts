// Maps a tool's own stack frames (reported by the sandbox as line:column of its module) to its source files; core,
// trusted side.
import { SourceMapConsumer, type RawSourceMap } from 'source-map-js';
import type { ToolManifest } from '../../protocol/manifest.js';

/**
 * The URL the sandboxes give a tool's module (a `//# sourceURL` comment appended at load), so its frames can be
 * told from the host's. Frames the sandbox reports use it; nothing else is ever reported.
 */
export const TOOL_MODULE_URL = 'tysandbox:///tool.js';

/** A frame of the tool's own code as the sandbox reports it: 1-based line and column in the loaded module. */
export interface RawFrame {
  fn?: string;
  line: number;
  column: number;
}

/**
 * A frame mapped to the tool's source: `file` relative to the tool folder (or `source` for inline code), 1-based line
 * and column.
 */
export interface ToolFrame {
  function?: string;
  file: string;
  line: number;
  column: number;
}

const FN_RE = /^[\w$.<>\][ -]{1,128}$/;
const MAX_FRAMES = 32;

/** Validate frames from a sandbox (untrusted data): at most 32, integers in range, names of plain characters. */
export function checkFrames(v: unknown): RawFrame[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out: RawFrame[] = [];
  for (const f of v.slice(0, MAX_FRAMES)) {
    if (!f || typeof f !== 'object') continue;
    const { fn, line, column } = f as Record<string, unknown>;
    if (
      !Number.isSafeInteger(line) ||
      !Number.isSafeInteger(column) ||
      (line as number) < 1 ||
      (column as number) < 1 ||
      (line as number) > 1e8 ||
      (column as number) > 1e8
    )
      continue;
    out.push(
      typeof fn === 'string' && FN_RE.test(fn)
        ? { fn, line: line as number, column: column as number }
        : { line: line as number, column: column as number },
    );
  }
  return out.length > 0 ? out : undefined;
}

const consumers = new Map<string, SourceMapConsumer | null>();

function consumerFor(map: string): SourceMapConsumer | null {
  let c = consumers.get(map);
  if (c !== undefined) return c;
  try {
    c = new SourceMapConsumer(JSON.parse(map) as RawSourceMap);
  } catch {
    c = null;
  }
  if (consumers.size >= 16) consumers.delete(consumers.keys().next().value!);
  consumers.set(map, c);
  return c;
}

/**
 * Map frames to the tool's source files: through the revision's source map (execution.bundle.sourceMap), or, for
 * a module kept as written, to its entry file (or `source` for inline code) at the same line and column. Frames of
 * bundler glue that map nowhere are dropped.
 */
export function mapFrames(manifest: ToolManifest, frames: readonly RawFrame[]): ToolFrame[] {
  const ex = manifest.execution;
  if (ex.kind !== 'sandboxed-code') return [];
  const map = ex.bundle?.sourceMap;
  const c = map ? consumerFor(map) : null;
  const out: ToolFrame[] = [];
  for (const f of frames) {
    if (map) {
      if (!c) continue;
      const p = c.originalPositionFor({ line: f.line, column: f.column - 1 });
      if (p.source === null || p.line === null || p.column === null) continue;
      let fn = p.name ?? f.fn;
      // The bundler names an anonymous default export NAME_default; show it as the source does.
      if (fn === 'Module.default' || fn === defaultName(p.source)) fn = 'default';
      out.push({ ...(fn ? { function: fn } : {}), file: p.source, line: p.line, column: p.column + 1 });
    } else {
      const fn = f.fn === 'Module.default' ? 'default' : f.fn;
      out.push({ ...(fn ? { function: fn } : {}), file: ex.bundle?.entry ?? 'source', line: f.line, column: f.column });
    }
  }
  return out;
}

/** The name esbuild gives a module's anonymous default export: its file stem as an identifier + `_default`. */
function defaultName(source: string): string {
  const stem = (source.split('/').pop() ?? source).replace(/\.[^.]*$/, '');
  return `${stem.replace(/[^\w$]/g, '_')}_default`;
}

/** `    at fn (file:line:column)` lines, as V8 prints them. */
export function formatFrames(frames: readonly ToolFrame[]): string {
  return frames
    .map(
      (f) =>
        `    at ${f.function ? `${f.function} (${f.file}:${f.line}:${f.column})` : `${f.file}:${f.line}:${f.column}`}`,
    )
    .join('\n');
}

const URL_RE = /(?:([\w$.<>\][-]{1,128}) \()?tysandbox:\/\/\/tool\.js:(\d{1,9}):(\d{1,9})(\))?/g;

/** Rewrite every `[fn (]tysandbox:///tool.js:L:C[)]` in a log line to the source `fn (file:line:column)` it maps to. */
export function mapStackText(manifest: ToolManifest, text: string): string {
  if (!text.includes(TOOL_MODULE_URL)) return text;
  return text.replace(URL_RE, (whole, fn: string | undefined, l: string, c: string, close: string | undefined) => {
    const [m] = mapFrames(manifest, [{ ...(fn ? { fn } : {}), line: Number(l), column: Number(c) }]);
    if (!m) return whole;
    const at = `${m.file}:${m.line}:${m.column}`;
    return fn ? `${m.function ?? fn} (${at}${close ?? ''}` : `${at}${close ?? ''}`;
  });
}
