// Host interfaces core defines once and each host implements (SandboxRuntime, AskChannel); core, trusted side.
import type { CapabilityName } from '../../protocol/wire.js';
import type { CallPhase } from '../../protocol/names.js';
import type { ToolManifest } from '../../protocol/manifest.js';

/** Limits for one call; the host clamps manifest requests to its maxima. */
export interface CallLimits {
  /** Wall-clock timeout per call, ms (default 60 000). */
  timeoutMs: number;
  /** Cap on the serialized (JSON, UTF-8) result, bytes (default 2 MiB). */
  outputBytes: number;
  /** Heap cap for the sandbox, MiB (default 256). */
  memoryMb: number;
}
export const DEFAULT_LIMITS: CallLimits = { timeoutMs: 60_000, outputBytes: 2 * 1024 * 1024, memoryMb: 256 };

/** What a runtime needs to start a sandbox for one immutable revision. */
export interface SandboxSpec {
  revision: string;
  manifest: ToolManifest;
  limits: CallLimits;
  /** CLI only: folders granted to the OS sandbox, already canonicalized (realpath). */
  folders?: { path: string; access: 'read' | 'write' }[];
  /**
   * This call's settings (the revision's settings revision, defaults applied): sent with each call, read by the
   * tool as `ctx.settings`. Per call, not per sandbox: a retained sandbox keeps running when settings change.
   */
  settings?: Record<string, unknown>;
  /**
   * Who the call runs for (the invoker's principal). Runtimes that put several sandboxes in one process or worker
   * (the quickjs engine) keep each principal's sandboxes apart by it; others ignore it.
   */
  principal?: Principal;
}

/**
 * Handles one capability request from tool code. Identity comes from the host-side sandbox record,
 * never from the message. Throws TyError with a stable code to refuse.
 */
export type CapabilityHandler = (name: CapabilityName, params: unknown, signal: AbortSignal) => Promise<unknown>;

/**
 * A signal that never aborts (its controller is private here): what a call without a caller's signal gets; layers skip
 * listener work for it.
 */
export const NEVER_ABORTED: AbortSignal = new AbortController().signal;

export interface CallOptions {
  signal: AbortSignal;
  onCapability: CapabilityHandler;
  limits: CallLimits;
  /** The call's settings values (SandboxSpec.settings), given to the tool as `ctx.settings`. */
  settings?: Record<string, unknown>;
  /**
   * The arguments' canonical JSON text (core/revisions/canonical.ts canonicalJson of `args`: the text the host
   * validated and
   * measured). A transport that carries text sends it as is, so arguments are serialized once per call.
   */
  argsJson?: string;
  /**
   * The same text in pieces (core/revisions/canonical.ts canonicalParts; their concatenation is `argsJson`): a
   * transport that
   * writes bytes sends them one after the other, so a long string argument is encoded once and never joined.
   */
  argsParts?: readonly string[];
  /**
   * The tool's `ctx.progress(fraction, message)` reports of this call, coalesced by the channel to at most one per
   * 100 ms (core/exec/progress.ts); none after the call ended. Raw text: render `message` inert.
   */
  onProgress?: (fraction: number, message?: string) => void;
  /**
   * Told when the sandbox says which part of the call runs now (protocol/wire.ts PhaseMessageSchema: a Python module's
   * top-level code, then `main`), so a time limit reached names it (core/exec/timeouts.ts).
   */
  onPhase?: (phase: CallPhase) => void;
  /**
   * Told once, right after the call message was handed to the transport (the tool may run from now on): the host
   * starts the fsync of the call's intent record then, so it overlaps the tool's run (IntentRecord.begin).
   */
  onSent?: () => void;
}

/**
 * The intent (`started`) audit record of a call the gate let through, as the gate's `execute` receives it. It is
 * written (held by the OS: a host process killed from now on cannot lose it) before `execute` runs; `durable` settles
 * once it is on disk (rejecting with E_STORE when it cannot be made durable). `begin()` starts that fsync now: called
 * once the call's arguments are on their way to its sandbox, the fsync overlaps the tool's run. `alone`: the caller
 * knows no other call is in flight on its host (a sequential caller), so the fsync may run on the calling thread,
 * which has nothing else to do meanwhile; otherwise it runs beside that thread, shared with the other calls' records.
 * Nothing the call does outside its sandbox (a capability request, a native tool's own code, a bridged server's call)
 * and no answer may go ahead of `durable`. Hosts whose audit records are durable when written give a settled
 * `durable`.
 */
export interface IntentRecord {
  durable: Promise<void>;
  begin(alone?: boolean): void;
}

/** An intent record that is durable already (no gate, or a sink without stages). */
export const DURABLE_INTENT: IntentRecord = Object.freeze({ durable: Promise.resolve(), begin: () => {} });

/** A live sandbox for one revision. */
export interface SandboxInstance {
  readonly revision: string;
  readonly alive: boolean;
  /**
   * Run one call; the result is plain JSON data.
   * @throws TyError E_TOOL_FAILED (tool threw; message rebuilt as plain {name, message}),
   *   E_OUTPUT_LIMIT, E_TIMEOUT, E_ABORTED, E_MEMORY_LIMIT, E_SANDBOX_FAILED, E_PROTOCOL.
   */
  call(args: unknown, opts: CallOptions): Promise<unknown>;
  /** Kill the sandbox (whole process tree / worker + frame). Idempotent. */
  destroy(reason: string): Promise<void>;
  /**
   * MiB the sandbox may hold now, for sandboxes that grow inside a process they share (quickjs: its heap, its stack
   * limit and static data, as its sandbox host last reported): the pool charges this against its memory budget
   * instead of the start charge. Absent: the start charge stands.
   */
  heldMb?(): number;
  /**
   * Optional: the memory the sandbox holds now against its memory limit, MiB (a Node sandbox: the private writable
   * memory of its processes, what RLIMIT_DATA bounds), undefined when it cannot be told. The pool reads it once a
   * sandbox has gone idle, never on a call's path.
   */
  memoryMb?(): number | undefined;
}

/** A host's way of starting sandboxes (node subprocess, deno subprocess, browser iframe+worker, quickjs). */
export interface SandboxRuntime {
  readonly name: string;
  /**
   * True when sandboxes of different principals must not share one (SandboxSpec.principal): the pool then retains a
   * revision's sandbox per principal (core/exec/pool.ts).
   */
  readonly perPrincipal?: boolean;
  /**
   * True when its sandboxes are instances inside a process or worker they share (quickjs), not a process or a frame
   * each: the pool counts them against `maxInstances` instead of `maxRetained` (core/exec/pool.ts).
   */
  readonly sharesProcess?: boolean;
  start(spec: SandboxSpec, signal?: AbortSignal): Promise<SandboxInstance>;
}

/** A question for a person. Text fields are raw; channels sanitize before display (core/ask/text.ts). */
export interface Question {
  id: string;
  /** Short title, e.g. "Allow fetch?" */
  title: string;
  /** Lines of detail (tool name, revision, origin, server hints); raw, sanitized on display. */
  details: string[];
  /** The rule that would let this through without asking, e.g. `fetch(read:https://api.example.com)`. */
  suggestedRule?: string;
  /** Server hints shown as such; they never skip asking. */
  hints?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  /** Scopes the person may choose; `once` always. */
  scopes?: ('once' | 'session' | 'permanent')[];
  /** The same request as structured facts (raw, sanitized on display), for channels that render their own text. */
  facts?: QuestionFacts;
  /**
   * A form the person fills in (an MCP server's elicitation, core/mcp/input/elicit.ts): only channels whose `forms` is
   * true are asked; the answer's `values` are checked against it (core/mcp/input/elicit.ts checkFormValues).
   */
  form?: QuestionForm;
}

/**
 * One field of a form question: MCP elicitation's restricted flat schema (string, number, integer, boolean,
 * single-select enum).
 */
export interface FormField {
  /** The property name (1-64 of A-Z a-z 0-9 _ . -). */
  name: string;
  type: 'string' | 'number' | 'integer' | 'boolean';
  /** Raw text from the server, sanitized on display. */
  title?: string;
  description?: string;
  required: boolean;
  default?: string | number | boolean;
  /** A single-select enum: the allowed values with their display labels. */
  options?: { value: string; label?: string }[];
  format?: 'email' | 'uri' | 'date' | 'date-time';
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  /** The field looks like it asks for a secret (password, token, key, ...): its value is never shown back or logged. */
  secret: boolean;
}

/** A form question's fields, in the server's order, and the server's message (raw, sanitized on display). */
export interface QuestionForm {
  message: string;
  fields: FormField[];
}

/** Values of an answered form, by field name. */
export type FormValues = Record<string, string | number | boolean>;

/** What a question is about, as data: channels that render their own UI (the browser's app channel) use these. */
export interface QuestionFacts {
  tool: string;
  /** The full revision id (a CID). */
  revision: string;
  /** `tool` for running the tool itself; otherwise the capability (fetch, storage, secret, mcp, ...). */
  capability: GateRequest['kind'];
  access?: 'read' | 'write';
  /** e.g. the origin of a fetch, `SERVER/TOOL` of an MCP call. */
  target?: string;
  /** The request's preview lines (e.g. the call's arguments as JSON), known secret values withheld, at most 6. */
  preview?: string[];
  /** Whether the rule that asked lets a person remember the answer (false for alwaysAsk rules). */
  rememberable: boolean;
  /**
   * Who asks: registration requests (`protocol:<client>`, `origin:<page origin>`) and calls of a browser agent through
   * WebMCP (`webmcp:<page origin>`); absent for the host's own calls.
   */
  principal?: string;
}
export interface Answer {
  allow: boolean;
  scope: 'once' | 'session' | 'permanent';
  channel: string;
  /** Form questions: the values given with an allow (accept). */
  values?: FormValues;
  /** Form questions: a refusal that dismissed the form without a choice (MCP's `cancel`, not `decline`). */
  dismissed?: boolean;
}

/** A surface that can present a question to a person (terminal, waiting-question store, browser dialog). */
export interface AskChannel {
  readonly name: string;
  /** True when a person can see a question on this channel right now. */
  live(): boolean | Promise<boolean>;
  /**
   * Optional: why this channel cannot present a question now (one short line), for status and for refusals naming the
   * channels.
   */
  whyNot?(): string | undefined | Promise<string | undefined>;
  /** Present the question; resolve with the answer, or undefined when this channel got none. Abort on signal. */
  ask(q: Question, signal: AbortSignal): Promise<Answer | undefined>;
  /**
   * Whether a person could have seen question `id` on this channel (e.g. a dialog that waited for a hidden page to
   * become visible never showed it). Absent: assumed yes. A question nobody saw times out as `no-channel`.
   */
  presented?(id: string): boolean;
  /** True when this channel can show a form question (`Question.form`) and return its values; others are not asked. */
  readonly forms?: boolean;
}

/** Who is acting, for rules and audit: e.g. `cli:user`, `mcp:SANDBOXNAME`, `browser:app`. */
export type Principal = string;

/** What reaches the gate: a tool invocation or one capability use by a revision. */
export interface GateRequest {
  principal: Principal;
  /**
   * `tool` for an invocation; otherwise the capability (fetch, storage, secret, mcp, mcp-resource, mcp-prompt, popup,
   * python).
   */
  kind:
    | 'tool'
    | 'fetch'
    | 'storage'
    | 'secret'
    | 'subtasks'
    | 'resolve'
    | 'mcp'
    | 'mcp-resource'
    | 'mcp-prompt'
    | 'mcp-elicit'
    | 'mcp-input'
    | 'popup'
    | 'python'
    | 'registry';
  toolName: string;
  revision: string;
  /**
   * For fetch: the origin `https://host[:port]`; for mcp: `SERVER/TOOL`; for popup: `custom-html` or an origin; for
   * registry: `add`, `activate`, `remove` or `read`.
   */
  target?: string;
  access?: 'read' | 'write';
  /** MCP server hints, shown in questions; never skip asking. */
  hints?: Question['hints'];
  /** Passed to hooks only (never audited, never secret values). */
  hookPayload?: unknown;
  /**
   * Shown to the person in the approval question only (e.g. the call's arguments as one JSON line): the
   * gate withholds known secret values, shows at most 6 lines, each sanitized and cut at 600 characters
   * (core/ask/text.ts). Never audited, never given to hooks.
   */
  preview?: string;
  /** What the manifest requested: the upper bound for capability grants. */
  requested?: boolean;
  /** True when this host offers no such capability at all: refused (and audited) without asking, in every mode. */
  unavailable?: boolean;
  /**
   * A rule outside settings that allows this request without asking, e.g. an MCP server definition's own
   * `--allow TOOL` / `--ask none` (`{ rule: 'server everything: --ask none', scope: 'server definition' }`).
   * It counts like an allow rule below every settings scope: every deny rule and remembered "no", an
   * alwaysAsk rule, the manifest bound and the pause still win; hooks run and the call is audited, the
   * trace naming this rule and scope.
   */
  preapproved?: { rule: string; scope: string };
  /**
   * The name refusals are counted against for a pause (default `toolName`). Registration requests use
   * `registry:<principal>`, so a refused client pauses its own registrations, never the tool's calls.
   */
  pauseKey?: string;
}

/**
 * The one gate every invocation and capability use passes (core/policy/gate.ts implements it):
 * permission check (deny first) -> ask if needed -> pre-hooks -> execute -> post-hooks -> audit.
 */
export interface Gate {
  /**
   * For invocations: run `execute` only if allowed, handing it the call's intent record (IntentRecord: what the call
   * may do outside its sandbox waits for `durable`; `begin()` once its arguments are sent); the answer waits until the
   * intent record is durable. `signal` aborts a pending question. @throws TyError E_CAPABILITY_DENIED, E_HOOK_BLOCKED,
   * E_PAUSED, E_STORE
   */
  run<T>(
    req: GateRequest,
    execute: (intent?: IntentRecord) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<{ value: T; feedback?: string[] }>;
  /** For capability uses: resolve if allowed. @throws TyError E_CAPABILITY_DENIED, E_PAUSED */
  authorize(req: GateRequest, signal?: AbortSignal): Promise<void>;
}
