// tycli diagnostics: runs the named security contracts against this command-line host; Node host, trusted side.
import type { CliCommand, CliContext } from '../../types.js';
import { fail, failWith, out, outJson, terminalSafe, progress } from '../../output.js';
import type { Contract } from '../../../diagnostics/contracts.js';
import type { HostContractRow } from '../../../diagnostics/browser.js';
import { settingPosture } from './sandbox.js';

/** Longest detail line in text output, characters (--json carries every line whole). */
const DETAIL_CHARS = 240;

/** `line` cut for the terminal: at most `max` characters, at a word boundary where one is near, with an ellipsis. */
export function clipLine(line: string, max = DETAIL_CHARS): string {
  if (line.length <= max) return line;
  const head = line.slice(0, max - 1);
  const space = head.lastIndexOf(' ');
  return `${space >= max * 0.6 ? head.slice(0, space) : head}…`;
}

/** The envelope's `error` when a contract failed (`{"ok":false,"error":{...},...}` like every other --json failure). */
function failed(rows: readonly { ok: boolean; name: string }[]): { error?: { code: string; message: string } } {
  const bad = rows.filter((r) => !r.ok).map((r) => r.name);
  return bad.length === 0
    ? {}
    : {
        error: {
          code: 'E_SANDBOX_FAILED',
          message: `${bad.length} of ${rows.length} security contracts failed: ${bad.slice(0, 20).join(', ')}`,
        },
      };
}

const diagnostics: CliCommand = {
  path: ['diagnostics'],
  summary: 'run the security-contract suite against this host (real probes through the real sandbox)',
  usage: `Usage: tycli diagnostics [--list] [--filter TEXT] [--json] [--verbose] [--browser [--frame srcdoc]] [--sandbox auto|required|off]

  --list          list the contracts (name and requirement) without running them
  --filter TEXT   only contracts whose name contains TEXT (case-insensitive, not empty), e.g. os_isolation
  --verbose       print every check of every contract, not only the failing ones
  --frame srcdoc  with --browser: run them with the sandbox frame in srcdoc mode (docs/browser.md), the page
                  served with the policy that mode needs
  --browser       also run the browser contracts in Debian's Chromium (served on 127.0.0.1, driven by
                  playwright-core; needs the source checkout and its dev dependencies) and print one
                  table for both hosts. Contracts of the same property carry the same name on both
                  hosts (e.g. tool_security_contracts); --filter also matches a browser check's title,
                  and --list --browser lists those titles under their contract. When no browser check
                  matches the filter, Chromium is not started.

Each contract runs a probe tool through the real Node and Deno sandboxes (and the OS sandbox of the
posture) and checks the outcome on the host. Prints a PASS/FAIL table; exit 0 when all pass, 1 when any
fails, 2 when the filter matches nothing. Long detail lines are cut for the terminal (at a word, with
"…"); --json carries them whole. With --json: one line {ok, host, isolation, contracts:[...]};
with --browser: {ok, hosts:["cli","browser"], isolation, contracts:[{host, name, check?, ok, detail}]}.`,
  allowPositionals: false,
  options: {
    list: { type: 'boolean' },
    filter: { type: 'string' },
    verbose: { type: 'boolean' },
    browser: { type: 'boolean' },
    frame: { type: 'string' },
  },
  async run(ctx, values) {
    try {
      const { selectContracts, runContracts } = await import('../../../diagnostics/contracts.js');
      const filter = typeof values.filter === 'string' ? values.filter : undefined;
      if (values.frame !== undefined && (values.frame !== 'srcdoc' || values.browser !== true))
        return fail(ctx, 'E_USAGE', '--frame takes srcdoc, with --browser (the default mode needs no flag)');
      if (filter !== undefined && filter.trim() === '')
        return fail(
          ctx,
          'E_USAGE',
          '--filter needs TEXT: an empty filter would select every contract (leave --filter out to run them all)',
        );
      const chosen = selectContracts('cli', filter);
      if (values.browser === true) return await bothHosts(ctx, chosen, filter, values);
      if (chosen.length === 0)
        return fail(ctx, 'E_USAGE', `no contract name contains "${filter ?? ''}" (tycli diagnostics --list)`);
      if (values.list === true) {
        if (ctx.globals.json)
          outJson(ctx, {
            contracts: chosen.map((c) => ({ name: c.name, requirement: c.requirement, hosts: c.hosts })),
          });
        else for (const c of chosen) out(ctx, `${c.name.padEnd(26)} ${c.requirement}`);
        return 0;
      }
      const { resolvePosture } = await import('../../../os-sandbox/posture.js');
      const posture = resolvePosture(
        ctx.globals.sandbox,
        ctx.globals.sandbox === undefined ? await settingPosture(ctx) : undefined,
      );
      const { CliContractHost } = await import('../../../diagnostics/cli-host.js');
      const bar = progress(ctx);
      bar.status('starting the CLI contract host...');
      const host = await CliContractHost.create({ posture });
      const results = await runContracts(host, chosen, (i, n, name) => bar.step(i, n, `cli: ${name}`));
      bar.done();
      const ok = results.every((r) => r.ok);
      const { pyodideStatus } = await import('../../../python/sandbox.js');
      const pyodide = pyodideStatus((await import('../../../sandbox/runtime.js')).packageRoot());
      const bwrap = (await import('../../../diagnostics/setup-paths.js')).probeAdvisories(host.probe);
      if (ctx.globals.json)
        outJson(ctx, {
          ok,
          ...failed(results),
          host: 'cli',
          isolation: host.describe(),
          ...(bwrap ? { bwrap } : {}),
          pyodide,
          contracts: results,
        });
      else {
        out(
          ctx,
          `host: cli; isolation: ${host.describe()}; posture: ${posture}; pyodide: ${pyodide.verified ? `${pyodide.version} (files verified)` : `unavailable (${pyodide.reason ?? ''})`}`,
        );
        if (bwrap) out(ctx, terminalSafe(ctx, clipLine(bwrap.summary, 400)));
        for (const r of results) {
          out(ctx, `${r.ok ? 'PASS' : 'FAIL'}  ${r.name}`);
          const lines = r.detail.split('\n').filter((l) => values.verbose === true || !l.startsWith('PASS'));
          for (const l of lines) out(ctx, terminalSafe(ctx, `      ${clipLine(l)}`));
        }
        out(ctx, `${results.filter((r) => r.ok).length}/${results.length} contracts passed`);
      }
      return ok ? 0 : 1;
    } catch (e) {
      return failWith(ctx, e);
    }
  },
};

async function cliPosture(ctx: CliContext) {
  const { resolvePosture } = await import('../../../os-sandbox/posture.js');
  return resolvePosture(ctx.globals.sandbox, ctx.globals.sandbox === undefined ? await settingPosture(ctx) : undefined);
}

/** `--browser`: the CLI contracts and the browser contracts, one table (or one JSON line) for both hosts. */
async function bothHosts(
  ctx: CliContext,
  chosen: Contract[],
  filter: string | undefined,
  values: Record<string, unknown>,
): Promise<number> {
  const { BROWSER_GROUPS, browserCheckTitles, browserGroupOf, runBrowserHostContracts, selectedBrowserChecks } =
    await import('../../../diagnostics/browser.js');
  const titles = browserCheckTitles();
  // undefined: the titles cannot be read here (no checkout); the browser run then says what is missing
  const checks = titles === undefined ? undefined : selectedBrowserChecks(titles, filter);
  const none = `no contract name or browser check title contains "${terminalSafe(ctx, filter ?? '', ctx.io.stderr)}" (tycli diagnostics --list --browser)`;
  if (values.list === true) {
    const f = filter?.toLowerCase();
    const groups = BROWSER_GROUPS.map((g) => ({
      ...g,
      checks: (checks ?? []).filter((t) => browserGroupOf(t) === g.name),
    })).filter((g) => g.checks.length > 0 || (checks === undefined && (!f || g.name.toLowerCase().includes(f))));
    const rows: { host: string; name: string; requirement: string; checks?: string[] }[] = [
      ...chosen.map((c) => ({ host: 'cli', name: c.name, requirement: c.requirement })),
      ...groups.map((g) => ({
        host: 'browser',
        name: g.name,
        requirement: g.requirement,
        ...(checks !== undefined ? { checks: g.checks } : {}),
      })),
    ];
    if (rows.length === 0) return fail(ctx, 'E_USAGE', none);
    if (ctx.globals.json) outJson(ctx, { contracts: rows });
    else
      for (const r of rows) {
        out(ctx, `${r.host.padEnd(8)} ${r.name.padEnd(26)} ${r.requirement}`);
        for (const t of r.checks ?? []) out(ctx, terminalSafe(ctx, `${''.padEnd(8)} ${''.padEnd(26)} - ${t}`));
      }
    return 0;
  }
  if (chosen.length === 0 && checks !== undefined && checks.length === 0) return fail(ctx, 'E_USAGE', none);
  const posture = await cliPosture(ctx);
  const bar = progress(ctx);
  const rows: HostContractRow[] = [];
  let isolation = 'not run';
  let bwrap: import('../../../os-sandbox/advisories.js').BwrapAdvisoryReport | undefined;
  if (chosen.length > 0) {
    const [{ runContracts }, { CliContractHost }] = await Promise.all([
      import('../../../diagnostics/contracts.js'),
      import('../../../diagnostics/cli-host.js'),
    ]);
    const host = await CliContractHost.create({ posture });
    isolation = host.describe();
    bwrap = (await import('../../../diagnostics/setup-paths.js')).probeAdvisories(host.probe);
    for (const r of await runContracts(host, chosen, (i, n, name) => bar.step(i, n, `cli: ${name}`)))
      rows.push({ host: 'cli', name: r.name, ok: r.ok, detail: r.detail });
  }
  // no browser check matches: Chromium is not started (nothing would run in it)
  const browserRun = checks === undefined || checks.length > 0;
  if (browserRun) {
    bar.status('browser: building the app and running the contracts in Chromium (this takes a while)...');
    const frame = values.frame === 'srcdoc' ? ('srcdoc' as const) : undefined;
    rows.push(
      ...(await runBrowserHostContracts({ ...(filter ? { filter } : {}), ...(frame ? { frame } : {}) }).finally(() =>
        bar.done(),
      )),
    );
  } else bar.done();
  if (rows.length === 0) return fail(ctx, 'E_USAGE', none);
  const ok = rows.every((r) => r.ok);
  if (ctx.globals.json) {
    outJson(ctx, {
      ok,
      ...failed(rows),
      hosts: ['cli', 'browser'],
      isolation,
      ...(bwrap ? { bwrap } : {}),
      ...(browserRun ? {} : { browser: 'not started: no browser check matches the filter' }),
      contracts: rows,
    });
    return ok ? 0 : 1;
  }
  const browserLine = browserRun
    ? 'Chromium (headless, loopback server)'
    : `not started (no browser check matches "${terminalSafe(ctx, filter ?? '', ctx.io.stdout)}")`;
  out(ctx, `cli isolation: ${isolation}; posture: ${posture}; browser: ${browserLine}`);
  if (bwrap) out(ctx, terminalSafe(ctx, clipLine(bwrap.summary, 400)));
  const nw = Math.max(8, ...rows.map((r) => r.name.length));
  out(ctx, `${'RESULT'}  ${'HOST'.padEnd(7)}  ${'CONTRACT'.padEnd(nw)}  CHECK`);
  for (const r of rows) {
    out(
      ctx,
      terminalSafe(ctx, `${r.ok ? 'PASS  ' : 'FAIL  '}  ${r.host.padEnd(7)}  ${r.name.padEnd(nw)}  ${r.check ?? '-'}`),
    );
    const lines = r.detail
      .split('\n')
      .filter(
        (l) => (values.verbose === true || !r.ok) && !(r.host === 'cli' && !values.verbose && l.startsWith('PASS')),
      );
    for (const l of lines) out(ctx, terminalSafe(ctx, `        ${clipLine(l)}`));
  }
  const per = (h: string) =>
    `${h} ${rows.filter((r) => r.host === h && r.ok).length}/${rows.filter((r) => r.host === h).length}`;
  out(ctx, `${rows.filter((r) => r.ok).length}/${rows.length} passed (${per('cli')}, ${per('browser')})`);
  return ok ? 0 : 1;
}

export const diagnosticsCommands: CliCommand[] = [diagnostics];
