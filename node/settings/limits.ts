// Bounds of the settings file's fields that its zod schema (schema.ts) and its plain check (check.ts) share; Node
// host, trusted side.

/** A hook's time limit when the settings give none, ms. */
export const DEFAULT_HOOK_TIMEOUT_MS = 60_000;
/** The longest time limit a hook may be given, ms. */
export const MAX_HOOK_TIMEOUT_MS = 600_000;
