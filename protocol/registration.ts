// The registration protocol "tysandbox/1" (JSON-RPC 2.0): method names, params, results, notifications; pure data,
// crosses every client boundary.
import { z } from 'zod';
import { ErrorCodeSchema } from './errors.js';
import { RevisionIdSchema, ToolNameSchema } from './manifest.js';

/** The protocol version a client names in `initialize`; bumped on any incompatible change. */
export const REGISTRATION_PROTOCOL = 'tysandbox/1' as const;
/** Every version a server of this build speaks. */
export const SUPPORTED_PROTOCOLS: readonly string[] = [REGISTRATION_PROTOCOL];

/** The request methods, in the order `initialize` lists them. Names are fixed: clients rely on them. */
export const REGISTRATION_METHODS = [
  'initialize',
  'tool/add',
  'tool/list',
  'tool/show',
  'tool/activate',
  'tool/remove',
  'tool/run',
] as const;
export type RegistrationMethod = (typeof REGISTRATION_METHODS)[number];
/** The only notification a client may send (every other id-less message is refused). */
export const CANCEL_METHOD = '$/cancel' as const;
/** Notifications a server sends during a `tool/run`; each carries the request's `id`. */
export const PROGRESS_METHOD = '$/progress' as const;
export const LOG_METHOD = '$/log' as const;
/** The request the browser host sends to its embedding page to run a tool the page executes itself. */
export const PARENT_CALL_METHOD = 'tool/call' as const;

/** A JSON-RPC 2.0 id as this protocol accepts it: a string (at most 256 characters) or a safe integer. */
export const RpcIdSchema = z.union([
  z.string().max(256),
  z.number().int().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER),
]);
export type RpcId = z.infer<typeof RpcIdSchema>;

/** A client's self-description; `name` becomes its principal on the command line (`protocol:<name>`). */
export const ClientInfoSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'a client name is 1-64 characters of A-Z a-z 0-9 _ . -'),
  version: z.string().min(1).max(64),
});

export const InitializeParamsSchema = z.strictObject({
  protocolVersion: z.string().min(1).max(64),
  client: ClientInfoSchema,
});
export type InitializeParams = z.infer<typeof InitializeParamsSchema>;

/** The limits a server enforces, announced in `initialize`. Units: bytes, ms, counts. */
export const ProtocolLimitsSchema = z.strictObject({
  /** Largest message accepted, bytes (one NDJSON line, one HTTP body, one postMessage). */
  maxMessageBytes: z.number().int().positive(),
  /** Registration requests (tool/add, tool/activate, tool/remove) per principal per window. */
  registrationsPerWindow: z.number().int().positive(),
  /** The window of that rate, ms. */
  registrationWindowMs: z.number().int().positive(),
  /** `tool/run` requests in flight per connection. */
  maxConcurrentRuns: z.number().int().positive(),
  /** Largest `timeoutMs` of a `tool/run`, ms. */
  maxTimeoutMs: z.number().int().positive(),
});
export type ProtocolLimits = z.infer<typeof ProtocolLimitsSchema>;

export const InitializeResultSchema = z.strictObject({
  protocolVersion: z.literal(REGISTRATION_PROTOCOL),
  /** The principal this connection acts as (`protocol:<client>` or `origin:<origin>`). */
  principal: z.string(),
  methods: z.array(z.string()),
  limits: ProtocolLimitsSchema,
});
export type InitializeResult = z.infer<typeof InitializeResultSchema>;

export const ToolAddParamsSchema = z.strictObject({
  /** The manifest with its source inlined (protocol/manifest.ts ToolManifestSchema); checked by the host. */
  manifest: z.unknown(),
  /** The revision id the client computed; a different one is refused with E_INTEGRITY and nothing is stored. */
  expectRevision: RevisionIdSchema.optional(),
});
export const ToolAddResultSchema = z.strictObject({
  revision: RevisionIdSchema,
  name: ToolNameSchema,
  /** True when this revision is the name's active binding after the call. */
  active: z.boolean(),
  /** False when the identical revision was already stored. */
  created: z.boolean(),
});
export type ToolAddResult = z.infer<typeof ToolAddResultSchema>;

export const ToolListParamsSchema = z.strictObject({}).optional();
export const ToolListEntrySchema = z.strictObject({
  name: ToolNameSchema,
  /** The active revision, or null when the name has none. */
  active: RevisionIdSchema.nullable(),
  /** Installed revisions, oldest first; `addedAt` ISO 8601 UTC (null when the store predates it). */
  revisions: z.array(z.strictObject({ revision: RevisionIdSchema, addedAt: z.string().nullable() })),
});
export const ToolListResultSchema = z.array(ToolListEntrySchema);
export type ToolListResult = z.infer<typeof ToolListResultSchema>;

/** `NAME` (its active revision), `NAME@REV` (REV a full id or a unique prefix) or a unique revision id prefix. */
export const ToolRefSchema = z.string().min(1).max(512);

export const ToolShowParamsSchema = z.strictObject({ ref: ToolRefSchema });
export const ToolShowResultSchema = z.strictObject({
  name: ToolNameSchema,
  revision: RevisionIdSchema,
  active: z.boolean(),
  addedAt: z.string().nullable(),
  manifest: z.record(z.string(), z.unknown()),
});
export type ToolShowResult = z.infer<typeof ToolShowResultSchema>;

export const ToolActivateParamsSchema = z.strictObject({ name: ToolNameSchema, revision: z.string().min(1).max(256) });
export const ToolActivateResultSchema = z.strictObject({
  name: ToolNameSchema,
  revision: RevisionIdSchema,
  /** The revision that was active before, or null. */
  previous: RevisionIdSchema.nullable(),
});
export type ToolActivateResult = z.infer<typeof ToolActivateResultSchema>;

export const ToolRemoveParamsSchema = z.strictObject({ name: ToolNameSchema });
export const ToolRemoveResultSchema = z.strictObject({
  name: ToolNameSchema,
  /**
   * The revision that was active when the binding was removed, or null. Stored revisions stay (calls pinned to them
   * keep working).
   */
  previous: RevisionIdSchema.nullable(),
});
export type ToolRemoveResult = z.infer<typeof ToolRemoveResultSchema>;

export const ToolRunParamsSchema = z.strictObject({
  ref: ToolRefSchema,
  arguments: z.unknown().optional(),
  /** Wall-clock limit of this call, ms; clamped to the host maximum. */
  timeoutMs: z
    .number()
    .int()
    .positive()
    .max(24 * 3600 * 1000)
    .optional(),
  /** Run in a fresh sandbox destroyed afterwards. */
  disposable: z.boolean().optional(),
});
export type ToolRunParams = z.infer<typeof ToolRunParamsSchema>;
export const ToolRunResultSchema = z.strictObject({
  revision: RevisionIdSchema,
  result: z.unknown(),
  /** Feedback of post-call hooks, when any ran and said something. */
  feedback: z.array(z.string()).optional(),
});
export type ToolRunResult = z.infer<typeof ToolRunResultSchema>;

export const CancelParamsSchema = z.strictObject({ id: RpcIdSchema });

/** `$/progress`: where a `tool/run` is. `id` is the run request's id. */
export const ProgressParamsSchema = z.strictObject({
  id: RpcIdSchema,
  stage: z.enum(['resolved', 'running', 'done']),
  revision: RevisionIdSchema.optional(),
});
export type ProgressParams = z.infer<typeof ProgressParamsSchema>;
/** `$/log`: one line the tool wrote with console.* during the run with request `id` (raw text: render it inert). */
export const LogParamsSchema = z.strictObject({
  id: RpcIdSchema,
  level: z.enum(['debug', 'info', 'warn', 'error']),
  text: z.string().max(8192),
});
export type LogParams = z.infer<typeof LogParamsSchema>;

/** `tool/call` (browser host -> embedding page) for a revision with `execution.transport: "parent"`. */
export const ParentCallParamsSchema = z.strictObject({
  name: ToolNameSchema,
  revision: RevisionIdSchema,
  arguments: z.unknown(),
});
export type ParentCallParams = z.infer<typeof ParentCallParamsSchema>;
/** The page's answer: `{result}`; validated against the revision's outputSchema when it has one. */
export const ParentCallResultSchema = z.strictObject({ result: z.unknown() });

/** `error.data` of every protocol error: the stable code, and for manifests the field at fault. */
export const ProtocolErrorDataSchema = z.looseObject({ code: ErrorCodeSchema, path: z.string().optional() });

/** Params schema per request method (null-prototype table; `$/cancel` is a notification). */
export const REGISTRATION_PARAMS: Readonly<Record<RegistrationMethod, z.ZodType>> = Object.assign(
  Object.create(null) as Record<RegistrationMethod, z.ZodType>,
  {
    initialize: InitializeParamsSchema,
    'tool/add': ToolAddParamsSchema,
    'tool/list': ToolListParamsSchema,
    'tool/show': ToolShowParamsSchema,
    'tool/activate': ToolActivateParamsSchema,
    'tool/remove': ToolRemoveParamsSchema,
    'tool/run': ToolRunParamsSchema,
  },
);

/** Result types per method, for the typed client. */
export interface RegistrationResults {
  initialize: InitializeResult;
  'tool/add': ToolAddResult;
  'tool/list': ToolListResult;
  'tool/show': ToolShowResult;
  'tool/activate': ToolActivateResult;
  'tool/remove': ToolRemoveResult;
  'tool/run': ToolRunResult;
}
