// The browser host assembled: IndexedDB store + registry + gate (app-rendered and dialog asking) + mediated capabilities + sandbox pool + invoker; browser host, trusted side.
import './zod-jitless.js';
import { Store } from '../core/store.js';
import { TyError } from '../core/errors.js';
import { ToolRegistry } from '../core/registry.js';
import { Invoker, type InvokerOptions } from '../core/invoke.js';
import { SandboxPool } from '../core/pool.js';
import { PermissionGate, StoreDecisions } from '../core/gate.js';
import { compilePolicy, type RuleSet } from '../core/permissions.js';
import { AskRouter } from '../core/ask.js';
import { StoreAuditLog } from '../core/audit.js';
import { PauseTracker } from '../core/pause.js';
import { capabilityFactory } from '../core/capabilities.js';
import type { SecretValues } from '../core/secrets.js';
import type { FetchTransport } from '../core/fetch/mediated.js';
import type { AskChannel, Gate } from '../core/runtime.js';
import { IdbStoreBackend } from './store.js';
import { BrowserSandboxRuntime, type BrowserSandboxOptions } from './sandbox.js';
import { DialogAskChannel, type DialogAskOptions } from './ask-dialog.js';
import { ApprovalChannel } from './ask-app.js';
import { BrowserFetchTransport } from './fetch.js';

/** Console output of tool code: the revision that wrote it, the level and the raw text. */
export type ToolLogListener = (revision: string, level: 'debug' | 'info' | 'warn' | 'error', text: string) => void;

export interface BrowserHostOptions {
  /** IndexedDB database name (default `tysandbox`). */
  dbName?: string;
  /** Permission rules, e.g. `[{ scope: 'session', allow: ['fetch(read:https://api.example.com)'] }]`. Default: none (mode standard). */
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
  /** Replace the permission gate. */
  gate?: Gate;
  /** Runs external-service revisions (default: none, they fail with E_TOOL_FAILED); can also be set later with setExternal. */
  external?: InvokerOptions['external'];
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
  /**
   * Set (or clear) what runs external-service revisions, e.g. the embedding page for `transport: "parent"`
   * tools (browser/protocol-window.ts). Calls still pass the gate first.
   */
  setExternal(fn: InvokerOptions['external'] | undefined): void;
  /** Also receive what tool code writes with console.* (raw text: render it inert); returns the unsubscribe function. */
  onToolLog(fn: ToolLogListener): () => void;
  /** Destroy every sandbox and close the database. Idempotent. */
  close(): Promise<void>;
}

/**
 * Assemble the browser host: IdbStoreBackend -> Store -> ToolRegistry; PermissionGate over the rules, an
 * AskRouter on the dialog channel, audit log, pause tracker and permanent decisions in the same store;
 * capability handlers per revision identity (core/capabilities.ts) over BrowserFetchTransport; a
 * SandboxPool of BrowserSandboxRuntime; the Invoker (core/invoke.ts) tying them together.
 * @throws TyError E_STORE (IndexedDB unavailable), E_INVALID_SETTINGS (a bad rule or askWaitMs).
 */
export async function createBrowserHost(opts: BrowserHostOptions = {}): Promise<BrowserHost> {
  const backend = await IdbStoreBackend.open({ name: opts.dbName ?? 'tysandbox' });
  const store = new Store(backend);
  const registry = new ToolRegistry(store);
  const policy = compilePolicy(opts.rules ?? [{ scope: 'session' }]);
  const approvals = new ApprovalChannel();
  const dialogOpt = opts.dialog ?? opts.askChannels === undefined;
  const dialog = dialogOpt === false ? undefined : new DialogAskChannel(dialogOpt === true ? {} : dialogOpt);
  const channels: AskChannel[] = [...(opts.askChannels ?? []), approvals, ...(dialog ? [dialog] : [])];
  const gate =
    opts.gate ??
    new PermissionGate({
      config: () => ({ policy }),
      asker: new AskRouter({ channels, ...(opts.askWaitMs !== undefined ? { askWaitMs: opts.askWaitMs } : {}) }),
      audit: new StoreAuditLog(store),
      pause: new PauseTracker(store),
      decisions: new StoreDecisions(store),
      // One id per page: a started call of another page (closed, reloaded) reads as interrupted.
      hostId: `browser:${globalThis.crypto.randomUUID()}`,
    });
  const capabilities = capabilityFactory({
    store,
    registry,
    gate,
    transport: opts.transport ?? new BrowserFetchTransport(),
    ...(opts.secretValues ? { secretValues: opts.secretValues } : {}),
  });
  const logListeners = new Set<ToolLogListener>();
  const userLog = opts.sandbox?.onLog;
  const sandboxOpts: BrowserSandboxOptions = {
    ...opts.sandbox,
    onLog: (level, text, revision) => {
      userLog?.(level, text, revision);
      for (const l of logListeners) l(revision, level, text);
    },
  };
  const pool = new SandboxPool({ runtime: new BrowserSandboxRuntime(sandboxOpts), mode: opts.mode ?? 'retained' });
  let external = opts.external;
  const invoker = new Invoker({
    registry,
    pool,
    gate,
    capabilities,
    principal: opts.principal ?? 'browser:app',
    external: async (identity, args, signal) => {
      if (!external) throw new TyError('E_TOOL_FAILED', `no bridge configured for the external service "${identity.manifest.execution.kind === 'external-service' ? identity.manifest.execution.serviceId : ''}"`);
      return external(identity, args, signal);
    },
  });
  let closed = false;
  return {
    approvals,
    dialog,
    store,
    registry,
    gate,
    invoker,
    pool,
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
      await pool.shutdown();
      backend.close();
    },
  };
}
