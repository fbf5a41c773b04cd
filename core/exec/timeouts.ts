// What a call's time limit says when it is reached: which part of the call was running (the sandbox's start, a Python
// module's top-level code, the tool's function); core, trusted side.
import { TyError } from '../errors.js';
import type { CallPhase } from '../../protocol/names.js';

/**
 * Where a call was when its time limit was reached: `start` (the sandbox starting: the process, the runtime, and for
 * JavaScript the tool module's top-level code), `module` (a Python module's top-level code, run at each call unless
 * its state is retained), `main` (the tool's function: a JavaScript default export, a Python `main`).
 */
export type TimeoutPhase = 'start' | CallPhase;

/**
 * The E_TIMEOUT of a call that reached its time limit `limitMs` (ms) in `phase`, for a `runtime` revision; the sandbox
 * is destroyed by the caller. `data`: `{ phase, runtime, limitMs }` (docs/errors.md#e_timeout).
 */
export function timeoutError(limitMs: number, runtime: string, phase: TimeoutPhase): TyError {
  const python = runtime === 'python';
  const where =
    phase === 'start'
      ? python
        ? "while the Python runtime (Pyodide) started, before any of the tool's code ran (the start counts against the call's time limit)"
        : "while its module loaded (the load counts against the call's time limit)"
      : phase === 'module'
        ? "while its module's top-level code ran"
        : python
          ? 'while main() ran'
          : "while the tool's default export ran";
  return new TyError('E_TIMEOUT', `tool call exceeded ${limitMs} ms ${where}; sandbox destroyed`, {
    phase,
    runtime,
    limitMs,
  });
}
