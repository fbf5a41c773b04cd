// Public API of `tysandbox/protocol` (package export "./protocol"): zod schemas and inferred types of what crosses a
// boundary; pure data.
//
// This file is the complete public surface of the entry: named exports only, no wildcards. Each member is used outside
// protocol/ (by core, a host, the chat app or a test); anything added here becomes public API. The other schemas of
// these modules are building blocks of the ones listed.

// Errors: the stable codes and the wire error shape
export { ERROR_CODES, ErrorCodeSchema, WireErrorSchema, type ErrorCode, type WireError } from './errors.js';

// Tool manifests
export {
  ToolManifestSchema,
  ToolNameSchema,
  TOOL_NAME_START_RE,
  TOOL_NAME_START_RULE,
  OriginPatternSchema,
  PythonPackageSchema,
  type ToolManifest,
  type ToolBundle,
} from './manifest.js';

// Tasks: a conversation's path, as the model and the tools see it
export {
  TaskSchema,
  DraftTaskSchema,
  AttachmentSchema,
  type Attachment,
  type Task,
  type DraftTask,
  type TaskContent,
  type ToolSignature,
} from './task.js';

// The sandbox wire protocol (host <-> sandbox) and the mediated fetch's request and response
export {
  PROTOCOL_VERSION,
  CAPABILITY_NAMES,
  SandboxMessageSchema,
  ResultMessageSchema,
  CapabilityRequestSchema,
  FetchRequestSchema,
  type CapabilityName,
  type HostMessage,
  type SandboxMessage,
  type FetchRequest,
  type FetchResponse,
} from './wire.js';

// The registration protocol (tysandbox/1): methods, their params and results
export {
  REGISTRATION_PROTOCOL,
  SUPPORTED_PROTOCOLS,
  REGISTRATION_METHODS,
  REGISTRATION_PARAMS,
  CANCEL_METHOD,
  PROGRESS_METHOD,
  LOG_METHOD,
  PARENT_CALL_METHOD,
  CancelParamsSchema,
  ParentCallResultSchema,
  type RegistrationMethod,
  type RegistrationResults,
  type RpcId,
  type InitializeParams,
  type InitializeResult,
  type ProtocolLimits,
  type ToolListResult,
  type ToolRunResult,
  type ProgressParams,
  type LogParams,
  type ParentCallParams,
} from './registration.js';
