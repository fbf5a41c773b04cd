// tycli sandbox status: the OS isolation backend, runtime versions and posture; Node host, trusted side.
import { spawnSync } from 'node:child_process';
import type { CliCommand, CliContext } from '../../types.js';
import { failWith, out, outJson } from '../../output.js';
import type { SandboxProbe } from '../../../os-sandbox/probe.js';
import type { Posture } from '../../../os-sandbox/posture.js';
import { TyError } from '../../../../core/errors.js';

export interface SandboxStatus {
  posture: Posture;
  postureSource: 'flag' | 'settings' | 'default';
  backend: SandboxProbe['backend'];
  available: boolean;
  /** True when tools will run inside the OS sandbox under this posture. */
  enforced: boolean;
  path?: string;
  version?: string;
  reason?: string;
  limits: { prlimit: boolean; sandboxUid?: number; sandboxUids?: { first: number; last: number } };
  runtimes: {
    node: { path: string; version: string };
    deno?: { path: string; version: string };
    python?: { path: string; version: string; onPath?: string; unusable?: string };
  };
  /**
   * Sandboxed Python: the Pyodide files Python revisions run on (inside the node/deno sandboxes), checked against the
   * manifest.
   */
  pyodide: import('../../../python/sandbox.js').PyodideStatus;
  /** The quickjs engine: its binary (checked against its pinned sha-256) and its sandbox host. */
  quickjs: import('../../../quickjs/status.js').QuickJsStatus;
  /** What is not enforced under this posture (empty when enforced). */
  notEnforced: string[];
  /** `required` without a backend: what would happen to a call. */
  refusal?: string;
}

function denoVersion(path: string): string | undefined {
  const r = spawnSync(path, ['--version'], { env: { NO_COLOR: '1' }, encoding: 'utf8', timeout: 10_000 });
  return r.status === 0 ? (/deno (\S+)/.exec(r.stdout)?.[1] ?? undefined) : undefined;
}

/** Collect the status for a posture (flag, else settings, else auto). The probe is injectable for tests. */
export async function sandboxStatus(opts: {
  flag?: unknown;
  setting?: unknown;
  probe?: SandboxProbe;
}): Promise<SandboxStatus> {
  const [{ probeSandbox }, { planIsolation, resolvePosture, UNENFORCED_WITHOUT_BACKEND }] = await Promise.all([
    import('../../../os-sandbox/probe.js'),
    import('../../../os-sandbox/posture.js'),
  ]);
  const posture = resolvePosture(opts.flag, opts.setting);
  const postureSource = opts.flag !== undefined ? 'flag' : opts.setting !== undefined ? 'settings' : 'default';
  const probe = opts.probe ?? (await probeSandbox());
  const status: SandboxStatus = {
    posture,
    postureSource,
    backend: probe.backend,
    available: probe.available,
    enforced: false,
    limits: {
      prlimit: probe.prlimit !== undefined,
      ...(probe.dropTo
        ? probe.dropTo.pool
          ? {
              sandboxUids: {
                first: probe.dropTo.pool.base,
                last: probe.dropTo.pool.base + probe.dropTo.pool.count - 1,
              },
            }
          : { sandboxUid: probe.dropTo.uid }
        : {}),
    },
    runtimes: { node: { path: process.execPath, version: process.version.replace(/^v/, '') } },
    pyodide: await import('../../../python/sandbox.js').then(async (m) =>
      m.pyodideStatus((await import('../../../sandbox/runtime.js')).packageRoot()),
    ),
    quickjs: (await import('../../../quickjs/status.js')).quickJsStatus(),
    notEnforced: [],
  };
  if (probe.path) status.path = probe.path;
  if (probe.version) status.version = probe.version;
  if (probe.reason) status.reason = probe.reason;
  try {
    const { resolveDeno } = await import('../../../sandbox/runtime.js');
    const deno = resolveDeno();
    const v = deno ? denoVersion(deno) : undefined;
    if (deno && v) status.runtimes.deno = { path: deno, version: v };
  } catch {
    /* no deno */
  }
  try {
    const { detectPython, pythonForSandbox } = await import('../../../python/native-tool.js');
    const py = detectPython();
    if (py) {
      status.runtimes.python = { path: py.path, version: py.version };
      // The interpreter the built-in python tool will really run: under an enforced sandbox that drops to another
      // uid (root CLI), the one that uid can reach (node/host/builtin-python.ts does the same choice).
      const { planIsolation: plan } = await import('../../../os-sandbox/posture.js');
      if (
        probe.dropTo &&
        posture !== 'off' &&
        plan(posture, probe, { libraries: 'system', runtimes: ['python'] }).enforced
      ) {
        try {
          const chosen = pythonForSandbox(py, { uid: probe.dropTo.uid, gid: probe.dropTo.gid });
          if (chosen.python.path !== py.path)
            status.runtimes.python = { path: chosen.python.path, version: chosen.python.version, onPath: py.path };
        } catch (e) {
          status.runtimes.python = { path: py.path, version: py.version, unusable: (e as Error).message };
        }
      }
    }
  } catch {
    /* no python */
  }
  try {
    status.enforced = planIsolation(posture, probe).enforced;
  } catch (e) {
    if (e instanceof TyError) status.refusal = `${e.code}: ${e.message}`;
    else throw e;
  }
  if (!status.enforced) {
    const kinds = [
      'node',
      'deno',
      ...(status.quickjs.available ? ['quickjs' as const] : []),
      ...(status.runtimes.python ? ['python' as const] : []),
    ] as const;
    for (const k of kinds) for (const l of UNENFORCED_WITHOUT_BACKEND[k]) status.notEnforced.push(`${k}: ${l}`);
  }
  return status;
}

/** The `sandbox` posture from the settings files (undefined when unset or unreadable for a non-TyError reason). */
export async function settingPosture(ctx: CliContext): Promise<unknown> {
  try {
    const { loadSettings } = await import('../../../settings/load.js');
    return (await loadSettings({ home: ctx.globals.home, cwd: ctx.cwd })).sandbox;
  } catch (e) {
    if (e instanceof TyError) throw e;
    return undefined;
  }
}

const status: CliCommand = {
  path: ['sandbox', 'status'],
  summary: 'show the OS sandbox backend (bubblewrap / Seatbelt), runtime versions and the isolation posture',
  usage: `Usage: tycli sandbox status [--json] [--sandbox auto|required|off]

Probes the OS sandbox once (bubblewrap with working user namespaces on Linux, sandbox-exec on macOS;
5 s timeout) and prints: backend and version, whether tools will run inside it under the posture
(--sandbox, else the settings key "sandbox", else auto), the process limits, the runtime versions
(node, deno, native python), the Pyodide files sandboxed Python revisions run on (checked against
their sha-256 manifest), the quickjs engine (its QuickJS binary checked against its pinned sha-256,
and the sandbox host process quickjs revisions run in, one per principal) and, when not enforced,
what is then not protected.
Exit 0 when tools run isolated or the posture is an explicit off/auto fallback; 1 when posture
required cannot be met.`,
  allowPositionals: false,
  async run(ctx) {
    try {
      const s = await sandboxStatus({
        flag: ctx.globals.sandbox,
        setting: ctx.globals.sandbox === undefined ? await settingPosture(ctx) : undefined,
      });
      if (ctx.globals.json) outJson(ctx, s);
      else {
        out(ctx, `posture:   ${s.posture} (${s.postureSource})`);
        out(
          ctx,
          `backend:   ${s.backend}${s.version ? ` (${s.version})` : ''}${s.path ? ` at ${s.path}` : ''}: ${s.available ? 'available' : `unavailable: ${s.reason ?? ''}`}`,
        );
        out(
          ctx,
          `isolation: ${s.enforced ? 'enforced: tools run inside the OS sandbox' : s.refusal ? `refused: ${s.refusal}` : 'NOT enforced'}`,
        );
        if (s.backend === 'bwrap' && s.available) {
          const kinds = s.limits.prlimit
            ? 'process count, CPU, data and file size (prlimit)'
            : 'none (prlimit missing)';
          const uids = s.limits.sandboxUids;
          const who = uids
            ? `; each sandbox runs as its own uid from ${uids.first}-${uids.last} (the CLI runs as root)`
            : s.limits.sandboxUid !== undefined
              ? `; sandboxes run as uid ${s.limits.sandboxUid} (the CLI runs as root)`
              : '';
          out(ctx, `limits:    ${kinds}${who}`);
        }
        out(ctx, `node:      ${s.runtimes.node.version} (${s.runtimes.node.path})`);
        out(
          ctx,
          `deno:      ${s.runtimes.deno ? `${s.runtimes.deno.version} (${s.runtimes.deno.path})` : 'not found'}`,
        );
        const py = s.runtimes.python;
        const pyFound = py
          ? `${py.version} (${py.path})` +
            (py.onPath ? `, used instead of ${py.onPath} on PATH, which the sandbox user cannot reach` : '') +
            (py.unusable ? `; unusable in the sandbox: ${py.unusable}` : '')
          : 'not found';
        out(ctx, `python:    ${pyFound} (native, the built-in python tool)`);
        const p = s.pyodide;
        out(
          ctx,
          `pyodide:   ${p.verified ? `${p.version} (${p.path}): files match core/pyodide-manifest.json; Python revisions run sandboxed in the node/deno sandboxes` : `unavailable: ${p.reason ?? ''}`}`,
        );
        const q = s.quickjs;
        out(
          ctx,
          `quickjs:   ${q.available ? `${q.version} (${q.package}, sha-256 checked): quickjs revisions run in one sandbox host process per principal (${q.host})` : `unavailable: ${q.reason ?? ''}`}`,
        );
        if (s.notEnforced.length) {
          out(ctx, 'not enforced now:');
          for (const l of s.notEnforced) out(ctx, `  - ${l}`);
        }
      }
      return s.refusal ? 1 : 0;
    } catch (e) {
      return failWith(ctx, e);
    }
  },
};

export const sandboxCommands: CliCommand[] = [status];
