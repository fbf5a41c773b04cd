// The linear memory of a QuickJS sandbox: its maximum for a heap limit, what an instance may hold (for a host's memory
// budget), and the watch on its growth that tells exhausted memory apart; shared by both hosts, sandbox side.
import { WASM_PAGE, type QuickJsWasmInfo } from './wasm.js';

/**
 * Linear memory pages for a heap limit of `memoryMb` MiB: static data and stack, the limit, and 1/16 of it (emscripten
 * grows the heap by at least 5% at a time, and dlmalloc keeps its own bookkeeping), at most the module's maximum.
 */
export function maxPagesFor(info: Pick<QuickJsWasmInfo, 'maxPages' | 'stackTop'>, memoryMb: number): number {
  const bytes = info.stackTop + memoryMb * 1024 * 1024 * (1 + 1 / 16);
  return Math.min(info.maxPages, Math.ceil(bytes / WASM_PAGE));
}

/** Static data and globals below the stack, counted whole whatever the module says, bytes. */
const STATIC_BYTES = 256 * 1024;

/**
 * What a sandbox whose linear memory is `linearBytes` long may hold, bytes: an upper bound of the pages it can have
 * touched, for a host's memory budget. The heap above the stack (grown on demand, so in use), the QuickJS stack limit
 * `stackBytes` (the rest of the reserved stack is never reached: QuickJS checks its depth) and STATIC_BYTES.
 */
export function heldBytesOf(info: Pick<QuickJsWasmInfo, 'stackTop'>, linearBytes: number, stackBytes: number): number {
  return Math.max(0, linearBytes - info.stackTop) + Math.min(info.stackTop, stackBytes + STATIC_BYTES);
}

/**
 * Watch a linear memory's growth: emscripten's heap resize tries three sizes (20%, 10% and 5% above the current one)
 * and fails only when all three do; three failed grows in a row therefore mean an allocation could not be served.
 * `onGrown` gets the new length in bytes after each growth.
 */
export function watchGrowth(memory: WebAssembly.Memory, onGrown?: (bytes: number) => void): { exhausted: boolean } {
  const state = { exhausted: false };
  const grow = WebAssembly.Memory.prototype.grow;
  let failures = 0;
  Object.defineProperty(memory, 'grow', {
    value: (delta: number) => {
      try {
        const r = grow.call(memory, delta);
        failures = 0;
        onGrown?.(memory.buffer.byteLength);
        return r;
      } catch (e) {
        if (++failures >= 3) state.exhausted = true;
        throw e;
      }
    },
  });
  return state;
}
