// Local error family with stable string codes; host-agnostic core, trusted side.
import type { ErrorCode, WireError } from '../protocol/errors.js';

/** A local error with a stable `code` (see docs/errors.md). `data` must never hold secrets or arguments. */
export class TyError extends Error {
  override name = 'TyError';
  readonly code: ErrorCode;
  readonly data: Record<string, unknown> | undefined;
  constructor(code: ErrorCode, message: string, data?: Record<string, unknown>) {
    super(message);
    this.code = code;
    this.data = data;
  }
  /** The wire form: `{code, message, data?}`; no stack, no host paths. */
  toWire(): WireError {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}

export function isTyError(e: unknown): e is TyError {
  return e instanceof TyError;
}

/** Rebuild any thrown value as a TyError without touching accessors beyond `code` and `message` strings. */
export function toTyError(e: unknown, fallback: ErrorCode = 'E_TOOL_FAILED'): TyError {
  if (e instanceof TyError) return e;
  let message = 'unknown error';
  try {
    if (e instanceof Error && typeof e.message === 'string') message = e.message;
    else if (typeof e === 'string') message = e;
  } catch {
    /* hostile getters: keep the default */
  }
  return new TyError(fallback, message.slice(0, 4096));
}
