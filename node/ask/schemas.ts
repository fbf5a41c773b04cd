// zod schemas of the waiting-question store's files (questions, forms, answers); Node host, trusted side.
// Loaded by node/ask/store.ts when a question is stored or read, so a host that never asks never loads zod for them.
import { z } from 'zod';
import type { QuestionForm } from '../../core/exec/runtime.js';
import { QUESTION_ID_RE } from './question-id.js';

const Text = (max: number) => z.string().max(max);
/** A form field as stored (core/exec/runtime.ts FormField). */
export const FormFieldSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
  type: z.enum(['string', 'number', 'integer', 'boolean']),
  title: Text(200).optional(),
  description: Text(600).optional(),
  required: z.boolean(),
  default: z.union([Text(4096), z.number(), z.boolean()]).optional(),
  options: z
    .array(z.strictObject({ value: Text(4096), label: Text(200).optional() }))
    .max(100)
    .optional(),
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

export const HintsSchema = z
  .strictObject({
    readOnlyHint: z.boolean(),
    destructiveHint: z.boolean(),
    idempotentHint: z.boolean(),
    openWorldHint: z.boolean(),
  })
  .partial();
export const ScopeSchema = z.enum(['once', 'session', 'permanent']);
/** The question as stored: raw text (sanitized on display), never a terminal code. */
export const StoredQuestionSchema = z.strictObject({
  v: z.literal(1),
  id: z.string().regex(QUESTION_ID_RE),
  createdAt: z.number().int().nonnegative(),
  /** The asking process; a question whose asker is gone is stale. */
  pid: z.number().int().positive(),
  title: z.string().max(4096),
  details: z.array(z.string().max(65_536)).max(256),
  suggestedRule: z.string().max(4096).optional(),
  hints: HintsSchema.optional(),
  scopes: z.array(ScopeSchema).max(3).optional(),
  /** A form to fill in (an MCP server's elicitation); answered with values. */
  form: QuestionFormSchema.optional(),
});
export type StoredQuestion = z.infer<typeof StoredQuestionSchema>;
export const StoredAnswerSchema = z.strictObject({
  v: z.literal(1),
  allow: z.boolean(),
  scope: ScopeSchema,
  answeredAt: z.number().int().nonnegative(),
  /** Which surface answered, e.g. `tycli answer`. */
  by: z.string().max(128),
  /** A form question's values (checked against its form). */
  values: FormValuesSchema.optional(),
});
export type StoredAnswer = z.infer<typeof StoredAnswerSchema>;
