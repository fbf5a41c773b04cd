// Shapes shared by every tycli command module; Node host, trusted side.
import type { ParseArgsConfig } from 'node:util';
import type { HostFlags, HostIO } from '../host/options.js';

/** The command line's streams: the host's (node/host/options.ts HostIO), as main() hands them to every command. */
export type CliIO = HostIO;

/** Options every command accepts (parsed before the command's own; node/cli/globals.ts). */
export interface GlobalOptions extends HostFlags {
  /** Store and state root: --home, else TYCLI_HOME, else the per-user data folder (env-paths). */
  home: string;
  json: boolean;
}

export interface CliContext {
  io: CliIO;
  cwd: string;
  /** The CLI's own environment. Never passed to a sandbox. */
  env: NodeJS.ProcessEnv;
  globals: GlobalOptions;
  /**
   * Aborted when the person presses Ctrl-C (SIGINT) or the process gets SIGTERM (main() with `signals`, which alone
   * listens to the process's signals), or when an embedder's `signal` aborts; a command stops its work, reports
   * E_ABORTED, and main() exits 130 (143 for SIGTERM). Absent otherwise: a serving command then runs until its input
   * ends.
   */
  signal?: AbortSignal;
}

/**
 * One command: `path` is its words (e.g. ['tool', 'add']). `options` is a node:util parseArgs
 * options table. `run` returns the exit code: 0 ok, 1 the tool failed or was refused, 2 bad usage or input.
 */
export interface CliCommand {
  path: string[];
  summary: string;
  /** Usage text shown by --help, after the summary. */
  usage: string;
  options?: ParseArgsConfig['options'];
  /**
   * When true, `--sandbox NAME` with a NAME other than a posture (auto, required, off) names this command's
   * client context instead (passed as the `client` option); `mcp serve` uses it.
   */
  sandboxNames?: boolean;
  /** Whether positionals are accepted (default true). */
  allowPositionals?: boolean;
  run(ctx: CliContext, values: Record<string, unknown>, positionals: string[]): Promise<number>;
}
