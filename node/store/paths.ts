// Where tycli keeps its state on disk (the home folder and its fixed subfolders); Node host, trusted side.
import { isAbsolute, join, resolve } from 'node:path';
import envPaths from 'env-paths';
import { TyError } from '../../core/errors.js';
import { makeDurableDir } from './dirs.js';

/**
 * The layout under the home folder. Everything tycli writes lives here, so `--home DIR` isolates a
 * whole installation (tests use a temp home). Folders are created 0700 on first use.
 *
 * - `store/`     the content-addressed store (node/store/file-store.ts): `store/<ns>/<key>`, plus `store/.logs`,
 *                `store/.locks`, `store/.tmp` and the record writers' counter `store/.generation`
 *                (node/store/generation.ts) (names starting with "." are never namespaces)
 * - `config/`    files a person edits: `config/settings.json` (permission rules, hooks; node/settings/load.ts),
 *                `config/secrets.json` (node/store/secrets.ts, 0600). With the default home (no --home, no
 *                TYCLI_HOME) the user settings live in the per-user config folder instead (XDG:
 *                `$XDG_CONFIG_HOME/tycli/settings.json`, default `~/.config/tycli/settings.json`); the old
 *                `<data folder>/config/settings.json` is still read when the new file does not exist.
 * - `state/`     machine state that is not content-addressed: `state/questions/` (waiting questions,
 *                node/ask/store.ts), `state/paused/` (paused calls, core/policy/pause.ts via the store)
 * - `run/`       per-process scratch (sandbox working folders, sockets); safe to delete when no tycli runs
 */
export interface TycliPaths {
  home: string;
  store: string;
  config: string;
  /** The user settings file (see the layout above). */
  settingsFile: string;
  /** The pre-XDG location of the user settings, read when `settingsFile` does not exist (default home only). */
  legacySettingsFile?: string;
  secretsFile: string;
  state: string;
  questions: string;
  run: string;
}

/**
 * The home folder: `--home DIR` (relative to `cwd`), else `TYCLI_HOME`, else the per-user data folder
 * (env-paths 'tycli', no suffix: `~/.local/share/tycli` on Linux, `~/Library/Application Support/tycli` on macOS).
 * @throws TyError E_USAGE when `--home` or `TYCLI_HOME` is present but empty.
 */
export function resolveHome(opts: { home?: string | undefined; env?: NodeJS.ProcessEnv; cwd?: string }): string {
  const cwd = opts.cwd ?? process.cwd();
  const env = opts.env ?? process.env;
  if (opts.home !== undefined) {
    if (opts.home.trim() === '') throw new TyError('E_USAGE', '--home needs a folder path');
    return isAbsolute(opts.home) ? opts.home : resolve(cwd, opts.home);
  }
  const fromEnv = env.TYCLI_HOME;
  if (fromEnv !== undefined) {
    if (fromEnv.trim() === '')
      throw new TyError('E_USAGE', 'TYCLI_HOME is set but empty; unset it or give a folder path');
    return isAbsolute(fromEnv) ? fromEnv : resolve(cwd, fromEnv);
  }
  return envPaths('tycli', { suffix: '' }).data;
}

/** The fixed layout under `home` (pure; creates nothing). */
export function tycliPaths(home: string): TycliPaths {
  const config = join(home, 'config');
  const state = join(home, 'state');
  const dirs = envPaths('tycli', { suffix: '' });
  const xdg = resolve(home) === resolve(dirs.data);
  return {
    home,
    store: join(home, 'store'),
    config,
    settingsFile: xdg ? join(dirs.config, 'settings.json') : join(config, 'settings.json'),
    ...(xdg ? { legacySettingsFile: join(config, 'settings.json') } : {}),
    secretsFile: join(config, 'secrets.json'),
    state,
    questions: join(state, 'questions'),
    run: join(home, 'run'),
  };
}

/**
 * Create a folder (and parents) with mode 0700; an existing folder keeps its mode. New folders survive a power loss
 * (their parents are fsync'd: node/store/dirs.ts makeDurableDir).
 */
export async function ensurePrivateDir(dir: string): Promise<void> {
  await makeDurableDir(dir, 0o700);
}
