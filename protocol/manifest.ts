// Tool manifest and revision id schemas; pure data, crosses every boundary (CLI, protocol clients, browser).
import { z } from 'zod';
import {
  ORIGIN_PATTERN_RE,
  PURE_WHEEL_RE,
  REVISION_ID_RE,
  REQUESTED_SECRET_RE,
  SHA256_HEX_RE,
  SRI_SHA256_RE,
  TOOL_NAME_RE,
  TOOL_NAME_RULE,
  TOOL_PATH_RE,
} from './names.js';

/** A tool name: 1 to 64 of `[a-zA-Z0-9_-]` (the function-name rule providers share). */
export const ToolNameSchema = z.string().regex(TOOL_NAME_RE, TOOL_NAME_RULE);
export { TOOL_NAME_START_RE, TOOL_NAME_START_RULE } from './names.js';

/**
 * A tool revision id: a CIDv1 string (base32, multibase prefix `b`) over the canonical manifest document (see
 * core/revisions/cid.ts).
 * See core/revision.ts for the codec.
 */
export const RevisionIdSchema = z
  .string()
  .regex(REVISION_ID_RE, 'a revision id is a base32 CIDv1 string starting with "b"');
export type RevisionId = z.infer<typeof RevisionIdSchema>;

/** A JSON Schema object (draft 2020-12); validated strictly by core/schema/validate.ts at install time, not here. */
export const JsonSchemaSchema = z.record(z.string(), z.unknown());

/**
 * An origin as used in capability requests and rules: `https://host[:port]`, `https://[IPv6]:port` or
 * `https://*.example.com`.
 */
export const OriginPatternSchema = z
  .string()
  .regex(ORIGIN_PATTERN_RE, 'an origin is https://host[:port], https://[IPv6][:port] or https://*.domain');

/** Capabilities a revision requests: an upper bound; grants still come from rules or a person. */
export const RequestedCapabilitiesSchema = z.strictObject({
  fetch: z
    .array(z.strictObject({ origin: OriginPatternSchema, access: z.enum(['read', 'write', '*']) }))
    .max(64)
    .optional(),
  storage: z
    .strictObject({
      quotaBytes: z
        .number()
        .int()
        .positive()
        .max(64 * 1024 * 1024)
        .optional(),
    })
    .optional(),
  secrets: z.array(z.string().regex(REQUESTED_SECRET_RE)).max(64).optional(),
  subtasks: z.boolean().optional(),
  resolveInvocation: z.array(ToolNameSchema).max(64).optional(),
  /** Folder grants for the CLI host's OS sandbox; canonicalized with realpath by the host. */
  folders: z
    .array(z.strictObject({ path: z.string().min(1).max(4096), access: z.enum(['read', 'write']) }))
    .max(16)
    .optional(),
});
export type RequestedCapabilities = z.infer<typeof RequestedCapabilitiesSchema>;

/** A path relative to a tool's folder, POSIX separators, no `..` segment and no leading `/`. */
const ToolPathSchema = z
  .string()
  .min(1)
  .max(4096)
  .regex(TOOL_PATH_RE, 'a path relative to the tool folder, with / separators and no . or .. segment');

/**
 * What a bundled revision was made from (recorded at add time, hashed with the manifest): the entry module, the
 * bundler and its version, every input file with its size and sha256 integrity (SRI form), every npm package
 * with its version (and the lockfile's integrity when the tool's package-lock.json lists it), and the source map
 * (v3 JSON text, `sources` relative to the tool folder, with their content) that maps stack frames back.
 */
export const ToolBundleSchema = z.strictObject({
  entry: ToolPathSchema,
  /** `esbuild 0.28.2`, or `none` when the entry imports nothing and is kept byte-exact. */
  bundler: z.string().min(1).max(64),
  inputs: z
    .array(
      z.strictObject({
        path: ToolPathSchema,
        bytes: z.number().int().nonnegative(),
        integrity: z.string().regex(SRI_SHA256_RE),
      }),
    )
    .min(1)
    .max(20000),
  packages: z
    .array(
      z.strictObject({
        name: z.string().min(1).max(214),
        version: z.string().min(1).max(256),
        path: ToolPathSchema,
        integrity: z.string().max(512).optional(),
      }),
    )
    .max(5000),
  sourceMap: z
    .string()
    .max(16 * 1024 * 1024)
    .optional(),
});
export type ToolBundle = z.infer<typeof ToolBundleSchema>;

export const SandboxedCodeSchema = z.strictObject({
  kind: z.literal('sandboxed-code'),
  runtime: z.enum(['javascript', 'python']),
  /** ES module source (JavaScript: default export `async (args, ctx) => result`) or Python source. */
  source: z
    .string()
    .min(1)
    .max(4 * 1024 * 1024),
  /**
   * The JavaScript engine, part of the revision: `node` (default on the command line), `deno`, or `quickjs` (QuickJS in
   * WebAssembly, the same on both hosts: many sandboxes per process or frame, each its own WebAssembly instance, exact
   * memory and time limits, no file system; JavaScript only). The browser runs `node` and `deno` revisions in its
   * worker engine. docs/manifest.md says when to choose which.
   */
  engine: z.enum(['node', 'deno', 'quickjs']).optional(),
  /** Python only: keep the in-memory file system between calls of a retained sandbox. */
  retainState: z.boolean().optional(),
  /** JavaScript from files: what `source` was bundled from, and its source map. */
  bundle: ToolBundleSchema.optional(),
});
export const TrustedNativeSchema = z.strictObject({
  kind: z.literal('trusted-native'),
  /** Key of the in-memory native function registered by the application; never stored code. */
  entry: z.string().min(1).max(128),
});
export const ExternalServiceSchema = z.strictObject({
  kind: z.literal('external-service'),
  /** The bridged service, e.g. an MCP server definition name. */
  serviceId: z.string().min(1).max(128),
  /** The tool's name at that service. */
  tool: z.string().min(1).max(256).optional(),
  /**
   * Who executes it: `mcp` (default: the MCP bridge) or `parent` (the page embedding the browser app runs it
   * itself and answers a `tool/call` request; browser host only, see docs/protocol.md).
   */
  transport: z.enum(['mcp', 'parent']).optional(),
});
export const ExecutionSchema = z.discriminatedUnion('kind', [
  SandboxedCodeSchema,
  TrustedNativeSchema,
  ExternalServiceSchema,
]);
export type Execution = z.infer<typeof ExecutionSchema>;

/**
 * A pure-Python wheel by file name and sha-256 (PEP 427 name ending in `-none-any.whl`). The CLI loads it from the
 * folder of the manifest it was added from, the browser from the app's asset folder; both check the digest first.
 */
export const PythonPackageSchema = z.strictObject({
  file: z
    .string()
    .max(200)
    .regex(PURE_WHEEL_RE, 'only pure-Python wheels are supported: a wheel file name ending in -none-any.whl'),
  sha256: z.string().regex(SHA256_HEX_RE, 'sha256 is 64 lower-case hex digits'),
});
export type PythonPackage = z.infer<typeof PythonPackageSchema>;

/** A tool manifest as hashed into a revision (source inlined). */
export const ToolManifestSchema = z.strictObject({
  name: ToolNameSchema,
  description: z.string().max(8192),
  parameters: JsonSchemaSchema,
  outputSchema: JsonSchemaSchema.optional(),
  execution: ExecutionSchema,
  capabilities: RequestedCapabilitiesSchema.optional(),
  /** Python revisions only: pure-Python wheels installed into the interpreter before the first call. */
  python: z.strictObject({ packages: z.array(PythonPackageSchema).max(32) }).optional(),
  /**
   * A JSON Schema (draft 2020-12, `"type": "object"`) of values a person configures for this revision (units, a base
   * URL, a default): stored as settings revisions bound to the tool revision, read by the tool as `ctx.settings`.
   * Never secrets: a field named like one, or marked `writeOnly`, is refused (core/revisions/settings.ts).
   */
  settings: JsonSchemaSchema.optional(),
  /** Per-call limits the tool asks for; the host clamps them to its own maxima. */
  limits: z
    .strictObject({
      timeoutMs: z
        .number()
        .int()
        .positive()
        .max(24 * 3600 * 1000)
        .optional(),
      outputBytes: z
        .number()
        .int()
        .positive()
        .max(64 * 1024 * 1024)
        .optional(),
      memoryMb: z.number().int().positive().max(16384).optional(),
    })
    .optional(),
});
export type ToolManifest = z.infer<typeof ToolManifestSchema>;

/**
 * The input form accepted by the command line's `tool add`: `sourceFile` (relative to the manifest) instead of
 * `source`.
 */
export const ToolManifestInputSchema = ToolManifestSchema.extend({
  execution: z.discriminatedUnion('kind', [
    SandboxedCodeSchema.extend({
      source: z
        .string()
        .min(1)
        .max(4 * 1024 * 1024)
        .optional(),
      sourceFile: z.string().min(1).max(4096).optional(),
    }),
    TrustedNativeSchema,
    ExternalServiceSchema,
  ]),
});
export type ToolManifestInput = z.infer<typeof ToolManifestInputSchema>;
