// Public API of `tysandbox/core` (package export "./core"): the host-agnostic logic every host builds on; core, trusted
// side.
//
// This file is the complete public surface of the entry: named exports only, no wildcards. Each member is used outside
// core/ (by a host, the chat app, a test or a docs example), or is a type a listed member takes or returns. Anything
// added here becomes public API; what nothing outside uses stays internal. The MCP bridge has its own entry,
// `tysandbox/core/mcp` (core/mcp/index.ts).

// Errors: local errors with a stable code
export { TyError, isTyError, toTyError } from './errors.js';

// Revisions: content ids, canonical JSON, the registry of tools, manifests and their sources
export { canonicalJson } from './revisions/canonical.js';
export { cidOfBytes } from './revisions/cid.js';
export {
  ToolRegistry,
  parseRef,
  revisionId,
  type Binding,
  type NativeFunction,
  type ResolvedTool,
} from './revisions/registry.js';
export { parseManifest } from './manifest/parse.js';
export { inlineSourceFile, sourceFileRecord } from './manifest/source-file.js';
export { compileDrafts, persistTask, taskId, visibleToolSignatures, type CompileOptions } from './revisions/tasks.js';

// Stores: the contract both hosts implement, and the in-memory one
export { Store, checkKey, type StoreBackend } from './store/contract.js';
export { MemoryStoreBackend } from './store/memory.js';

// Running a call: the invoker, the sandbox channel and pool, the interfaces a host implements
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

// Capabilities: the handler, mediated fetch and its address policy, secrets, storage
export {
  createCapabilityHandler,
  capabilityFactory,
  type CapabilityDeps,
  type CapabilityFactoryOptions,
} from './capabilities/handler.js';
export {
  createMediatedFetch,
  DEFAULT_FETCH_LIMITS,
  type FetchTransport,
  type MediatedFetch,
  type FetchLimits,
} from './capabilities/fetch/mediated.js';
export { judgeAddress, type TargetVerdict } from './capabilities/fetch/address.js';
export { SecretBroker, SecretGrants, type SecretValues, type SecretGrant } from './capabilities/secrets.js';
export { ToolStorage, DEFAULT_STORAGE_QUOTA } from './capabilities/storage.js';

// Permissions, the gate, its audit trail and pauses
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
export { StoreAuditLog, type AuditRecord, type AuditSink } from './audit/trail.js';
export { PauseTracker, DEFAULT_PAUSE, type PauseConfig } from './policy/pause.js';

// Asking a person, and showing untrusted text
export { AskRouter, askRefusalError, DEFAULT_ASK_WAIT_MS, type Asker, type AskOutcome } from './ask/router.js';
export { sanitizeForDisplay, sanitizeInline, renderQuestion } from './ask/text.js';

// MCP pieces the Node host's bridge wiring uses (the bridge itself: tysandbox/core/mcp)
export { clientMessageRule, serverMessageRule, LineFramer, MAX_MESSAGE_BYTES } from './mcp/wire/messages.js';
export { checkToolArguments } from './mcp/bridge/args.js';
export { SessionPool } from './mcp/upstream/pool.js';
export { NamespaceSchema, type Namespace } from './mcp/bridge/namespace.js';

// The registration protocol: its server, its client, its JSON-RPC framing
export {
  RegistrationServer,
  ProtocolSession,
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
export { classifyInbound, rpcFailure, RPC_CODES } from './registration/rpc.js';
