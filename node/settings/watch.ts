// The settings a long-lived host's gate runs with, kept current: the files re-read when their stamps move, checked at
// most once a second (never a file read per call); Node host, trusted side.
import { statSync } from 'node:fs';
import type { GateConfig } from '../../core/policy/gate.js';
import { toTyError } from '../../core/errors.js';

/** The settings files are stat'ed at most this often, ms: a change is seen within it. */
export const SETTINGS_CHECK_MS = 1000;

/** `dev:ino:size:mtime:ctime` of a file, `absent` when there is none (its appearance is a change too). */
function stampOf(path: string): string {
  try {
    const st = statSync(path, { throwIfNoEntry: false });
    return st === undefined ? 'absent' : `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  } catch {
    return 'unreadable';
  }
}

/**
 * The gate's configuration (rules and hooks) from the settings files, re-read when one of them changes (its stamp:
 * device, inode, size, modification and change times), so a long-lived `tycli serve` or `mcp serve` follows a
 * settings edit within SETTINGS_CHECK_MS, by `tycli settings` or by hand. Between checks the configuration is answered
 * from memory (no file read, no statx per call). A file that no longer loads (a half-written edit, a bad rule, a file
 * another user owns) fails every request with its E_INVALID_SETTINGS until it loads again: the gate never goes on
 * with rules a person has just changed.
 */
export class SettingsWatch<S extends { files: readonly { path: string }[] }> {
  #current: S;
  #stamps: string[];
  #checkedAt: number;
  #reloading: Promise<S> | undefined;
  #error: unknown;
  readonly #reload: () => Promise<S>;
  readonly #configOf: (s: S) => GateConfig;
  readonly #now: () => number;

  /**
   * @param initial the settings as loaded at start (node/settings/load.ts loadSettings), with the files they came from
   * @param reload loads them again with the same options (the host prints the warnings a reload brings)
   * @param configOf the gate's configuration of loaded settings (node/settings/load.ts gateConfigOf)
   * @param now ms clock (tests inject one)
   */
  constructor(initial: S, reload: () => Promise<S>, configOf: (s: S) => GateConfig, now: () => number = Date.now) {
    this.#current = initial;
    this.#stamps = initial.files.map((f) => stampOf(f.path));
    this.#reload = reload;
    this.#configOf = configOf;
    this.#now = now;
    this.#checkedAt = now();
  }

  /** The settings in force now (as of the last check). */
  get settings(): S {
    return this.#current;
  }

  /**
   * The gate configuration: from memory until SETTINGS_CHECK_MS has passed since the last check, then the files'
   * stamps decide whether they are read again. @throws TyError E_INVALID_SETTINGS while a changed file does not load
   */
  config(): GateConfig | Promise<GateConfig> {
    if (this.#reloading) return this.#reloading.then(this.#configOf);
    const now = this.#now();
    if (now - this.#checkedAt >= SETTINGS_CHECK_MS) {
      this.#checkedAt = now;
      const stamps = this.#current.files.map((f) => stampOf(f.path));
      if (this.#error !== undefined || stamps.some((s, i) => s !== this.#stamps[i]))
        return this.#load().then(this.#configOf);
    }
    if (this.#error !== undefined) throw this.#error;
    return this.#configOf(this.#current);
  }

  #load(): Promise<S> {
    const stamps = this.#current.files.map((f) => stampOf(f.path));
    this.#reloading = this.#reload().then(
      (s) => {
        this.#current = s;
        // the stamps taken before the read: a change made while it read moves them again
        this.#stamps = s.files.length === stamps.length ? stamps : s.files.map((f) => stampOf(f.path));
        this.#error = undefined;
        this.#reloading = undefined;
        return s;
      },
      (e: unknown) => {
        this.#error = toTyError(e, 'E_INVALID_SETTINGS');
        this.#stamps = stamps;
        this.#reloading = undefined;
        throw this.#error;
      },
    );
    return this.#reloading;
  }
}
