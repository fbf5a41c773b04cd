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
