// Form questions (MCP elicitation answered by a person) as stored and answered through the waiting-question store; Node
// host, trusted side.
import { checkFormValues } from '../../core/mcp/input/elicit.js';
import type { FormValues, QuestionForm } from '../../core/exec/runtime.js';

/**
 * Check an answer's values against a stored question's form: a form question answered yes needs values that fit
 * (core/mcp/input/elicit.ts checkFormValues, defaults filled in); values for a question without a form are refused.
 */
export function answerValues(
  form: QuestionForm | undefined,
  allow: boolean,
  values: Record<string, unknown> | undefined,
): { ok: true; values?: FormValues } | { ok: false; message: string } {
  if (form === undefined)
    return values === undefined
      ? { ok: true }
      : { ok: false, message: 'this question has no form; answer yes or no without --field' };
  if (!allow)
    return values === undefined
      ? { ok: true }
      : { ok: false, message: '--field goes with yes only (no declines the form)' };
  const c = checkFormValues(form, values ?? {});
  return c.ok
    ? { ok: true, values: c.values }
    : { ok: false, message: `the answer does not fit the form: ${c.message}` };
}
