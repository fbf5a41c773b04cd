// Runs the model's tool calls as pinned function-call tasks through the browser host's gate and sandboxes; browser app,
// trusted side.
import { Invoker } from '../../../core/exec/invoke.js';
import { ToolRegistry } from '../../../core/revisions/registry.js';
import { Store } from '../../../core/store/contract.js';
import { MemoryStoreBackend } from '../../../core/store/memory.js';
import { capabilityFactory } from '../../../core/capabilities/handler.js';
import { visibleToolSignatures } from '../../../core/revisions/tasks.js';
import type { ToolManifest } from '../../../protocol/manifest.js';
import type { Task, ToolSignature } from '../../../protocol/task.js';
import type { BrowserHost } from '../../host.js';
import { BrowserFetchTransport } from '../../fetch.js';
import type { CallOutcome } from './convert.js';
import { toolFiles, type FileLoader } from '../attachments/parts.js';
import { putFilesInArgs } from '../attachments/tool-args.js';

/** The principal the app's calls run as (rules and audit). */
export const APP_PRINCIPAL = 'browser:app';

/**
 * Tool signatures and execution for one app. Registry tools are called by their pinned `name@revision`
 * through the host's invoker. A tool defined in the conversation (a tooldefinition task among the call's
 * ancestors) is never installed in the host registry: it runs through an invoker over a registry kept in
 * memory for that revision alone, with the host's gate, sandbox pool and capability handlers, so its
 * capability uses are asked about and audited like any other.
 */
export class ToolRunner {
  readonly #scoped = new Map<string, Invoker>();
  readonly #transport = new BrowserFetchTransport();
  /**
   * Calls in flight per revision: a retained sandbox runs one call at a time, so a concurrent call of the same revision
   * gets a disposable one.
   */
  readonly #inFlight = new Map<string, number>();

  constructor(
    private readonly host: BrowserHost,
    /** Names the person switched off in the tools panel: not offered to the model. */
    private readonly disabled: () => Set<string>,
    /** Reads files handed to tools (attachments/tool-args.ts); none: a reference stays as it is. */
    private readonly loadFile?: FileLoader,
  ) {}

  /** The active manifests of the host registry that are offered to the model. */
  async offeredTools(): Promise<ToolManifest[]> {
    const out: ToolManifest[] = [];
    const off = this.disabled();
    for (const b of await this.host.registry.list()) {
      if (!b.active || off.has(b.name)) continue;
      try {
        out.push((await this.host.registry.resolve(`${b.name}@${b.active}`)).manifest);
      } catch {
        /* a revision that fails its integrity check is not offered */
      }
    }
    // remote MCP servers' tools (SERVER__TOOL), each call through host.invoker: the gate, kind mcp, audited;
    // a name a model API cannot carry (a "." or "/" in the server's tool name) is not offered to the model
    for (const t of await this.host.mcp.listTools().catch(() => [])) {
      if (!off.has(t.name) && /^[a-zA-Z0-9_-]{1,64}$/.test(t.name)) out.push(t.manifest);
    }
    return out;
  }

  /**
   * What the model sees at the end of `path`: scoped definitions (nearest first) shadow registry tools of the same
   * name.
   */
  async signatures(path: Task[]): Promise<ToolSignature[]> {
    return visibleToolSignatures(path, { registry: this.host.registry, registryTools: await this.offeredTools() });
  }

  /** The parameters schema of `name@revision` (a scoped definition, a remote MCP tool or a registry revision). */
  async #parameters(name: string, revision: string, def: ToolManifest | undefined) {
    if (def) return def.parameters;
    const ref = `${name}@${revision}`;
    try {
      return (this.host.mcp.handles(ref) ? await this.host.mcp.resolve(ref) : await this.host.registry.resolve(ref))
        .manifest.parameters;
    } catch {
      return undefined;
    }
  }

  /**
   * Run one compiled function-call task. Calls of one round run at once: a second call of a revision that is
   * already running gets a disposable sandbox, so calls of the same tool overlap too. A string argument holding the
   * reference of a file handed to tools in the call's branch gets the file's content (attachments/tool-args.ts).
   * Never throws: every failure (unknown tool, E_INVALID_ARGS, a refusal, E_ABORTED after Stop) is an outcome the
   * model receives as the tool's result.
   */
  async run(call: Task, path: Task[], signal: AbortSignal): Promise<CallOutcome> {
    if (call.content.type !== 'functioncall' || !call.content.toolRevision)
      return { ok: false, error: { code: 'E_UNPINNED_TASK', message: 'the call is not pinned to a revision' } };
    const { name, toolRevision } = call.content;
    let args = call.content.arguments;
    const def = scopedManifest(path, name);
    const files = toolFiles(path);
    if (files.size > 0 && this.loadFile) {
      try {
        const params = await this.#parameters(name, toolRevision, def);
        args = (await putFilesInArgs(args, params, files, this.loadFile)).args;
      } catch (e) {
        return { ok: false, error: { code: 'E_INVALID_ARGS', message: e instanceof Error ? e.message : String(e) } };
      }
    }
    const invoker = def ? await this.#scopedInvoker(def, toolRevision) : this.host.invoker;
    const busy = this.#inFlight.get(toolRevision) ?? 0;
    this.#inFlight.set(toolRevision, busy + 1);
    let r;
    try {
      // An installed tool runs with the settings revision its task was pinned to (a scoped definition has none).
      const pinned = !def && call.content.settingsRevision ? { settingsRevision: call.content.settingsRevision } : {};
      r = await invoker.invoke(`${name}@${toolRevision}`, args, {
        signal,
        principal: APP_PRINCIPAL,
        ...pinned,
        ...(busy > 0 ? { disposable: true } : {}),
      });
    } finally {
      const n = (this.#inFlight.get(toolRevision) ?? 1) - 1;
      if (n > 0) this.#inFlight.set(toolRevision, n);
      else this.#inFlight.delete(toolRevision);
    }
    return r.ok
      ? { ok: true, value: r.result }
      : { ok: false, error: { code: r.error.code, message: r.error.message } };
  }

  async #scopedInvoker(manifest: ToolManifest, revision: string): Promise<Invoker> {
    const hit = this.#scoped.get(revision);
    if (hit) return hit;
    const registry = new ToolRegistry(new Store(new MemoryStoreBackend()));
    await registry.install(manifest);
    const inv = new Invoker({
      registry,
      pool: this.host.pool,
      gate: this.host.gate,
      capabilities: capabilityFactory({
        store: this.host.store,
        registry,
        gate: this.host.gate,
        transport: this.#transport,
      }),
      principal: APP_PRINCIPAL,
    });
    this.#scoped.set(revision, inv);
    return inv;
  }
}

/** The manifest of the nearest tooldefinition of `name` among the path's tasks, when it is the pinned revision. */
function scopedManifest(path: Task[], name: string): ToolManifest | undefined {
  for (let i = path.length - 1; i >= 0; i--) {
    const c = path[i]!.content;
    if (c.type !== 'tooldefinition') continue;
    const d = c.definition;
    if ('manifest' in d && d.manifest.name === name) return d.manifest;
    if ('binding' in d && d.binding.name === name) return undefined;
  }
  return undefined;
}
