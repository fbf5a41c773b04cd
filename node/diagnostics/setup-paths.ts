// The `bwrap_setup_paths` security contract: the installed bubblewrap's version and the advisories that affect it,
// and the command lines of this machine's sandboxes checked for the class of GHSA-pxhw-h44j-8pfx; Node host, trusted
// side.
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_LIMITS, type SandboxSpec } from '../../core/exec/runtime.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import { bwrapAdvisories, isSetuidRoot, type BwrapAdvisoryReport } from '../os-sandbox/advisories.js';
import { othersCanWrite, setupPathViolations } from '../os-sandbox/mount-plan.js';
import { planIsolation } from '../os-sandbox/posture.js';
import type { SandboxProbe } from '../os-sandbox/probe.js';
import { NodeSandboxRuntime, type SpawnWrapper } from '../sandbox/runtime.js';
import { detectPython, pythonForSandbox, PythonTool } from '../python/native-tool.js';
import { CliContractHost, type ContractHost } from './cli-host.js';

/** The advisory report of a probe's bwrap (undefined when the backend is not bubblewrap). */
export function probeAdvisories(probe: SandboxProbe): BwrapAdvisoryReport | undefined {
  if (probe.backend !== 'bwrap' || probe.path === undefined) return undefined;
  return bwrapAdvisories(probe.version, { setuid: isSetuidRoot(probe.path) });
}

const manifest = (runtime: 'javascript' | 'python'): ToolManifest => ({
  name: 'diagnostics_setup_paths',
  description: 'setup-path check',
  parameters: {},
  execution: {
    kind: 'sandboxed-code',
    runtime,
    source: runtime === 'python' ? 'def main(args):\n  return 1\n' : 'export default async () => 1',
  },
});

/** Each kind of sandbox's wrapped command line on this machine: name and argv. */
async function commandLines(
  wrap: SpawnWrapper,
  probe: SandboxProbe,
  engines: ('node' | 'deno')[],
  dir: string,
): Promise<[string, string[]][]> {
  const made = (name: string, mode: number) => {
    const p = join(dir, name);
    mkdirSync(p, { recursive: true });
    chmodSync(p, mode);
    return p;
  };
  const ro = made('read', 0o755);
  const rw = made('write', 0o777);
  const nested = made('read/out', 0o777);
  const out: [string, string[]][] = [];
  const capture = (req: Parameters<SpawnWrapper>[0], using: SpawnWrapper = wrap): string[] => {
    const w = using(req);
    w.release?.();
    return [w.command, ...w.args];
  };
  for (const engine of engines) {
    const rt = new NodeSandboxRuntime({ engine });
    for (const runtime of ['javascript', 'python'] as const) {
      const spec: SandboxSpec = {
        revision: `setup-paths-${engine}-${runtime}`,
        manifest: manifest(runtime),
        limits: { ...DEFAULT_LIMITS },
        folders: [
          { path: ro, access: 'read' },
          { path: rw, access: 'write' },
          { path: nested, access: 'write' },
        ],
      };
      out.push([`${engine}/${runtime} with read-only, writable and nested folders`, capture(rt.command(spec))]);
    }
  }
  const found = detectPython();
  const pythonWrap = planIsolation('required', probe, { libraries: 'system', runtimes: ['python'] }).wrap;
  if (found && pythonWrap) {
    // the built-in python tool's interpreter (one the sandbox's uid can reach when the CLI runs as root)
    const python = probe.dropTo ? pythonForSandbox(found, probe.dropTo).python : found;
    let argv: string[] | undefined;
    // the tool makes its work folder and hands over its command line; the line is kept, and nothing runs
    await new PythonTool({
      python,
      preapproved: true,
      wrap: (req) => {
        argv = capture(req as Parameters<SpawnWrapper>[0], pythonWrap);
        return { command: '/bin/true', args: [], env: {} };
      },
      ...(probe.dropTo ? { sandboxOwner: { uid: probe.dropTo.uid, gid: probe.dropTo.gid } } : {}),
    }).run({ code: 'pass' });
    if (argv) out.push(['-/native-python (system libraries, its work folder)', argv]);
  }
  return out;
}

/**
 * `bwrap_setup_paths`: PASS lines for the installed bubblewrap's version and each advisory that affects it (FAIL for
 * one tysandbox cannot avoid, e.g. a setuid-root bwrap's), then one line per kind of sandbox (node and deno, JavaScript
 * and Python, with read-only, writable and nested folder grants; native python) whose real command line is checked by
 * setupPathViolations. Not applicable (PASS) to Seatbelt.
 */
export const setupPathsContract = {
  name: 'bwrap_setup_paths',
  requirement:
    "The installed bubblewrap's version and the known advisories that affect it are reported, and no sandbox's " +
    'command line makes bwrap create a path beneath a folder the sandbox or another user can write ' +
    '(the class of GHSA-pxhw-h44j-8pfx).',
  hosts: ['cli' as const],
  async run(host: ContractHost): Promise<{ ok: boolean; detail: string }> {
    if (!(host instanceof CliContractHost)) return { ok: false, detail: 'FAIL not the command-line host' };
    if (!host.osEnforced()) return { ok: false, detail: `FAIL no OS sandbox enforced here: ${host.describe()}` };
    const report = probeAdvisories(host.probe);
    if (report === undefined || host.plan.wrap === undefined)
      return { ok: true, detail: `PASS ${host.plan.backend}: not bubblewrap, nothing to check` };
    const lines: string[] = [
      `PASS -/bwrap version: ${report.version ?? 'unknown'}${report.setuid ? ' (setuid root)' : ''}`,
    ];
    let ok = true;
    for (const a of report.advisories) {
      const fine = a.tysandbox.exposure === 'not-exposed';
      ok &&= fine;
      lines.push(
        `${fine ? 'PASS' : 'FAIL'} -/bwrap advisory ${[a.id, ...a.aliases].join(' / ')} (fixed in ${a.fixedIn}): ` +
          `${fine ? `applies, not exposed through tysandbox: ${a.tysandbox.why}` : a.tysandbox.why}`,
      );
    }
    if (report.advisories.length === 0) lines.push('PASS -/bwrap advisories: none known for this version');
    const dir = mkdtempSync(join(tmpdir(), 'tysandbox-setup-paths-'));
    try {
      chmodSync(dir, 0o755);
      const me = host.probe.dropTo?.uid ?? process.geteuid?.() ?? 0;
      for (const [name, argv] of await commandLines(
        host.plan.wrap,
        host.probe,
        // quickjs's host process goes through the same wrapper, whose final check refuses any violation (bwrap.ts)
        host.engines().filter((e): e is 'node' | 'deno' => e === 'node' || e === 'deno'),
        dir,
      )) {
        const bad = setupPathViolations(argv, host.probe.path as string, (p) => othersCanWrite(p, me));
        ok &&= bad.length === 0;
        lines.push(
          `${bad.length === 0 ? 'PASS' : 'FAIL'} ${name}: ${bad.length === 0 ? 'no setup path beneath a writable folder' : bad.join('; ')}`,
        );
      }
    } catch (e) {
      ok = false;
      lines.push(`FAIL building the command lines: ${(e as Error).message}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return { ok, detail: lines.join('\n') };
  },
};
