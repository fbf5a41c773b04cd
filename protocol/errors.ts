// Stable error codes and the wire error shape; pure data shared by every side of every boundary.
import { z } from 'zod';
import { ERROR_CODES, type ErrorCode } from './names.js';

export { ERROR_CODES, type ErrorCode } from './names.js';
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
  // biome-ignore lint/complexity/noBannedTypes: {} is the empty intersection member when there is no value
  ({ ok: true } & (T extends undefined ? {} : { value: T })) | { ok: false; code: ErrorCode; message: string };
