// The function behind the built-in `python` tool (trusted-native, node/python/native-tool.ts): its interpreter, OS
// isolation and approval decided on first call; Node host, trusted side.
import type { Asker } from '../../core/ask/router.js';
import type { AuditRecord } from '../../core/audit/trail.js';
import { TyError } from '../../core/errors.js';
import type { PythonInfo } from '../python/native-tool.js';
import type { LoadedSettings } from '../settings/load.js';
import type { NodeHostOptions } from './options.js';

/**
 * The native function behind the built-in `python` tool. On first call (then kept for the host's life, so
 * one approval covers the session): resolve the posture (--sandbox, else settings, else auto) and plan OS
 * isolation with system libraries (node/os-sandbox planIsolation); find python3 on PATH and, when the
 * sandbox runs as another uid (root CLI -> 65534), switch to a system interpreter that uid can reach
 * (pythonForSandbox); then a PythonTool whose approval follows the `python(*)` rules (deny / allow / ask
 * via the host's asker; mode default otherwise).
 * @throws TyError E_SANDBOX_UNAVAILABLE (required posture without a backend; no interpreter the sandbox
 *   user can reach), E_TOOL_FAILED (python3 does not answer), and PythonTool.run's errors.
 */
export function pythonNative(o: {
  opts: NodeHostOptions;
  env: NodeJS.ProcessEnv;
  python: PythonInfo | undefined;
  settings: () => Promise<LoadedSettings>;
  asker: () => Promise<Asker>;
  revision: () => string;
  /** Appends one audit record durably (the approval decision, before any code runs). */
  record: (r: AuditRecord) => Promise<void>;
}): (args: unknown, ctx: unknown) => Promise<unknown> {
  let tool: Promise<import('../python/native-tool.js').PythonTool> | undefined;
  const build = async () => {
    const [
      { PythonTool, detectPython, pythonForSandbox },
      { resolvePosture, planIsolation, warnOnce },
      { probeSandbox },
      { decide },
    ] = await Promise.all([
      import('../python/native-tool.js'),
      import('../os-sandbox/posture.js'),
      import('../os-sandbox/probe.js'),
      import('../../core/policy/permissions.js'),
    ]);
    const settings = await o.settings();
    const posture = resolvePosture(o.opts.globals?.sandbox, settings.sandbox);
    let python = o.python ?? detectPython({ env: o.env });
    if (!python)
      throw new TyError(
        'E_TOOL_FAILED',
        'no working python3 was found on PATH (a python3 file is there but did not answer as Python 3)',
      );
    const options: import('../python/native-tool.js').PythonToolOptions = {
      python,
      asker: await o.asker(),
      policy: () => {
        const d = decide(settings.policy, { kind: 'python', toolName: 'python', revision: o.revision() });
        return { effect: d.effect, rule: d.trace.rule, scope: d.trace.scope };
      },
      // each approval decision leaves its own record (ALLOW / DENY naming the rule or the person), as the gate's do
      onDecision: (d, principal) =>
        o.record({
          v: 1,
          time: new Date().toISOString(),
          principal: principal ?? o.opts.principal ?? 'cli:user',
          tool: 'python',
          revision: o.revision(),
          kind: 'python',
          decision: d.allow ? 'allow' : 'deny',
          rule: d.rule,
          list: d.list,
          scope: d.scope,
          durationMs: 0,
          outcome: d.allow ? 'granted' : 'denied',
          ...(d.allow ? {} : { code: 'E_CAPABILITY_DENIED' as const }),
          ...(d.channel !== undefined ? { channel: d.channel } : {}),
        }),
    };
    if (o.opts.wrap) options.wrap = o.opts.wrap;
    else if (posture !== 'off') {
      const probe = await probeSandbox();
      const plan = planIsolation(posture, probe, { libraries: 'system', runtimes: ['python'] });
      if (plan.warning && o.opts.io) warnOnce(o.opts.io.stderr, plan.warning);
      if (plan.enforced && plan.wrap) {
        options.wrap = plan.wrap;
        if (probe.dropTo) {
          const who = { uid: probe.dropTo.uid, gid: probe.dropTo.gid };
          const chosen = pythonForSandbox(python, who);
          if (chosen.note && o.opts.io) warnOnce(o.opts.io.stderr, chosen.note);
          python = chosen.python;
          options.python = python;
          options.sandboxOwner = who;
        }
      }
    }
    return new PythonTool(options);
  };
  return async (args, ctx) => {
    tool ??= build();
    let t;
    try {
      t = await tool;
    } catch (e) {
      tool = undefined; // try again on the next call (e.g. after the interpreter is installed)
      throw e;
    }
    const signal =
      ctx !== null && typeof ctx === 'object' && (ctx as { signal?: unknown }).signal instanceof AbortSignal
        ? (ctx as { signal: AbortSignal }).signal
        : undefined;
    const principal =
      ctx !== null && typeof ctx === 'object'
        ? (ctx as { identity?: { principal?: unknown } }).identity?.principal
        : undefined;
    return t.run(args, { ...(signal ? { signal } : {}), ...(typeof principal === 'string' ? { principal } : {}) });
  };
}
