// Limits every QuickJS sandbox shares, as plain numbers: importable by the hosts' trusted sides without loading QuickJS
// itself (core/quickjs/instance.ts applies them inside the sandbox host); host-agnostic, trusted side.

/** Smallest memory limit a QuickJS sandbox gets, MiB: the guest runtime itself needs about 1 MiB. */
export const MIN_MEMORY_MB = 4;
/** Default QuickJS stack limit, bytes (node/quickjs/runtime.ts DEFAULT_STACK_KB says why this size). */
export const DEFAULT_STACK_BYTES = 512 * 1024;
