// Test helper: the stable code a promise rejects with ('no error' when it resolves); test side.
import { TyError } from '../../core/errors.js';

export async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return e instanceof TyError ? e.code : `not a TyError: ${String(e)}`;
  }
  return 'no error';
}

/** The TyError a promise rejects with; anything else (or no rejection) fails the test. */
export async function rejection(p: Promise<unknown>): Promise<TyError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof TyError) return e;
    throw e;
  }
  throw new Error('expected a rejection');
}
