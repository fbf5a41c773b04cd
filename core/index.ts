// Public surface of core/ (package export "./core"): host-agnostic logic every host builds on; trusted side.
export { TyError, isTyError, toTyError } from './errors.js';
export { canonicalJson } from './revisions/canonical.js';
export { inlineSourceFile, sourceFileRecord } from './manifest/source-file.js';
export { DOMAINS, contentId, cidOfBytes, documentBytes, isContentId, type Domain } from './revisions/cid.js';
export { Store, checkKey, KEY_RE, type StoreBackend } from './store/contract.js';
export { MemoryStoreBackend } from './store/memory.js';
export {
  ToolRegistry,
  parseRef,
  revisionId,
  type Binding,
  type NativeFunction,
  type ResolvedTool,
} from './revisions/registry.js';
export { parseManifest } from './manifest/parse.js';
export {
  compileDrafts,
  checkPersistable,
  persistTask,
  taskId,
  visibleToolSignatures,
  modelMessages,
  type CompileOptions,
} from './revisions/tasks.js';
export { ArgValidator, checkSchema } from './schema/validate.js';
export {
  Invoker,
  effectiveLimits,
  type InvokeOptions,
  type InvokeResult,
  type InvokerOptions,
  type PoolLike,
  type ToolIdentity,
} from './exec/invoke.js';
export { SandboxChannel, type SandboxPort, type ChannelOptions } from './exec/channel.js';
export { SandboxPool, type SandboxPoolOptions, type PoolCallOptions } from './exec/pool.js';
export type {
  AskChannel,
  Answer,
  CallLimits,
  CallOptions,
  CapabilityHandler,
  Gate,
  GateRequest,
  Principal,
  Question,
  SandboxInstance,
  SandboxRuntime,
  SandboxSpec,
} from './exec/runtime.js';
export { DEFAULT_LIMITS } from './exec/runtime.js';
export {
  createCapabilityHandler,
  capabilityFactory,
  type CapabilityDeps,
  type CapabilityFactoryOptions,
} from './capabilities/handler.js';
export {
  createMediatedFetch,
  accessOf,
  preflight,
  DEFAULT_FETCH_LIMITS,
  type FetchTransport,
  type MediatedFetch,
  type FetchLimits,
} from './capabilities/fetch/mediated.js';
export { judgeAddress, judgeHostname, isIpLiteral, type TargetVerdict } from './capabilities/fetch/address.js';
export { SecretBroker, SecretGrants, type SecretValues, type SecretGrant } from './capabilities/secrets.js';
export { ToolStorage, DEFAULT_STORAGE_QUOTA } from './capabilities/storage.js';
export {
  compilePolicy,
  decide,
  parseRule,
  suggestRule,
  PERMISSION_MODES,
  type PermissionMode,
  type Policy,
  type PolicyDecision,
  type Rule,
} from './policy/permissions.js';
export { PermissionGate, StoreDecisions, type GateDeps, type HookRunner } from './policy/gate.js';
export { StoreAuditLog, AUDIT_LOG, WITHHELD, type AuditRecord, type AuditSink } from './audit/trail.js';
export { PauseTracker, DEFAULT_PAUSE, type PauseConfig } from './policy/pause.js';
export { AskRouter, askRefusalError, DEFAULT_ASK_WAIT_MS, type Asker, type AskOutcome } from './ask/router.js';
export { sanitizeForDisplay, sanitizeInline, renderQuestion, MAX_LINE_CHARS } from './ask/text.js';
export {
  clientMessageRule,
  serverMessageRule,
  stripClientCapabilities,
  LineFramer,
  MAX_MESSAGE_BYTES,
} from './mcp/wire/messages.js';
export { checkToolArguments } from './mcp/bridge/args.js';
export { SessionPool, DEFAULT_POOL_LIMITS } from './mcp/upstream/pool.js';
export { mergedSchema, chooseTargets, NamespaceSchema, type Namespace } from './mcp/bridge/namespace.js';
export {
  RegistrationServer,
  ProtocolSession,
  DEFAULT_PROTOCOL_LIMITS,
  type RegistrationServerOptions,
  type SessionOptions,
  type ProtocolRunner,
  type RegistryAction,
} from './registration/server.js';
export {
  ProtocolClient,
  ProtocolError,
  httpTransport,
  type ClientTransport,
  type ClientOptions,
  type RunOptions,
} from './registration/client.js';
export { classifyInbound, rpcFailure, RPC_CODES, MAX_PROTOCOL_MESSAGE_BYTES } from './registration/rpc.js';
export { RegistrationRate } from './registration/limits.js';
