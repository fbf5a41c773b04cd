// tycli entry: global options, dispatch over the longest matching command path, help, exit codes; Node host, trusted
// side.
import { parseArgs } from 'node:util';
import { commands as defaultCommands } from './commands/index.js';
import { fail, failWith } from './output.js';
import { TyError } from '../../core/errors.js';
import { distance, nearest, suggestTool } from './suggest.js';
import type { CliCommand, CliContext, CliIO, GlobalOptions } from './types.js';
import { GLOBAL_HELP, GLOBAL_OPTIONS } from './globals.js';

const SANDBOX_POSTURES = new Set(['auto', 'required', 'off']);

/** Positional words before the first option-looking token or `--`, skipping global options and their values. */
function leadingWords(argv: string[]): { word: string; index: number }[] {
  const words: { word: string; index: number }[] = [];
  for (let i = 0; i < argv.length; i++) {
    const t = argv[i]!;
    if (t === '--') break;
    if (t.startsWith('-') && t !== '-') {
      const name = t.replace(/^--?/, '').split('=')[0]!;
      const def = (GLOBAL_OPTIONS as Record<string, { type: string }>)[name];
      if (def?.type === 'string' && !t.includes('=')) i++;
      else if (!def) break; // a command option: command words come first
      continue;
    }
    words.push({ word: t, index: i });
  }
  return words;
}

function findCommand(table: CliCommand[], words: string[]): CliCommand | undefined {
  let best: CliCommand | undefined;
  for (const c of table) {
    if (
      c.path.length <= words.length &&
      c.path.every((w, i) => words[i] === w) &&
      (!best || c.path.length > best.path.length)
    )
      best = c;
  }
  return best;
}

function commandHelp(c: CliCommand): string {
  return `tycli ${c.path.join(' ')}: ${c.summary}\n\n${c.usage.trimEnd()}\n\n${GLOBAL_HELP}\n`;
}

function listHelp(table: CliCommand[], prefix: string[] = []): string {
  const shown = table.filter((c) => prefix.every((w, i) => c.path[i] === w));
  const width = Math.max(...shown.map((c) => c.path.join(' ').length), 8);
  const lines = shown.map((c) => `  ${c.path.join(' ').padEnd(width)}  ${c.summary}`);
  return (
    `tycli: run the code behind LLM tool calls in a sandbox.\n\nUsage: tycli [global options] COMMAND ` +
    `[options]\n\nCommands:\n${lines.join('\n')}\n\nRun 'tycli COMMAND --help' for a command's options.\n\n${GLOBAL_HELP}\n\nExit ` +
    `codes: 0 ok, 1 the tool failed or the call was refused, 2 bad usage or input.\n`
  );
}

/** The default terminal IO. */
export function processIO(): CliIO {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    interactive: Boolean(process.stdin.isTTY && process.stderr.isTTY),
  };
}

/** How main() runs: the IO, environment, folder and command table (defaults: the process's), and who stops it. */
export interface MainOptions {
  io?: CliIO;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  commands?: CliCommand[];
  /**
   * Own the process's SIGINT and SIGTERM while the command runs (bin/tycli.mjs): the command sees ctx.signal abort
   * and winds down, and main() returns 130 (128 + SIGINT) or 143 (SIGTERM). This is the only place in node/ that
   * listens to process signals; every command stops through ctx.signal.
   */
  signals?: boolean;
  /** An embedder's stop: aborting it aborts ctx.signal (a serving command ends, a running call is aborted). */
  signal?: AbortSignal;
}

/**
 * Run tycli with `argv` (without node and script). Returns the exit code: 0 ok, 1 the tool failed or
 * the call was refused, 2 bad usage or input (E_USAGE and other input errors); 130 / 143 after a signal (`signals`).
 */
export async function main(argv: string[], opts: MainOptions = {}): Promise<number> {
  if (!opts.signals) return run(argv, opts);
  // Ctrl-C: commands see ctx.signal abort and wind down; the exit code is 130 (128 + SIGINT), 143 for SIGTERM.
  // A second Ctrl-C, or a command that has not finished 5 s later, exits at once with that code.
  const interrupt = new AbortController();
  let signalled: number | undefined;
  const onSignal = (sig: NodeJS.Signals) => {
    const code = sig === 'SIGINT' ? 130 : 143;
    if (signalled !== undefined) process.exit(signalled);
    signalled = code;
    interrupt.abort(new TyError('E_ABORTED', sig === 'SIGINT' ? 'interrupted (Ctrl-C)' : 'terminated (SIGTERM)'));
    setTimeout(() => process.exit(code), 5000).unref();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const signal = opts.signal ? AbortSignal.any([opts.signal, interrupt.signal]) : interrupt.signal;
    const code = await run(argv, { ...opts, signal });
    return signalled ?? code;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

async function run(argv: string[], opts: Omit<MainOptions, 'signals'>): Promise<number> {
  const io = opts.io ?? processIO();
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  const table = opts.commands ?? defaultCommands;
  const wantsJson = argv.includes('--json');
  const early: CliContext = { io, env, cwd, globals: { home: '', json: wantsJson, allow: [], deny: [] } };

  const words = leadingWords(argv);
  const cmd = findCommand(
    table,
    words.map((w) => w.word),
  );
  if (!cmd) {
    const typed = words.map((w) => w.word);
    if (typed.length === 0) {
      if (argv.includes('--help') || argv.includes('-h') || argv.length === 0) {
        io.stdout.write(listHelp(table));
        return argv.length === 0 ? 2 : 0;
      }
      if (argv.includes('--version') || argv.includes('-V')) {
        const version = await packageVersion();
        if (wantsJson) io.stdout.write(`${JSON.stringify({ ok: true, name: 'tycli', version })}\n`);
        else io.stdout.write(`tycli ${version}\n`);
        return 0;
      }
      // an option before any command word that is no global option (a typo like --hom): name it, not "no command"
      const stray = argv.find(
        (t) =>
          t !== '-' &&
          t !== '--' &&
          t.startsWith('-') &&
          !(t.replace(/^--?/, '').split('=')[0]! in GLOBAL_OPTIONS) &&
          !['--help', '-h', '--version', '-V'].includes(t),
      );
      if (stray !== undefined) {
        const flag = stray.split('=')[0]!.slice(0, 80);
        const near = nearest(
          flag,
          Object.keys(GLOBAL_OPTIONS).map((k) => `--${k}`),
        );
        return fail(
          early,
          'E_USAGE',
          `Unknown option '${flag}' before the command${near ? `; did you mean '${near}'?` : ''} (see 'tycli --help')`,
        );
      }
      return fail(early, 'E_USAGE', `no command given; run 'tycli --help'`);
    }
    if (typed[0] === 'help') {
      io.stdout.write(listHelp(table));
      return 0;
    }
    const group = table.filter((c) => c.path[0] === typed[0]);
    if (group.length > 0 && typed.length === 1 && (argv.includes('--help') || argv.includes('-h'))) {
      io.stdout.write(listHelp(table, [typed[0]!]));
      return 0;
    }
    const attempt = typed.slice(0, 2).join(' ');
    const ranked = table
      .map((c) => {
        const t = typed.slice(0, c.path.length).join(' ');
        return { c, t, d: distance(t, c.path.join(' ')) };
      })
      .sort((a, b) => a.d - b.d);
    const best = ranked[0];
    const hint =
      best && best.d <= Math.max(1, Math.floor(best.t.length / 3))
        ? `; did you mean 'tycli ${best.c.path.join(' ')}'?`
        : group.length
          ? `; '${typed[0]}' has: ${group.map((c) => c.path.join(' ')).join(', ')}`
          : '';
    const shown = best && best.d <= Math.max(1, Math.floor(best.t.length / 3)) ? best.t : attempt;
    return fail(early, 'E_USAGE', `unknown command '${shown}'${hint} (see 'tycli --help')`);
  }

  // Remove the command words, then parse global + command options strictly.
  const used = new Set(words.slice(0, cmd.path.length).map((w) => w.index));
  const rest = argv.filter((_, i) => !used.has(i));
  let values: Record<string, unknown>;
  let positionals: string[];
  try {
    const options = { ...(cmd.options ?? {}), ...GLOBAL_OPTIONS };
    const parsed = parseArgs({
      args: rest,
      options,
      allowPositionals: cmd.allowPositionals ?? true,
      strict: true,
      tokens: true,
    });
    values = parsed.values as Record<string, unknown>;
    positionals = parsed.positionals;
    // a command's option that takes one value, given twice: the first would be dropped without a word (global
    // options may come from a wrapper's fixed prefix, e.g. --home in an MCP client's configuration: last one wins)
    const own = (cmd.options ?? {}) as Record<string, { type: string; multiple?: boolean }>;
    const seen = new Set<string>();
    for (const t of parsed.tokens ?? []) {
      if (
        t.kind !== 'option' ||
        !Object.hasOwn(own, t.name) ||
        own[t.name]?.type !== 'string' ||
        own[t.name]?.multiple === true
      )
        continue;
      if (seen.has(t.name)) {
        return fail(
          early,
          'E_USAGE',
          `--${t.name} is given more than once; give it once (see 'tycli ${cmd.path.join(' ')} --help')`,
        );
      }
      seen.add(t.name);
    }
  } catch (e) {
    const msg = (e as Error).message.replace(/\. To specify a positional argument.*$/s, '');
    const unknown = /^Unknown option '(-{1,2}[^']{1,80})'/.exec(msg)?.[1];
    const known = Object.entries({ ...(cmd.options ?? {}), ...GLOBAL_OPTIONS }).flatMap(([k, o]) => [
      `--${k}`,
      ...((o as { short?: string }).short ? [`-${(o as { short?: string }).short}`] : []),
    ]);
    const near = unknown ? nearest(unknown.split('=')[0]!, known) : undefined;
    return fail(
      early,
      'E_USAGE',
      `${msg}${near ? `; did you mean '${near}'?` : ''} (see 'tycli ${cmd.path.join(' ')} --help')`,
    );
  }
  if (values.help) {
    io.stdout.write(commandHelp(cmd));
    return 0;
  }
  let globals: GlobalOptions;
  try {
    const { resolveHome } = await import('../store/paths.js');
    let sandbox = values.sandbox as string | undefined;
    if (sandbox !== undefined && !SANDBOX_POSTURES.has(sandbox) && cmd.sandboxNames) {
      if (values.client !== undefined && values.client !== sandbox)
        return fail(
          early,
          'E_USAGE',
          `--sandbox ${sandbox.slice(0, 40)} and --client ${String(values.client).slice(0, 40)} name two client contexts; give one`,
        );
      values.client = sandbox;
      sandbox = undefined;
    }
    if (sandbox !== undefined && !SANDBOX_POSTURES.has(sandbox))
      return fail(early, 'E_USAGE', `--sandbox must be auto, required or off (got "${sandbox.slice(0, 40)}")`);
    globals = {
      home: resolveHome({ home: values.home as string | undefined, env, cwd }),
      json: values.json === true,
      allow: (values.allow as string[] | undefined) ?? [],
      deny: (values.deny as string[] | undefined) ?? [],
    };
    if (values.mode !== undefined) globals.mode = values.mode as string;
    if (sandbox !== undefined) globals.sandbox = sandbox;
  } catch (e) {
    return failWith(early, e);
  }
  const ctx: CliContext = { io, env, cwd, globals, ...(opts.signal ? { signal: opts.signal } : {}) };
  for (const k of Object.keys(GLOBAL_OPTIONS)) delete values[k];
  try {
    return await cmd.run(ctx, values, positionals);
  } catch (e) {
    if (e instanceof TyError && e.code === 'E_UNKNOWN_TOOL' && e.data)
      Object.assign(e.data, await suggestTool(e.data, globals.home));
    return failWith(ctx, e);
  }
}

let version: string | undefined;
/** This package's version, from its package.json. */
async function packageVersion(): Promise<string> {
  if (version) return version;
  const { readFile } = await import('node:fs/promises');
  // dist/node/cli/main.js and node/cli/main.ts (tests) sit at different depths below the package root.
  for (const rel of ['../../../package.json', '../../package.json']) {
    try {
      const pj = JSON.parse(await readFile(new URL(rel, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pj.name === 'tysandbox' && typeof pj.version === 'string') return (version = pj.version);
    } catch {
      /* try the next */
    }
  }
  return 'unknown';
}
