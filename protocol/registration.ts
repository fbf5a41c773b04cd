// The registration protocol "tysandbox/1" and "tysandbox/1.1" (JSON-RPC 2.0): method names, params, results,
// notifications; pure data, crosses every client boundary.
import { z } from 'zod';
import { ErrorCodeSchema } from './errors.js';
import { RevisionIdSchema, ToolNameSchema } from './manifest.js';
import {
  LIST_CHANGED_METHOD,
  PROGRESS_MESSAGE_MAX,
  REGISTRATION_PROTOCOL,
  REGISTRATION_PROTOCOL_V1,
  TOOL_LIST_MAX_PAGE,
  type RegistrationMethod,
} from './registration-names.js';

export {
  CANCEL_METHOD,
  DISCOVER_METHOD,
  LIST_CHANGED_METHOD,
  LOG_METHOD,
  PARENT_CALL_METHOD,
  PROGRESS_INTERVAL_MS,
  PROGRESS_MESSAGE_MAX,
  PROGRESS_METHOD,
  PROTOCOL_VERSION_RE,
  REGISTRATION_METHODS,
  REGISTRATION_METHODS_V1,
  REGISTRATION_PROTOCOL,
  REGISTRATION_PROTOCOL_V1,
  SUPPORTED_PROTOCOLS,
  TOOL_LIST_MAX_PAGE,
  TOOL_LIST_PAGE,
  type RegistrationMethod,
} from './registration-names.js';

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

/** 1.1: what a client asks for in `initialize`; a 1.0 server refuses the field (strict params). */
export const ClientCapabilitiesSchema = z.strictObject({
  /** Send this connection `tool/listChanged` when tools are added, activated or removed (by anyone). */
  notifications: z.boolean().optional(),
});
export const InitializeParamsSchema = z.strictObject({
  /** `tysandbox/1`, `tysandbox/1.1`; a later 1.x is answered with the highest 1.x the server speaks. */
  protocolVersion: z.string().min(1).max(64),
  client: ClientInfoSchema,
  capabilities: ClientCapabilitiesSchema.optional(),
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

/** 1.1: what the server will do for this connection. */
export const ServerCapabilitiesSchema = z.strictObject({
  /**
   * The change notifications this connection gets: `["tool/listChanged"]` when asked for and allowed (the principal
   * may read the registry, rule kind `registry(read)`), else empty.
   */
  notifications: z.array(z.literal(LIST_CHANGED_METHOD)),
});
export const InitializeResultSchema = z.strictObject({
  /** The version this connection speaks from now on. */
  protocolVersion: z.enum([REGISTRATION_PROTOCOL_V1, REGISTRATION_PROTOCOL]),
  /** The principal this connection acts as (`protocol:<client>` or `origin:<origin>`). */
  principal: z.string(),
  methods: z.array(z.string()),
  limits: ProtocolLimitsSchema,
  /** 1.1 only. */
  capabilities: ServerCapabilitiesSchema.optional(),
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

/** 1.0: no params. */
export const ToolListParamsV1Schema = z.strictObject({}).optional();
/** 1.1: a page of the list, sorted by name (UTF-16 code units, the same on every host and locale). */
export const ToolListParamsSchema = z
  .strictObject({
    /** `nextCursor` of the previous page; absent: the first page. Opaque: never build one. */
    cursor: z.string().min(1).max(512).optional(),
    /** Entries per page (default 100). */
    limit: z.number().int().min(1).max(TOOL_LIST_MAX_PAGE).optional(),
  })
  .optional();
export const ToolListEntrySchema = z.strictObject({
  name: ToolNameSchema,
  /** The active revision, or null when the name has none. */
  active: RevisionIdSchema.nullable(),
  /** Installed revisions, oldest first; `addedAt` ISO 8601 UTC (null when the store predates it). */
  revisions: z.array(z.strictObject({ revision: RevisionIdSchema, addedAt: z.string().nullable() })),
});
/** 1.0: every tool at once. */
export const ToolListResultSchema = z.array(ToolListEntrySchema);
export type ToolListResult = z.infer<typeof ToolListResultSchema>;
/**
 * 1.1: one page. `nextCursor` is present when more entries follow; a name added after the page was read that sorts
 * after the cursor is on a later page, one removed meanwhile is not; no name is listed twice.
 */
export const ToolListPageSchema = z.strictObject({
  tools: z.array(ToolListEntrySchema),
  nextCursor: z.string().min(1).max(512).optional(),
});
export type ToolListPage = z.infer<typeof ToolListPageSchema>;

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

/** How a run ended, in `$/progress` stage `done` (1.1). */
export const RunOutcomeSchema = z.enum(['ok', 'error', 'cancelled']);
export type RunOutcome = z.infer<typeof RunOutcomeSchema>;
/**
 * `$/progress`: where a `tool/run` is. `id` is the run request's id.
 * - 1.0: `resolved` (the reference resolved to `revision`), then `done` (the run ended, however it ended).
 * - 1.1: `queued` (resolved to `revision`, waiting for the gate, a person's answer or its sandbox), `started` (the
 *   tool's code runs), any number of `progress` (`fraction` 0..1 and an optional `message` the tool reported with
 *   `ctx.progress`, at most one per 100 ms), then `done` with `outcome` (`ok`, `error` with the error's `code`, or
 *   `cancelled` after `$/cancel`). A run refused before it started goes from `queued` to `done`.
 */
export const ProgressParamsSchema = z.strictObject({
  id: RpcIdSchema,
  stage: z.enum(['resolved', 'running', 'done', 'queued', 'started', 'progress']),
  revision: RevisionIdSchema.optional(),
  /** `progress`: how far the tool says it is, 0 (nothing done) to 1 (all done). */
  fraction: z.number().min(0).max(1).optional(),
  /** `progress`: the tool's own words (raw text from the sandbox: render it inert). */
  message: z.string().max(PROGRESS_MESSAGE_MAX).optional(),
  /** `done` (1.1): how the run ended. */
  outcome: RunOutcomeSchema.optional(),
  /** `done` with outcome `error` or `cancelled`: the stable code the response carries. */
  code: ErrorCodeSchema.optional(),
});
export type ProgressParams = z.infer<typeof ProgressParamsSchema>;
/** `$/log`: one line the tool wrote with console.* during the run with request `id` (raw text: render it inert). */
export const LogParamsSchema = z.strictObject({
  id: RpcIdSchema,
  level: z.enum(['debug', 'info', 'warn', 'error']),
  text: z.string().max(8192),
});
export type LogParams = z.infer<typeof LogParamsSchema>;

/** One change of the tool list: a revision `added` under a name, a name `activated` to a revision, a name `removed`. */
export const ToolChangeSchema = z.strictObject({
  name: ToolNameSchema,
  change: z.enum(['added', 'activated', 'removed']),
  /** `added`: the new revision; `activated`: the revision now active; `removed`: the one that was active. */
  revision: RevisionIdSchema.optional(),
});
export type ToolChange = z.infer<typeof ToolChangeSchema>;
/**
 * `tool/listChanged` (1.1, server -> client, only to connections that asked in `initialize`): changes seen since the
 * last one, by this connection, another one, the app's own UI or another process sharing the store. A client that
 * keeps a copy of the list reads it again (`tool/list`); `changes` says what to look at first (at most 500 a message).
 */
export const ListChangedParamsSchema = z.strictObject({ changes: z.array(ToolChangeSchema).max(500) });
export type ListChangedParams = z.infer<typeof ListChangedParamsSchema>;

/** `rpc.discover` takes no params and answers the OpenRPC 1.3 document of this protocol (docs/openrpc.json). */
export const DiscoverParamsSchema = z.strictObject({}).optional();

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

/** Params schema per request method in 1.1 (null-prototype table; `$/cancel` is a notification). */
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
    'rpc.discover': DiscoverParamsSchema,
  },
);
/** Params schemas a 1.0 connection is held to where they differ from 1.1's. */
export const REGISTRATION_PARAMS_V1: Readonly<Partial<Record<RegistrationMethod, z.ZodType>>> = Object.assign(
  Object.create(null) as Partial<Record<RegistrationMethod, z.ZodType>>,
  { 'tool/list': ToolListParamsV1Schema },
);

/** Result types per method, for the typed client. */
export interface RegistrationResults {
  initialize: InitializeResult;
  'tool/add': ToolAddResult;
  /** 1.1 answers a page; a 1.0 connection gets the whole list as an array (ToolListResult). */
  'tool/list': ToolListPage;
  'tool/show': ToolShowResult;
  'tool/activate': ToolActivateResult;
  'tool/remove': ToolRemoveResult;
  'tool/run': ToolRunResult;
  'rpc.discover': Record<string, unknown>;
}
