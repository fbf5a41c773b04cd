// WebMCP: the page's sandboxed tools offered to browser agents through `document.modelContext.registerTool`, each call
// pinned, validated, gated under `webmcp:<page origin>`, asked, sandboxed and audited like any other; browser host,
// trusted side.
//
// Web Model Context API (W3C Web Machine Learning CG draft, https://webmachinelearning.github.io/webmcp/): a page
// registers `{ name, description, inputSchema, annotations, execute(input, client) }` with `registerTool(tool, { signal
// })`; aborting the signal unregisters it. Chromium exposes it as `document.modelContext` behind
// `--enable-features=WebMCP`; without it nothing is registered and nothing fails.
import type { InvokeOptions, InvokeResult } from '../../core/exec/invoke.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import type { ToolRegistry } from '../../core/revisions/registry.js';
import type { HostEvents } from '../events.js';

/** What the page's agent passes to a tool's `execute`: a signal, and optionally a way to hand the person the page. */
export interface WebMcpClient {
  signal?: AbortSignal;
  /** The agent pauses while `callback` runs (the page may show UI); resolves with the callback's value. */
  requestUserInteraction?: (callback: () => Promise<unknown>) => Promise<unknown>;
}

/** A tool as registerTool takes it. */
export interface WebMcpTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: { readOnlyHint: boolean };
  execute(input: unknown, client?: WebMcpClient): Promise<WebMcpResult>;
}

/** MCP's CallToolResult shape: the result as text (and structured when it is an object), `isError` for a failure. */
export interface WebMcpResult {
  content: { type: 'text'; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** The part of `document.modelContext` used here (injectable for tests). */
export interface ModelContextLike {
  registerTool(tool: WebMcpTool, options?: { signal?: AbortSignal }): Promise<void> | void;
}

export interface WebMcpExposeOptions {
  /** Offer only these tool names (default: every name with an active revision). */
  tools?: readonly string[];
  /** The Model Context to register with (default `document.modelContext`). */
  modelContext?: ModelContextLike;
}

export interface WebMcpStatus {
  /** False when the browser has no Web Model Context API: nothing was registered. */
  available: boolean;
  /** Tools registered now, each with the revision its calls are pinned to. */
  tools: { name: string; revision: string }[];
}

/** The browser host's WebMCP part (`host.webmcp`). */
export interface BrowserWebMcp {
  /**
   * Register every offered tool revision (or `options.tools`) with the page's Model Context and keep them in step with
   * the registry: a new active revision replaces its registration, a removed tool unregisters. Calling it again
   * replaces the options. Without the API: `{ available: false, tools: [] }` and nothing else happens.
   * @throws TyError E_INVALID_SETTINGS for a tool name that is not a string
   */
  expose(options?: WebMcpExposeOptions): Promise<WebMcpStatus>;
  /** Unregister every tool and stop following the registry. Idempotent. */
  stop(): void;
  /** What is registered now. */
  status(): WebMcpStatus;
}

export interface WebMcpDeps {
  registry: Pick<ToolRegistry, 'list' | 'resolve'>;
  /** Be told when the tools may have changed (this page, or another sharing the store); returns the unsubscribe. */
  onRegistryChange(fn: () => void): () => void;
  /** Runs one call like host.invoke (events, audit, the browser's hints in error messages). */
  invoke(ref: string, args: unknown, opts: InvokeOptions): Promise<InvokeResult>;
  events: HostEvents;
  /** The page origin the principal names (default location.origin). */
  origin?: string;
}

/** The principal of an agent's call through WebMCP: `webmcp:<page origin>`. */
export const webmcpPrincipal = (origin: string): string => `webmcp:${origin}`;

function defaultModelContext(): ModelContextLike | undefined {
  const mc = (globalThis as { document?: { modelContext?: unknown } }).document?.modelContext;
  return mc && typeof (mc as ModelContextLike).registerTool === 'function' ? (mc as ModelContextLike) : undefined;
}

/** A call's result in MCP's content shape. */
export function toWebMcpResult(r: InvokeResult): WebMcpResult {
  if (!r.ok) return { content: [{ type: 'text', text: `${r.error.code}: ${r.error.message}` }], isError: true };
  const text = r.result === undefined ? 'null' : JSON.stringify(r.result);
  const structured =
    r.result !== null && typeof r.result === 'object' && !Array.isArray(r.result)
      ? (r.result as Record<string, unknown>)
      : undefined;
  return structured
    ? { content: [{ type: 'text', text }], structuredContent: structured }
    : { content: [{ type: 'text', text }] };
}

/**
 * The host's WebMCP part. Every registered tool's `execute` calls `NAME@REVISION` (the revision it was registered
 * for, even after the binding moved and before its registration is replaced) through `deps.invoke` with the principal
 * `webmcp:<origin>`: the arguments are validated against the revision's schema, the gate decides (rule kind
 * `tool(NAME@REV)` under that principal), a person is asked on the page's channels, and while a question of that call
 * waits the agent is told through `client.requestUserInteraction` when it offers it; the call runs in its sandbox and
 * is audited.
 */
export function createWebMcp(deps: WebMcpDeps): BrowserWebMcp {
  const origin = deps.origin ?? (globalThis as { location?: { origin?: string } }).location?.origin ?? 'null';
  const principal = webmcpPrincipal(origin);
  const registered = new Map<string, { revision: string; ac: AbortController }>();
  let options: WebMcpExposeOptions | undefined;
  let mc: ModelContextLike | undefined;
  let offChange: (() => void) | undefined;
  let sync: Promise<void> = Promise.resolve();
  /** Calls in flight whose agent offered requestUserInteraction, by `tool@revision`. */
  const interactive = new Map<string, Set<WebMcpClient>>();

  // A question about a tool revision an agent is calling: the agent hands the person the page until it is answered.
  deps.events.on('question-asked', (q) => {
    const clients = interactive.get(`${q.tool}@${q.revision}`);
    if (!clients) return;
    const answered = new Promise<void>((resolve) => {
      const off = deps.events.on('question-answered', (a) => {
        if (a.id !== q.id) return;
        off();
        resolve();
      });
    });
    for (const c of clients) void c.requestUserInteraction?.(() => answered).catch(() => undefined);
  });

  const toolFor = (name: string, revision: string, manifest: ToolManifest): WebMcpTool => ({
    name,
    description: manifest.description,
    inputSchema: manifest.parameters as Record<string, unknown>,
    annotations: { readOnlyHint: manifest.annotations?.readOnlyHint === true },
    async execute(input, client) {
      const key = `${name}@${revision}`;
      const asks = typeof client?.requestUserInteraction === 'function';
      if (asks) {
        let set = interactive.get(key);
        if (!set) interactive.set(key, (set = new Set()));
        set.add(client!);
      }
      try {
        const r = await deps.invoke(key, input ?? {}, {
          principal,
          ...(client?.signal ? { signal: client.signal } : {}),
        });
        return toWebMcpResult(r);
      } finally {
        if (asks) {
          const set = interactive.get(key);
          set?.delete(client!);
          if (set?.size === 0) interactive.delete(key);
        }
      }
    },
  });

  /** Bring the registrations in line with the registry (one pass at a time). */
  const resync = (): Promise<void> => {
    sync = sync.then(async () => {
      const ctx = mc;
      if (!ctx || !options) return;
      const want = new Map<string, string>();
      for (const t of await deps.registry.list()) {
        if (t.active === undefined) continue;
        if (options.tools && !options.tools.includes(t.name)) continue;
        want.set(t.name, t.active);
      }
      for (const [name, r] of [...registered]) {
        if (want.get(name) === r.revision) continue;
        r.ac.abort();
        registered.delete(name);
      }
      for (const [name, revision] of want) {
        if (registered.has(name)) continue;
        try {
          const tool = await deps.registry.resolve(`${name}@${revision}`);
          if (!options || mc !== ctx) return; // stopped meanwhile
          const ac = new AbortController();
          await ctx.registerTool(toolFor(name, revision, tool.manifest), { signal: ac.signal });
          if (!options) ac.abort();
          else registered.set(name, { revision, ac });
        } catch {
          /* a revision that cannot be read, or a name the browser refuses: not offered, the others are */
        }
      }
    });
    return sync;
  };

  const status = (): WebMcpStatus => ({
    available: mc !== undefined,
    tools: [...registered]
      .map(([name, r]) => ({ name, revision: r.revision }))
      .sort((a, b) => (a.name < b.name ? -1 : 1)),
  });

  return {
    async expose(o = {}) {
      options = o;
      mc = o.modelContext ?? defaultModelContext();
      if (!mc) return { available: false, tools: [] };
      offChange ??= deps.onRegistryChange(() => void resync());
      await resync();
      return status();
    },
    stop() {
      offChange?.();
      offChange = undefined;
      options = undefined;
      for (const r of registered.values()) r.ac.abort();
      registered.clear();
    },
    status,
  };
}
