// Public surface of core/ (package export "./core"): host-agnostic logic every host builds on; trusted side.
export { TyError, isTyError, toTyError } from './errors.js';
export { canonicalJson } from './canonical.js';
export { inlineSourceFile, sourceFileRecord } from './source-file.js';
export { DOMAINS, contentId, cidOfBytes, documentBytes, isContentId, type Domain } from './cid.js';
export { Store, checkKey, KEY_RE, type StoreBackend } from './store.js';
export { MemoryStoreBackend } from './memory-store.js';
export { ToolRegistry, parseRef, revisionId, type Binding, type NativeFunction, type ResolvedTool } from './registry.js';
export { parseManifest } from './manifest-parse.js';
export { compileDrafts, checkPersistable, persistTask, taskId, visibleToolSignatures, modelMessages, type CompileOptions } from './tasks.js';
export { ArgValidator, checkSchema } from './validate.js';
export { Invoker, effectiveLimits, type InvokeOptions, type InvokeResult, type InvokerOptions, type PoolLike, type ToolIdentity } from './invoke.js';
export { SandboxChannel, type SandboxPort, type ChannelOptions } from './channel.js';
export { SandboxPool, type SandboxPoolOptions, type PoolCallOptions } from './pool.js';
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
} from './runtime.js';
export { DEFAULT_LIMITS } from './runtime.js';
export { createCapabilityHandler, capabilityFactory, type CapabilityDeps, type CapabilityFactoryOptions } from './capabilities.js';
export { createMediatedFetch, accessOf, preflight, DEFAULT_FETCH_LIMITS, type FetchTransport, type MediatedFetch, type FetchLimits } from './fetch/mediated.js';
export { judgeAddress, judgeHostname, isIpLiteral, type TargetVerdict } from './fetch/address.js';
export { SecretBroker, SecretGrants, type SecretValues, type SecretGrant } from './secrets.js';
export { ToolStorage, DEFAULT_STORAGE_QUOTA } from './tool-storage.js';
export { compilePolicy, decide, parseRule, suggestRule, PERMISSION_MODES, type PermissionMode, type Policy, type PolicyDecision, type Rule } from './permissions.js';
export { PermissionGate, StoreDecisions, type GateDeps, type HookRunner } from './gate.js';
export { StoreAuditLog, AUDIT_LOG, WITHHELD, type AuditRecord, type AuditSink } from './audit.js';
export { PauseTracker, DEFAULT_PAUSE, type PauseConfig } from './pause.js';
export { AskRouter, askRefusalError, DEFAULT_ASK_WAIT_MS, type Asker, type AskOutcome } from './ask.js';
export { sanitizeForDisplay, sanitizeInline, renderQuestion, MAX_LINE_CHARS } from './text.js';
export { clientMessageRule, serverMessageRule, stripClientCapabilities, LineFramer, MAX_MESSAGE_BYTES } from './mcp/messages.js';
export { checkToolArguments } from './mcp/args.js';
export { SessionPool, DEFAULT_POOL_LIMITS } from './mcp/pool.js';
export { mergedSchema, chooseTargets, NamespaceSchema, type Namespace } from './mcp/namespace.js';
export { RegistrationServer, ProtocolSession, DEFAULT_PROTOCOL_LIMITS, type RegistrationServerOptions, type SessionOptions, type ProtocolRunner, type RegistryAction } from './registration/server.js';
export { ProtocolClient, ProtocolError, httpTransport, type ClientTransport, type ClientOptions, type RunOptions } from './registration/client.js';
export { classifyInbound, rpcFailure, RPC_CODES, MAX_PROTOCOL_MESSAGE_BYTES } from './registration/rpc.js';
export { RegistrationRate } from './registration/limits.js';
