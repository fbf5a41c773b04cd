// Form questions (MCP elicitation answered by a person) as stored and answered through the waiting-question store; Node host, trusted side.
import { z } from 'zod';
import { checkFormValues } from '../core/mcp/elicit.js';
import type { FormValues, QuestionForm } from '../core/runtime.js';

const Text = (max: number) => z.string().max(max);
/** A form field as stored (core/runtime.ts FormField). */
export const FormFieldSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
  type: z.enum(['string', 'number', 'integer', 'boolean']),
  title: Text(200).optional(),
  description: Text(600).optional(),
  required: z.boolean(),
  default: z.union([Text(4096), z.number(), z.boolean()]).optional(),
  options: z.array(z.strictObject({ value: Text(4096), label: Text(200).optional() })).max(100).optional(),
  format: z.enum(['email', 'uri', 'date', 'date-time']).optional(),
  minLength: z.number().optional(),
  maxLength: z.number().optional(),
  minimum: z.number().optional(),
  maximum: z.number().optional(),
  secret: z.boolean(),
});
export const QuestionFormSchema = z.strictObject({ message: Text(8192), fields: z.array(FormFieldSchema).max(32) });
export const FormValuesSchema = z.record(z.string().max(64), z.union([Text(65_536), z.number(), z.boolean()]));

/** The form of a question as it is stored, or undefined when it has none or it does not fit the schema. */
export function storedForm(form: QuestionForm | undefined): QuestionForm | undefined {
  if (form === undefined) return undefined;
  const r = QuestionFormSchema.safeParse(form);
  return r.success ? (r.data as QuestionForm) : undefined;
}

/**
 * Check an answer's values against a stored question's form: a form question answered yes needs values that fit
 * (core/mcp/elicit.ts checkFormValues, defaults filled in); values for a question without a form are refused.
 */
export function answerValues(form: QuestionForm | undefined, allow: boolean, values: Record<string, unknown> | undefined): { ok: true; values?: FormValues } | { ok: false; message: string } {
  if (form === undefined) return values === undefined ? { ok: true } : { ok: false, message: 'this question has no form; answer yes or no without --field' };
  if (!allow) return values === undefined ? { ok: true } : { ok: false, message: '--field goes with yes only (no declines the form)' };
  const c = checkFormValues(form, values ?? {});
  return c.ok ? { ok: true, values: c.values } : { ok: false, message: `the answer does not fit the form: ${c.message}` };
}
