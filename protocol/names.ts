// The protocol's constants and patterns without their schemas (error codes, wire version, capability names, name and id
// patterns); pure data.
// Code that checks these by hand (the host's per-call paths) imports this module and never loads zod; the schemas in
// errors.ts, wire.ts and manifest.ts are built from the same values and re-export them.

/**
 * Every stable error code the product emits. Local errors carry one as `code`; wire errors carry one
 * inside `data.code` when the JSON-RPC numeric code is generic. See docs/errors.md for causes and fixes.
 */
export const ERROR_CODES = [
  'E_USAGE',
  'E_INVALID_MANIFEST',
  'E_UNKNOWN_TOOL',
  'E_INVALID_ARGS',
  'E_TIMEOUT',
  'E_OUTPUT_LIMIT',
  'E_TOOL_FAILED',
  'E_INTEGRITY',
  'E_CAPABILITY_DENIED',
  'E_APPROVAL_REQUIRED',
  'E_UNPINNED_TASK',
  'E_INVALID_TASK',
  'E_ABORTED',
  'E_SANDBOX_FAILED',
  'E_SANDBOX_UNAVAILABLE',
  'E_MEMORY_LIMIT',
  'E_PROTOCOL',
  'E_STORE',
  'E_FETCH_SCHEME',
  'E_FETCH_CREDENTIALS',
  'E_FETCH_TARGET',
  'E_FETCH_TOO_LARGE',
  'E_FETCH_FAILED',
  'E_STORAGE_QUOTA',
  'E_SECRET_DENIED',
  'E_INVALID_SETTINGS',
  'E_PAUSED',
  'E_HOOK_BLOCKED',
  'E_HOOK_FAILED',
  'E_MCP',
  'E_MCP_TIMEOUT',
  'E_MCP_CRASHED',
  'E_MCP_REDEFINED',
  'E_MCP_ENDED',
  'E_MCP_OVERSIZE',
  'E_MCP_GARBAGE',
  'E_MCP_CORS',
  'E_MCP_UNREACHABLE',
  'E_MCP_REQUEST_STATE',
  'E_BUSY',
  'E_INTERRUPTED',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** Bumped on any incompatible change; both sides refuse a message of another version. */
export const PROTOCOL_VERSION = 1 as const;

/** The capability names a sandbox may request; anything else fails closed. */
export const CAPABILITY_NAMES = [
  'fetch',
  'createSubtasksResult',
  'resolveInvocation',
  'storage.get',
  'storage.set',
  'storage.delete',
  'storage.list',
  'getSecret',
] as const;
export type CapabilityName = (typeof CAPABILITY_NAMES)[number];

/**
 * The parts of a sandbox call a `phase` message names (protocol/wire.ts PhaseMessageSchema): a Python module's
 * top-level code, then the tool's main. A time limit reached in a call says which one ran.
 */
export const CALL_PHASES = ['module', 'main'] as const;
export type CallPhase = (typeof CALL_PHASES)[number];

/** A tool name: 1 to 64 of `[a-zA-Z0-9_-]` (the function-name rule providers share); ToolNameSchema's pattern. */
export const TOOL_NAME_RE = /^[a-zA-Z0-9_-]{1,64}$/;
export const TOOL_NAME_RULE = 'tool names are 1-64 characters of a-z, A-Z, 0-9, _ and -';
/**
 * What a new revision's name must also do (checked at install, core/revisions/registry.ts parseManifest): start with a
 * letter
 * or digit, so a name never reads as a command-line option (`-rf`). ToolNameSchema stays the rule for references,
 * so a revision stored under an older name can still be found and removed.
 */
export const TOOL_NAME_START_RE = /^[a-zA-Z0-9]/;
export const TOOL_NAME_START_RULE =
  'tool names start with a letter or digit (a-z, A-Z, 0-9), never "-" or "_": a leading "-" reads as a command-line option';
/**
 * A revision or task id: a base32 CIDv1 string (multibase prefix `b`); RevisionIdSchema's and TaskIdSchema's pattern.
 */
export const REVISION_ID_RE = /^b[a-z2-7]{20,200}$/;
/** `https://host[:port]`, `https://[IPv6][:port]` or `https://*.domain`; OriginPatternSchema's pattern. */
export const ORIGIN_PATTERN_RE = /^https:\/\/((\*\.)?[a-z0-9.-]+|\[[0-9a-f:.]{2,45}\])(:\d{1,5})?$/i;
/** A secret name a manifest may request (capabilities.secrets). */
export const REQUESTED_SECRET_RE = /^[A-Za-z0-9_.-]{1,64}$/;
/**
 * A path relative to a tool's folder: POSIX separators, no `.` or `..` segment, no leading `/`, no `\` or control
 * character.
 */
export const TOOL_PATH_RE = /^(?!\/)(?!.*(^|\/)\.\.?(\/|$))[^\\\u0000-\u001f]+$/;
/** A sha256 integrity in SRI form (`sha256-` and 44 base64 characters). */
export const SRI_SHA256_RE = /^sha256-[A-Za-z0-9+/]{43}=$/;
/** A pure-Python wheel file name (PEP 427, `-none-any.whl`). */
export const PURE_WHEEL_RE = /^[A-Za-z0-9_.]+-[A-Za-z0-9_.!+]+(-[0-9][A-Za-z0-9_.]*)?-[A-Za-z0-9_.]+-none-any\.whl$/;
/** 64 lower-case hex digits. */
export const SHA256_HEX_RE = /^[0-9a-f]{64}$/;

/** True when `v` is a string ToolNameSchema accepts (the same test, without the schema). */
export const isToolName = (v: unknown): boolean => typeof v === 'string' && TOOL_NAME_RE.test(v);
/** True when `v` is a string RevisionIdSchema accepts. */
export const isRevisionId = (v: unknown): boolean => typeof v === 'string' && REVISION_ID_RE.test(v);
