// The terminal progress line shown while a Python revision's sandbox starts Pyodide (tycli run on a TTY); Node host,
// trusted side.
import { packageRoot, type NodeSandboxRuntimeOptions } from '../sandbox/runtime.js';
import { pyodideAssets } from '../python/sandbox.js';

type Progress = NonNullable<NodeSandboxRuntimeOptions['onStartProgress']>;

const FRAMES = ['|', '/', '-', '\\'];

/**
 * A start-progress handler that draws one line on `stream` (a TTY) while Pyodide loads:
 * `Starting Python (Pyodide VERSION) in the sandbox… 1.2 s`, redrawn every `everyMs` (default 200 ms) and erased
 * when the sandbox is ready or failed. Nothing else is written; undefined when `stream` is not a terminal.
 */
export function pythonStartProgress(
  stream: NodeJS.WritableStream & { isTTY?: boolean },
  version: string,
  everyMs = 200,
): Progress | undefined {
  if (stream.isTTY !== true) return undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  let frame = 0;
  let started = 0;
  const draw = () => {
    const s = ((Date.now() - started) / 1000).toFixed(1);
    stream.write(
      `\r\x1b[2K${FRAMES[frame++ % FRAMES.length]} Starting Python (Pyodide ${version}) in the sandbox… ${s} s`,
    );
  };
  return (e) => {
    if (e.phase === 'start') {
      if (timer) return;
      started = Date.now();
      draw();
      timer = setInterval(draw, everyMs);
      timer.unref();
      return;
    }
    if (timer) clearInterval(timer);
    timer = undefined;
    stream.write('\r\x1b[2K');
  };
}

/** The Pyodide version of the manifest, or `?` when Pyodide is not installed. */
export function pyodideVersion(): string {
  try {
    return pyodideAssets(packageRoot()).version;
  } catch {
    return '?';
  }
}
