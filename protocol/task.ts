// Task-tree schemas (messages, function calls, results, lexically scoped tool definitions); pure data.
import { z } from 'zod';
import { RevisionIdSchema, ToolManifestSchema, ToolNameSchema } from './manifest.js';
import { WireErrorSchema } from './errors.js';

/** A task id: a CIDv1 string over the canonical task document (see core/revisions/tasks.ts). */
export const TaskIdSchema = z.string().regex(/^b[a-z2-7]{20,200}$/);
export type TaskId = z.infer<typeof TaskIdSchema>;

/**
 * A file attached to a person's message, named by its content: the bytes are kept by the host that shows the
 * conversation (the chat app's file store) under `sha256`, so the task id covers them. `toTools`: the file is handed to
 * tools only; the model sees a reference (`attachment:<first 12 hex of sha256>/<name>`), never the content.
 */
export const AttachmentSchema = z.strictObject({
  name: z.string().min(1).max(255),
  mediaType: z.string().min(1).max(127),
  bytes: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  toTools: z.boolean().optional(),
});
export type Attachment = z.infer<typeof AttachmentSchema>;

export const MessageContentSchema = z.strictObject({
  type: z.literal('message'),
  text: z.string(),
  /** Files attached to a user message (at most 20). */
  attachments: z.array(AttachmentSchema).max(20).optional(),
});
export const FunctionCallContentSchema = z.strictObject({
  type: z.literal('functioncall'),
  name: ToolNameSchema,
  arguments: z.record(z.string(), z.unknown()),
  /** Pinned at compile time; absent only in drafts. */
  toolRevision: RevisionIdSchema.optional(),
  /** Pinned settings revision for the tool, when it has settings. */
  settingsRevision: RevisionIdSchema.optional(),
});
export const ToolResultContentSchema = z.strictObject({
  type: z.literal('toolresult'),
  /** The function-call task this answers. */
  callTask: TaskIdSchema.optional(),
  toolRevision: RevisionIdSchema.optional(),
  result: z.unknown(),
});
/**
 * A lexically scoped tool definition: visible to this task's descendants only; never installed in the
 * registry. It holds sandboxed code, or a declarative binding to a pinned registry revision.
 */
export const ToolDefinitionContentSchema = z.strictObject({
  type: z.literal('tooldefinition'),
  definition: z.union([
    z.strictObject({ manifest: ToolManifestSchema }),
    z.strictObject({ binding: z.strictObject({ name: ToolNameSchema, toolRevision: RevisionIdSchema }) }),
  ]),
});
export const ErrorContentSchema = z.strictObject({ type: z.literal('error'), error: WireErrorSchema });

export const TaskContentSchema = z.discriminatedUnion('type', [
  MessageContentSchema,
  FunctionCallContentSchema,
  ToolResultContentSchema,
  ToolDefinitionContentSchema,
  ErrorContentSchema,
]);
export type TaskContent = z.infer<typeof TaskContentSchema>;

export const TaskRoleSchema = z.enum(['system', 'user', 'assistant', 'function']);

/** A draft: not yet compiled; has no id. `parent` is a compiled task id or an index into the same batch. */
export const DraftTaskSchema = z.strictObject({
  role: TaskRoleSchema,
  parent: z.union([TaskIdSchema, z.number().int().nonnegative()]).optional(),
  content: TaskContentSchema,
  /** completed executable tasks carry their result; persistence checks their pinning. */
  state: z.enum(['queued', 'completed', 'failed']).optional(),
});
export type DraftTask = z.infer<typeof DraftTaskSchema>;

/** A compiled task: content-addressed, every function call pinned. */
export const TaskSchema = z.strictObject({
  id: TaskIdSchema,
  role: TaskRoleSchema,
  parent: TaskIdSchema.optional(),
  content: TaskContentSchema,
  state: z.enum(['queued', 'completed', 'failed']).optional(),
});
export type Task = z.infer<typeof TaskSchema>;

/** The provider-facing signature compiled from visible tool definitions. */
export const ToolSignatureSchema = z.strictObject({
  name: ToolNameSchema,
  description: z.string(),
  parameters: z.record(z.string(), z.unknown()),
});
export type ToolSignature = z.infer<typeof ToolSignatureSchema>;
