// The browser host assembled: IndexedDB store + registry + gate (app-rendered and dialog asking) + mediated
// capabilities + sandbox pool + invoker; browser host, trusted side.
import './zod-jitless.js';
import { Store } from '../core/store/contract.js';
import { TyError } from '../core/errors.js';
import { ToolRegistry } from '../core/revisions/registry.js';
import { Invoker, type InvokerOptions } from '../core/exec/invoke.js';
import { SandboxPool } from '../core/exec/pool.js';
import { PermissionGate, StoreDecisions } from '../core/policy/gate.js';
import { compilePolicy, type RuleSet } from '../core/policy/permissions.js';
import { AskRouter } from '../core/ask/router.js';
import { StoreAuditLog } from '../core/audit/trail.js';
import { RefusalTally } from '../core/audit/refusals.js';
import { PauseTracker } from '../core/policy/pause.js';
import { capabilityFactory } from '../core/capabilities/handler.js';
import { ToolSettings, type SettingsValues } from '../core/revisions/settings.js';
import type { SecretValues } from '../core/capabilities/secrets.js';
import type { FetchTransport } from '../core/capabilities/fetch/mediated.js';
import type { AskChannel, Gate, SandboxRuntime } from '../core/exec/runtime.js';
import { IdbStoreBackend } from './store.js';
import { BrowserSandboxRuntime, type BrowserSandboxOptions } from './sandbox/runtime.js';
import { DialogAskChannel, type DialogAskOptions } from './ask/dialog.js';
import { ApprovalChannel } from './ask/app.js';
import { HostEvents, ObservedAsker, type HostEventListener, type HostEventName } from './events.js';
import { withBrowserHint } from './hints.js';
import type { InvokeOptions, InvokeResult } from '../core/exec/invoke.js';
import type { AuditRecord } from '../core/audit/trail.js';
import type { StoredDecision } from '../core/policy/permissions.js';
import type { PauseConfig, PausedTool } from '../core/policy/pause.js';
import { BrowserFetchTransport } from './fetch.js';
import { StoreSecretValues } from './store.js';
import { BrowserMcp, BROWSER_MCP_SANDBOX, type BrowserMcpServer } from './mcp/servers.js';
import { Elicitor } from '../core/mcp/input/elicit.js';

/** Console output of tool code: the revision that wrote it, the level and the raw text. */
export type ToolLogListener = (revision: string, level: 'debug' | 'info' | 'warn' | 'error', text: string) => void;
/** A pause in the browser lifts by itself after this long (ms): 15 minutes. */
export const DEFAULT_BROWSER_PAUSE_EXPIRE_MS = 15 * 60_000;
/**
 * Default cap of retained quickjs sandboxes in a page. Chromium keeps every ArrayBuffer, WebAssembly memories
 * included, inside its V8 sandbox (1 TiB of address space per renderer process), and each 32-bit WebAssembly memory
 * reserves 8 GiB there for its guard regions whatever its size: measured in Debian's Chromium, about the 125th live
 * QuickJS sandbox of a renderer fails with "WebAssembly.Memory(): could not allocate memory". 100 leaves room for
 * Pyodide sandboxes and for memories not yet collected; beyond it the least recently used idle one goes first.
 */
export const BROWSER_MAX_INSTANCES = 100;

export interface BrowserHostOptions {
  /** IndexedDB database name (default `tysandbox`). */
  dbName?: string;
  /**
   * Permission rules, e.g. `[{ scope: 'session', allow: ['fetch(read:https://api.example.com)'] }]`. Default: none
   * (mode standard).
   */
  rules?: RuleSet[];
  /** More channels questions are shown on (besides `host.approvals` and the dialog). */
  askChannels?: AskChannel[];
  /**
   * The built-in dialog (DialogAskChannel, style-isolated): `true`, its options, or `false` for an app that renders
   * questions itself through `host.approvals`. Default: on, unless `askChannels` is given.
   */
  dialog?: boolean | DialogAskOptions;
  /** How long a question waits for an answer, ms (default 120 000). */
  askWaitMs?: number;
  /** Sandbox frames, Pyodide manifest (enables `python`), console output of tools. */
  sandbox?: BrowserSandboxOptions;
  /** `retained` (default) or `disposable` sandboxes. */
  mode?: 'retained' | 'disposable';
  /** Principal for rules and audit (default `browser:app`). */
  principal?: string;
  /** Secret values the app holds; absent: every secret is refused. */
  secretValues?: SecretValues;
  /** Replace the page's fetch transport (tests). */
  transport?: FetchTransport;
  /**
   * Pause after repeated refusals: `maxRefusals` within `windowMs`; a pause lifts by itself after `expireMs` (default
   * 15 minutes).
   */
  pause?: Partial<PauseConfig>;
  /** Most retained sandboxes at once (default 16; the least recently used idle one goes first). */
  maxRetained?: number;
  /**
   * Most retained quickjs sandboxes at once, counted apart (default BROWSER_MAX_INSTANCES, 100; core/exec/pool.ts
   * maxInstances).
   */
  maxInstances?: number;
  /** A retained sandbox idle this long is destroyed, ms (default 600 000; 0: never). */
  idleMs?: number;
  /** Replace the permission gate. */
  gate?: Gate;
  /**
   * Runs external-service revisions (default: none, they fail with E_TOOL_FAILED); can also be set later with
   * setExternal.
   */
  external?: InvokerOptions['external'];
  /**
   * Remote MCP servers reached over Streamable HTTP (`host.mcp`); their tools are offered as `SERVER__TOOL`
   * (`host.mcp.listTools()`, `host.invoker.invoke('SERVER__TOOL', args)`), each call through the gate (kind
   * `mcp`, rule `mcp(SERVER/TOOL)`) and audited. Header values are secrets (see `mcpSecrets`).
   */
  mcpServers?: BrowserMcpServer[];
  /**
   * Where MCP header values are kept (default: the host's own store, namespace `mcp-secrets`, apart from tools'
   * secrets).
   */
  mcpSecrets?: SecretValues;
}

/** A tool revision's settings as `host.tools.settings` returns them. */
export interface ToolSettingsView {
  name: string;
  /** The tool revision (the active one for a bare name). */
  revision: string;
  /** The current settings revision; absent when none was stored for this tool revision. */
  settingsRevision?: string;
  /** The values a person set. */
  values: SettingsValues;
  /** `values` with the schema's defaults applied: what the tool reads as `ctx.settings`. */
  effective: SettingsValues;
  /** The manifest's settings schema. */
  schema: Record<string, unknown>;
}

export interface BrowserHost {
  /**
   * The asynchronous approval channel: `host.approvals.subscribe((q) => render(q))`, then `q.answer('once' |
   * 'session' | 'always' | 'deny')`. Live while subscribed; the first answer on any channel wins.
   */
  approvals: ApprovalChannel;
  /** The built-in dialog channel, when on. */
  dialog: DialogAskChannel | undefined;
  store: Store;
  registry: ToolRegistry;
  gate: Gate;
  invoker: Invoker;
  pool: SandboxPool;
  /** Remote MCP servers: add/remove, connection state, offered tools, calls (browser/mcp/servers.ts). */
  mcp: BrowserMcp;
  /**
   * Per-tool settings (docs/manifest.md "settings"), stored as content-addressed settings revisions in the host's
   * IndexedDB store, each bound to one tool revision:
   * - `settings(ref)`: the current settings of `NAME` (its active revision) or `NAME@REV`;
   * - `setSettings(ref, values, { from?, unset? })`: `values` set over the current values (or over those of
   *   `from`, another revision of the same tool, carried over), `unset` keys removed, checked against the
   *   revision's schema; the new settings revision becomes current and is audited (kind `settings`).
   * @throws TyError E_UNKNOWN_TOOL, E_INVALID_SETTINGS (no settings schema, values the schema refuses)
   */
  tools: {
    settings(ref: string): Promise<ToolSettingsView>;
    setSettings(
      ref: string,
      values: SettingsValues,
      opts?: { from?: string; unset?: string[] },
    ): Promise<ToolSettingsView & { settingsRevision: string; previous?: string }>;
  };
  /** The settings store behind `tools` (task compilation pins settings revisions with it). */
  settings: ToolSettings;
  /**
   * Set (or clear) what runs external-service revisions, e.g. the embedding page for `transport: "parent"`
   * tools (browser/registration/window.ts). Calls still pass the gate first.
   */
  setExternal(fn: InvokerOptions['external'] | undefined): void;
  /**
   * Also receive what tool code writes with console.* (raw text: render it inert); returns the unsubscribe function.
   */
  onToolLog(fn: ToolLogListener): () => void;
  /** The host's typed events (browser/events.ts): `host.events.on('call-end', (e) => ...)` returns the unsubscribe. */
  events: HostEvents;
  /** Same as `host.events.on`. */
  on<K extends HostEventName>(name: K, fn: HostEventListener<K>): () => void;
  /**
   * Run a tool call (name, `name@revision` or a unique revision prefix) like `host.invoker.invoke`, with a call id:
   * `call-start`/`call-end` events, tool logs tagged with it, and error messages ending in the browser's own hint
   * (the rule to add, `host.resume(...)`, ...). @returns InvokeResult plus `callId`.
   */
  invoke(ref: string, args: unknown, opts?: InvokeOptions): Promise<InvokeResult & { callId: string }>;
  /**
   * The audit trail, oldest first (`since`: ms since the epoch or an ISO time; `tool`: one tool's records; `limit`: the
   * last N).
   */
  audit(opts?: { since?: number | string; tool?: string; limit?: number }): Promise<AuditRecord[]>;
  /** Remembered decisions: permanent ones (stored per revision) and this session's. */
  decisions(): Promise<StoredDecision[]>;
  /**
   * Revoke remembered decisions of a tool name and/or revision (`rule`: only the one whose rule text matches, e.g.
   * `fetch(read:https://api.example.com)`), permanent and session. @returns how many were removed.
   */
  revokeDecision(which: { tool?: string; revision?: string; rule?: string }): Promise<number>;
  /** Tools paused after repeated refusals (each with when, how many, and when it lifts by itself). */
  paused(): Promise<PausedTool[]>;
  /** Lift the pause on `name` now. @returns true when it was paused. */
  resume(name: string): Promise<boolean>;
  /**
   * Start loading a runtime before the first call: `python` fetches and verifies the Pyodide files once per page
   * (`python-progress` events). @throws TyError E_SANDBOX_UNAVAILABLE (not configured), E_INTEGRITY.
   */
  prewarm(runtime: 'python'): Promise<void>;
  /** Destroy every sandbox and close the database. Idempotent. */
  close(): Promise<void>;
}

/**
 * Assemble the browser host: IdbStoreBackend -> Store -> ToolRegistry; PermissionGate over the rules, an
 * AskRouter on the dialog channel, audit log, pause tracker and permanent decisions in the same store;
 * capability handlers per revision identity (core/capabilities/handler.ts) over BrowserFetchTransport; a
 * SandboxPool of BrowserSandboxRuntime; the Invoker (core/exec/invoke.ts) tying them together.
 * @throws TyError E_STORE (IndexedDB unavailable), E_INVALID_SETTINGS (a bad rule or askWaitMs).
 */
export async function createBrowserHost(opts: BrowserHostOptions = {}): Promise<BrowserHost> {
  const backend = await IdbStoreBackend.open({ name: opts.dbName ?? 'tysandbox' });
  const store = new Store(backend);
  const registry = new ToolRegistry(store);
  const policy = compilePolicy(opts.rules ?? [{ scope: 'session' }]);
  const events = new HostEvents();
  const approvals = new ApprovalChannel();
  const pause = new PauseTracker(store, { expireMs: DEFAULT_BROWSER_PAUSE_EXPIRE_MS, ...(opts.pause ?? {}) });
  const decisionStore = new StoreDecisions(store);
  // MCP header values in use: withheld (as tokens) from question previews, hook input and text the host did not write
  const withheld = new Set<string>();
  const auditLog = new StoreAuditLog(store);
  // admission refusals (E_BUSY) audited in aggregate, one record per principal and second
  const refusals = new RefusalTally(auditLog);
  const dialogOpt = opts.dialog ?? opts.askChannels === undefined;
  const dialog = dialogOpt === false ? undefined : new DialogAskChannel(dialogOpt === true ? {} : dialogOpt);
  const channels: AskChannel[] = [...(opts.askChannels ?? []), approvals, ...(dialog ? [dialog] : [])];
  // one router for approvals and elicitation forms: one question at a time
  const router = new AskRouter({ channels, ...(opts.askWaitMs !== undefined ? { askWaitMs: opts.askWaitMs } : {}) });
  const permissionGate = opts.gate
    ? undefined
    : new PermissionGate({
        config: () => ({ policy }),
        asker: new ObservedAsker(router, events),
        audit: auditLog,
        pause,
        decisions: decisionStore,
        withheld: () => withheld,
        // One id per page: a started call of another page (closed, reloaded) reads as interrupted.
        hostId: `browser:${globalThis.crypto.randomUUID()}`,
      });
  const gate: Gate = opts.gate ?? permissionGate!;
  registry.onUpdateAvailable((e) => events.emit('update-available', e));
  const toolSettings = new ToolSettings(store, { audit: auditLog });
  const capabilities = capabilityFactory({
    store,
    registry,
    gate,
    transport: opts.transport ?? new BrowserFetchTransport(),
    settings: toolSettings,
    ...(opts.secretValues ? { secretValues: opts.secretValues } : {}),
  });
  const logListeners = new Set<ToolLogListener>();
  const userLog = opts.sandbox?.onLog;
  const callIds = new WeakMap<AbortSignal, string>();
  const userProgress = opts.sandbox?.onPythonProgress;
  const runtime = new BrowserSandboxRuntime({
    ...(opts.sandbox ?? {}),
    onLog: (level, text, revision) => {
      userLog?.(level, text, revision);
      for (const l of logListeners) l(revision, level, text);
    },
    events,
    callIdOf: (s) => callIds.get(s),
    onPythonProgress: (p) => {
      userProgress?.(p);
      events.emit('python-progress', p);
    },
  });
  // quickjs revisions: one frame per principal holding many QuickJS sandboxes (browser/quickjs/runtime.ts), loaded with
  // the first one; node and deno revisions run in the worker engine above (those names choose a command-line engine).
  let quickjs: Promise<SandboxRuntime> | undefined;
  const quickJsRuntime = (): Promise<SandboxRuntime> =>
    (quickjs ??= import('./quickjs/runtime.js').then(
      ({ BrowserQuickJsRuntime }) =>
        new BrowserQuickJsRuntime({
          ...(opts.sandbox ?? {}),
          onLog: (level, text, revision) => {
            userLog?.(level, text, revision);
            for (const l of logListeners) l(revision, level, text);
          },
          events,
          callIdOf: (s) => callIds.get(s),
        }),
    ));
  const quickJsFacade: SandboxRuntime = {
    name: 'quickjs',
    perPrincipal: true,
    sharesProcess: true,
    start: async (spec, signal) => (await quickJsRuntime()).start(spec, signal),
  };
  const pool = new SandboxPool({
    runtime: (spec) => {
      const exec = spec.manifest.execution;
      return exec.kind === 'sandboxed-code' && exec.engine === 'quickjs' ? quickJsFacade : runtime;
    },
    mode: opts.mode ?? 'retained',
    ...(opts.maxRetained !== undefined ? { maxRetained: opts.maxRetained } : {}),
    maxInstances: opts.maxInstances ?? BROWSER_MAX_INSTANCES,
    ...(opts.idleMs !== undefined ? { idleMs: opts.idleMs } : {}),
  });
  let external = opts.external;
  const principal = opts.principal ?? 'browser:app';
  const mcp = new BrowserMcp({
    gate,
    // servers' elicitation requests: shown to a person as a form only under an allow rule mcp-elicit(SERVER)
    elicit: new Elicitor({
      policy: () => policy,
      asker: router,
      audit: auditLog,
      principal: `mcp:${BROWSER_MCP_SANDBOX}`,
    }),
    store,
    pause,
    secrets: opts.mcpSecrets ?? new StoreSecretValues(store),
    withheld,
    log: (line) =>
      events.emit(
        'mcp-request',
        JSON.parse(line) as { server: string; method: string; name?: string; outcome: string },
      ),
  });
  const seen = new Map<string, string>();
  mcp.onChange((all) => {
    for (const s of all) {
      if (seen.get(s.name) === s.state) continue;
      seen.set(s.name, s.state);
      events.emit('mcp-state', { server: s.name, state: s.state, ...(s.error ? { code: s.error.code } : {}) });
    }
  });
  for (const s of opts.mcpServers ?? []) await mcp.add(s);
  const invoker = new BrowserInvoker(mcp, {
    registry,
    pool,
    gate,
    capabilities,
    settings: toolSettings,
    principal,
    refusals,
    external: async (identity, args, signal) => {
      if (!external)
        throw new TyError(
          'E_TOOL_FAILED',
          `no bridge configured for the external service "${identity.manifest.execution.kind === 'external-service' ? identity.manifest.execution.serviceId : ''}"`,
        );
      return external(identity, args, signal);
    },
  });
  let closed = false;
  const settingsOf = async (ref: string): Promise<ToolSettingsView> => {
    const tool = await registry.resolve(ref);
    if (!tool.manifest.settings)
      throw new TyError(
        'E_INVALID_SETTINGS',
        `${tool.name} declares no settings (its manifest has no "settings" schema)`,
        { tool: tool.name },
      );
    const cur = await toolSettings.current(tool);
    return {
      name: tool.name,
      revision: tool.revision,
      ...(cur.settingsRevision ? { settingsRevision: cur.settingsRevision } : {}),
      values: cur.values,
      effective: cur.effective,
      schema: tool.manifest.settings,
    };
  };
  const tools: BrowserHost['tools'] = {
    settings: settingsOf,
    async setSettings(ref, values, o = {}) {
      const tool = await registry.resolve(ref);
      if (values === null || typeof values !== 'object' || Array.isArray(values))
        throw new TyError('E_INVALID_SETTINGS', 'settings values must be a JSON object');
      const from =
        o.from === undefined
          ? undefined
          : await registry.resolve(o.from.includes('@') ? o.from : `${tool.name}@${o.from}`);
      const r = await toolSettings.update(
        tool,
        { set: values, unset: o.unset ?? [], ...(from ? { from } : {}) },
        { principal, via: 'host.tools.setSettings' },
      );
      return {
        name: tool.name,
        revision: tool.revision,
        settingsRevision: r.settingsRevision,
        values: r.values,
        effective: r.effective,
        schema: tool.manifest.settings!,
        ...(r.previous ? { previous: r.previous } : {}),
      };
    },
  };
  const hostApi = {
    events,
    on: <K extends HostEventName>(name: K, fn: HostEventListener<K>) => events.on(name, fn),
    async invoke(ref: string, args: unknown, o: InvokeOptions = {}) {
      const callId = globalThis.crypto.randomUUID();
      const ac = new AbortController();
      const onAbort = () => ac.abort(o.signal?.reason);
      if (o.signal?.aborted) ac.abort(o.signal.reason);
      else o.signal?.addEventListener('abort', onAbort, { once: true });
      callIds.set(ac.signal, callId);
      const tool = ref.split('@')[0] ?? ref;
      const t0 = Date.now();
      events.emit('call-start', { callId, tool, at: t0 });
      try {
        const r = await invoker.invoke(ref, args, { ...o, signal: ac.signal });
        events.emit('call-end', {
          callId,
          tool,
          ...(r.revision !== undefined ? { revision: r.revision } : {}),
          ok: r.ok,
          ...(r.ok ? {} : { code: r.error.code }),
          durationMs: Date.now() - t0,
        });
        if (r.ok) return { ...r, callId };
        return {
          ...r,
          error: { ...r.error, message: withBrowserHint(r.error.code, r.error.message, r.error.data) },
          callId,
        };
      } finally {
        o.signal?.removeEventListener('abort', onAbort);
      }
    },
    async audit(o: { since?: number | string; tool?: string; limit?: number } = {}) {
      const since = typeof o.since === 'string' ? Date.parse(o.since) : o.since;
      let entries = (await auditLog.read(since !== undefined && Number.isFinite(since) ? { since } : {})).entries;
      if (o.tool !== undefined) entries = entries.filter((e) => e.tool === o.tool);
      return o.limit !== undefined ? entries.slice(-Math.max(0, o.limit)) : entries;
    },
    async decisions() {
      return [...(permissionGate?.sessionDecisions() ?? []), ...(await decisionStore.list())];
    },
    async revokeDecision(which: { tool?: string; revision?: string; rule?: string }) {
      const removed = (await decisionStore.revoke(which)).length;
      const session =
        permissionGate && which.rule === undefined && which.revision === undefined && which.tool !== undefined
          ? permissionGate.revokeSession(which.tool)
          : 0;
      return removed + session;
    },
    paused: () => pause.list(),
    resume: (name: string) => pause.resume(name),
    prewarm: async (rt: 'python') => {
      if (rt !== 'python')
        throw new TyError('E_SANDBOX_UNAVAILABLE', `nothing to prewarm for the runtime "${String(rt).slice(0, 40)}"`);
      await runtime.prewarmPython();
    },
  };
  return {
    ...hostApi,
    approvals,
    dialog,
    store,
    registry,
    gate,
    invoker,
    pool,
    mcp,
    tools,
    settings: toolSettings,
    setExternal(fn) {
      external = fn;
    },
    onToolLog(fn) {
      logListeners.add(fn);
      return () => void logListeners.delete(fn);
    },
    async close() {
      if (closed) return;
      closed = true;
      await mcp.close();
      await pool.shutdown();
      await refusals.flush();
      backend.close();
    },
  };
}

/**
 * The host's invoker: `SERVER__TOOL` (and `SERVER__TOOL@REVISION`) of a configured MCP server runs through
 * `host.mcp` (its own gate request, kind `mcp`); every other reference through core's Invoker.
 */
class BrowserInvoker extends Invoker {
  constructor(
    private readonly mcp: BrowserMcp,
    o: InvokerOptions,
  ) {
    super(o);
  }
  override async invoke(ref: string, args: unknown, opts: InvokeOptions = {}): Promise<InvokeResult> {
    if (typeof ref === 'string' && this.mcp.handles(ref))
      return this.mcp.invoke(ref, args, opts.signal ? { signal: opts.signal } : {});
    return super.invoke(ref, args, opts);
  }
}
