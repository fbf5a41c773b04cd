// The command-line host as the security contracts see it: runs a tool source through the real Node/Deno/QuickJS runtime
// and OS wrapper; Node host, trusted side.
import { DEFAULT_LIMITS, type CapabilityHandler, type CallLimits } from '../../core/exec/runtime.js';
import { TyError, toTyError } from '../../core/errors.js';
import { revisionId } from '../../core/revisions/registry.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { NodeSandboxRuntime, packageRoot, resolveDeno, type SpawnWrapper } from '../sandbox/runtime.js';
import { QuickJsSandboxRuntime, SANDBOX_HOST_BUNDLE } from '../quickjs/runtime.js';
import { planIsolation, type IsolationPlan, type Posture } from '../os-sandbox/posture.js';
import { probeSandbox, type SandboxProbe } from '../os-sandbox/probe.js';

export type Engine = 'node' | 'deno' | 'quickjs';
/**
 * `full`: engine permission checks + OS sandbox; `os-only`: the engine's own checks switched off, the OS sandbox alone.
 */
export type Layers = 'full' | 'os-only';

export interface RunToolOptions {
  engine: Engine;
  /** `javascript` (default) or `python` (Pyodide in the same sandbox process). */
  runtime?: 'javascript' | 'python';
  source: string;
  args: unknown;
  layers?: Layers;
  limits?: Partial<CallLimits>;
  folders?: { path: string; access: 'read' | 'write' }[];
  onCapability?: CapabilityHandler;
  /** Build the capability handler for the probe's own revision identity (wins over onCapability). */
  capabilityFor?: (identity: {
    name: string;
    revision: string;
    manifest: ToolManifest;
    principal: string;
  }) => CapabilityHandler;
  signal?: AbortSignal;
}
export type RunToolResult = { ok: true; value: unknown } | { ok: false; code: string; message: string };

/** What a security contract needs from a host. The browser host implements the same shape. */
export interface ContractHost {
  readonly name: 'cli' | 'browser';
  /**
   * Engines this host can run (`node` always; `deno` when its binary exists; `quickjs` when its sandbox host is built).
   */
  engines(): Engine[];
  /** True when an OS sandbox wraps every tool process. */
  osEnforced(): boolean;
  /** Plain description of the isolation in force, for reports. */
  describe(): string;
  runTool(opts: RunToolOptions): Promise<RunToolResult>;
}

const refuse: CapabilityHandler = async () => {
  throw new TyError('E_CAPABILITY_DENIED', 'no capabilities in this diagnostics run');
};

/**
 * Strip the engine's own permission checks from a spawn (Node: the permission flag and its --allow-fs-*
 * grants; Deno: add --allow-all), so that only the OS sandbox stands. Used by diagnostics and tests to
 * prove the OS layer holds by itself; never reachable from `tycli run`.
 */
export function withoutEnginePermissions(engine: Engine, wrap: SpawnWrapper): SpawnWrapper {
  return (req) => {
    let args: string[];
    if (engine === 'node') {
      args = req.args.filter(
        (a) =>
          a !== '--permission' &&
          a !== '--experimental-permission' &&
          !a.startsWith('--allow-fs-') &&
          a !== '--allow-child-process' &&
          a !== '--allow-worker',
      );
    } else {
      const i = req.args.indexOf('run');
      args = i === -1 ? [...req.args] : [...req.args.slice(0, i + 1), '--allow-all', ...req.args.slice(i + 1)];
    }
    return wrap({ ...req, args });
  };
}

export interface CliContractHostOptions {
  posture?: Posture;
  /** Probe result (default: the cached real probe). */
  probe?: SandboxProbe;
  denoPath?: string;
  nodePath?: string;
}

/** The CLI host for contracts. Build with `await CliContractHost.create()`. */
export class CliContractHost implements ContractHost {
  readonly name = 'cli' as const;
  readonly plan: IsolationPlan;
  readonly probe: SandboxProbe;
  readonly #opts: CliContractHostOptions;
  readonly #deno: string | undefined;

  private constructor(plan: IsolationPlan, probe: SandboxProbe, opts: CliContractHostOptions) {
    this.plan = plan;
    this.probe = probe;
    this.#opts = opts;
    let deno: string | undefined;
    try {
      deno = opts.denoPath ?? resolveDeno();
    } catch {
      deno = undefined;
    }
    this.#deno = deno;
  }

  /** @throws TyError E_SANDBOX_UNAVAILABLE (posture required without a backend) */
  static async create(opts: CliContractHostOptions = {}): Promise<CliContractHost> {
    const probe = opts.probe ?? (await probeSandbox());
    return new CliContractHost(planIsolation(opts.posture ?? 'auto', probe), probe, opts);
  }

  engines(): Engine[] {
    const out: Engine[] = this.#deno ? ['node', 'deno'] : ['node'];
    if (existsSync(join(packageRoot(), SANDBOX_HOST_BUNDLE))) out.push('quickjs');
    return out;
  }
  osEnforced(): boolean {
    return this.plan.enforced;
  }
  describe(): string {
    return this.plan.enforced
      ? `${this.plan.backend} (${this.probe.version ?? this.probe.path ?? ''})`
      : `no OS sandbox (${this.probe.reason ?? this.plan.posture})`;
  }

  async runTool(o: RunToolOptions): Promise<RunToolResult> {
    const layers = o.layers ?? 'full';
    let wrap = this.plan.wrap;
    if (layers === 'os-only') {
      // Never run with the engine's checks off unless the OS sandbox is there to hold.
      if (!wrap)
        return {
          ok: false,
          code: 'E_SANDBOX_UNAVAILABLE',
          message: 'no OS sandbox: the OS-only layer cannot be tested here',
        };
      wrap = withoutEnginePermissions(o.engine, wrap);
    }
    // quickjs: a sandbox host process of its own for this call (no engine check to switch off: os-only is refused above
    // by the contracts, which run the OS layer alone on node and deno only)
    if (o.engine === 'quickjs' && layers === 'os-only')
      return { ok: false, code: 'E_USAGE', message: 'the quickjs engine has no engine checks to switch off' };
    const quickjs =
      o.engine === 'quickjs'
        ? new QuickJsSandboxRuntime({ workers: 1, idleProcessMs: 0, ...(wrap ? { wrap } : {}) })
        : undefined;
    const runtime =
      quickjs ??
      new NodeSandboxRuntime({
        engine: o.engine === 'deno' ? 'deno' : 'node',
        ...(wrap ? { wrap } : {}),
        ...(this.#deno ? { denoPath: this.#deno } : {}),
        ...(this.#opts.nodePath ? { nodePath: this.#opts.nodePath } : {}),
      });
    const limits: CallLimits = { ...DEFAULT_LIMITS, timeoutMs: o.runtime === 'python' ? 120_000 : 30_000, ...o.limits };
    const manifest: ToolManifest = {
      name: 'diagnostics_probe',
      description: 'security contract probe',
      parameters: { type: 'object' },
      execution: { kind: 'sandboxed-code', runtime: o.runtime ?? 'javascript', source: o.source, engine: o.engine },
    };
    const revision = await revisionId(manifest);
    const signal = o.signal ?? new AbortController().signal;
    let inst;
    try {
      inst = await runtime.start(
        { revision, manifest, limits, principal: 'cli:diagnostics', ...(o.folders ? { folders: o.folders } : {}) },
        signal,
      );
      const onCapability = o.capabilityFor
        ? o.capabilityFor({ name: manifest.name, revision, manifest, principal: 'cli:diagnostics' })
        : (o.onCapability ?? refuse);
      const value = await inst.call(o.args, { signal, limits, onCapability });
      return { ok: true, value };
    } catch (e) {
      const t = toTyError(e, 'E_SANDBOX_FAILED');
      return { ok: false, code: t.code, message: t.message };
    } finally {
      await inst?.destroy('diagnostics call finished');
      quickjs?.close();
    }
  }
}
