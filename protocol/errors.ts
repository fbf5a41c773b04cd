// Stable error codes and the wire error shape; pure data shared by every side of every boundary.
import { z } from 'zod';

/**
 * Every stable error code the product emits. Local errors carry one as `code`; wire errors carry one
 * inside `data.code` when the JSON-RPC numeric code is generic. See docs/errors.md for causes and fixes.
 */
export const ERROR_CODES = [
  'E_USAGE',
  'E_INVALID_MANIFEST',
  'E_UNKNOWN_TOOL',
  'E_INVALID_ARGS',
  'E_TIMEOUT',
  'E_OUTPUT_LIMIT',
  'E_TOOL_FAILED',
  'E_INTEGRITY',
  'E_CAPABILITY_DENIED',
  'E_APPROVAL_REQUIRED',
  'E_UNPINNED_TASK',
  'E_INVALID_TASK',
  'E_ABORTED',
  'E_SANDBOX_FAILED',
  'E_SANDBOX_UNAVAILABLE',
  'E_MEMORY_LIMIT',
  'E_PROTOCOL',
  'E_STORE',
  'E_FETCH_SCHEME',
  'E_FETCH_CREDENTIALS',
  'E_FETCH_TARGET',
  'E_FETCH_TOO_LARGE',
  'E_FETCH_FAILED',
  'E_STORAGE_QUOTA',
  'E_SECRET_DENIED',
  'E_INVALID_SETTINGS',
  'E_PAUSED',
  'E_HOOK_BLOCKED',
  'E_HOOK_FAILED',
  'E_MCP',
  'E_MCP_TIMEOUT',
  'E_MCP_CRASHED',
  'E_MCP_REDEFINED',
  'E_MCP_CORS',
  'E_MCP_UNREACHABLE',
  'E_MCP_REQUEST_STATE',
  'E_BUSY',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];
export const ErrorCodeSchema = z.enum(ERROR_CODES);

/** A wire error `{code, message, data?}` (JSON-RPC 2.0 error object shape, with a string code family). */
export const WireErrorSchema = z.strictObject({
  code: z.union([z.string().max(64), z.number().int()]),
  message: z.string().max(4096),
  data: z.unknown().optional(),
});
export type WireError = z.infer<typeof WireErrorSchema>;

/** The decision-object convention: core returns these instead of throwing across layers. */
export type Decision<T = undefined> =
  | ({ ok: true } & (T extends undefined ? {} : { value: T }))
  | { ok: false; code: ErrorCode; message: string };
