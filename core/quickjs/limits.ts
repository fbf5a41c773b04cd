// Limits every QuickJS sandbox shares, as plain numbers: importable by the hosts' trusted sides without loading QuickJS
// itself (core/quickjs/instance.ts applies them inside the sandbox host); host-agnostic, trusted side.

/** Smallest memory limit a QuickJS sandbox gets, MiB: the guest runtime itself needs about 1 MiB. */
export const MIN_MEMORY_MB = 4;
/** Default QuickJS stack limit, bytes (node/quickjs/runtime.ts DEFAULT_STACK_KB says why this size). */
export const DEFAULT_STACK_BYTES = 512 * 1024;
/**
 * Writable memory each QuickJS sandbox maps beyond what it holds, MiB: its linear memory starts above the pinned
 * binary's 5 MiB stack region (core/quickjs/wasm.ts QuickJsWasmInfo.stackTop, 5 333 088 bytes), mapped read-write whole
 * although QuickJS's stack limit keeps all but DEFAULT_STACK_BYTES of it untouched (memory.ts heldBytesOf). Such pages
 * take no RAM, but RLIMIT_DATA counts them (Linux counts private writable mappings), so a sandbox host process's data
 * limit leaves this much room per sandbox it may hold (node/os-sandbox/limits.ts quickJsHostLimits).
 */
export const LINEAR_RESERVE_MB = 6;
