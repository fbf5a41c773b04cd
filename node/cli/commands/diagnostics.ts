// tycli diagnostics: runs the named security contracts against this command-line host; Node host, trusted side.
import type { CliCommand, CliContext } from '../types.js';
import { fail, failWith, out, outJson } from '../output.js';
import { TyError } from '../../../core/errors.js';

async function settingPosture(ctx: CliContext): Promise<unknown> {
  try {
    const { loadSettings } = await import('../../settings.js');
    return (await loadSettings({ home: ctx.globals.home, cwd: ctx.cwd })).sandbox;
  } catch (e) {
    if (e instanceof TyError) throw e;
    return undefined;
  }
}

const diagnostics: CliCommand = {
  path: ['diagnostics'],
  summary: 'run the security-contract suite against this host (real probes through the real sandbox)',
  usage: `Usage: tycli diagnostics [--list] [--filter TEXT] [--json] [--verbose] [--sandbox auto|required|off]

  --list          list the contracts (name and requirement) without running them
  --filter TEXT   only contracts whose name contains TEXT (case-insensitive), e.g. os_isolation
  --verbose       print every check of every contract, not only the failing ones

Each contract runs a probe tool through the real Node and Deno sandboxes (and the OS sandbox of the
posture) and checks the outcome on the host. Prints a PASS/FAIL table; exit 0 when all pass, 1 when any
fails, 2 when the filter matches nothing. With --json: one line {ok, host, isolation, contracts:[...]}.`,
  allowPositionals: false,
  options: { list: { type: 'boolean' }, filter: { type: 'string' }, verbose: { type: 'boolean' } },
  async run(ctx, values) {
    try {
      const { selectContracts, runContracts } = await import('../../diagnostics/contracts.js');
      const filter = typeof values.filter === 'string' ? values.filter : undefined;
      const chosen = selectContracts('cli', filter);
      if (chosen.length === 0) return fail(ctx, 'E_USAGE', `no contract name contains "${filter ?? ''}" (tycli diagnostics --list)`);
      if (values.list === true) {
        if (ctx.globals.json) outJson(ctx, { contracts: chosen.map((c) => ({ name: c.name, requirement: c.requirement, hosts: c.hosts })) });
        else for (const c of chosen) out(ctx, `${c.name.padEnd(26)} ${c.requirement}`);
        return 0;
      }
      const { resolvePosture } = await import('../../os-sandbox/posture.js');
      const posture = resolvePosture(ctx.globals.sandbox, ctx.globals.sandbox === undefined ? await settingPosture(ctx) : undefined);
      const { CliContractHost } = await import('../../diagnostics/cli-host.js');
      const host = await CliContractHost.create({ posture });
      const results = await runContracts(host, chosen);
      const ok = results.every((r) => r.ok);
      if (ctx.globals.json) outJson(ctx, { ok, host: 'cli', isolation: host.describe(), contracts: results });
      else {
        out(ctx, `host: cli; isolation: ${host.describe()}; posture: ${posture}`);
        for (const r of results) {
          out(ctx, `${r.ok ? 'PASS' : 'FAIL'}  ${r.name}`);
          const lines = r.detail.split('\n').filter((l) => values.verbose === true || !l.startsWith('PASS'));
          for (const l of lines) out(ctx, `      ${l}`);
        }
        out(ctx, `${results.filter((r) => r.ok).length}/${results.length} contracts passed`);
      }
      return ok ? 0 : 1;
    } catch (e) {
      return failWith(ctx, e);
    }
  },
};

export const diagnosticsCommands: CliCommand[] = [diagnostics];
