// Desktop dialog ask channel: zenity or kdialog (Linux), osascript (macOS), run outside every sandbox; Node host,
// trusted side.
import { spawn, type ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import type { Answer, AskChannel, Question } from '../../core/exec/runtime.js';
import { wordQuestion } from './wording.js';
import { formFieldLines, parseZenityForm, zenityFormArgs } from './dialog-form.js';

/**
 * The only folders a dialog program is taken from; PATH is never searched (a folder on it may be writable by what
 * asks).
 */
export const DIALOG_DIRS: readonly string[] = ['/usr/bin', '/bin', '/usr/local/bin'];

export type DialogKind = 'zenity' | 'kdialog' | 'osascript';
export interface DialogProgram {
  kind: DialogKind;
  /** Absolute path in one of DIALOG_DIRS. */
  path: string;
}

/** The labels of the two choices; session and permanent answers stay with the terminal, the store and the browser. */
export const ALLOW_LABEL = 'Allow once';
export const DENY_LABEL = 'Deny';
/** The dialog's window title (fixed text). */
export const DIALOG_TITLE = 'tysandbox: approve a tool call?';
/** First line of every dialog's text: fixed, so the text never starts with `-` or `<`. */
export const DIALOG_HEADER = 'A tool call needs your approval:';
/** Most bytes of a dialog's stdout read (its answer is one short label). */
const MAX_STDOUT = 1024;
/** Grace between SIGTERM and SIGKILL when a dialog is withdrawn, ms. */
const KILL_GRACE_MS = 2000;

/**
 * Desktop-session variables a dialog may get, nothing else (no tokens, no proxies, no PATH from the caller):
 * display and session-bus addresses, the X authority file, the runtime folder, HOME (where the X authority
 * and toolkit settings live) and the locale (so the text is decoded as UTF-8).
 */
export const DIALOG_ENV_KEYS: readonly string[] = [
  'DISPLAY',
  'WAYLAND_DISPLAY',
  'XAUTHORITY',
  'XDG_RUNTIME_DIR',
  'DBUS_SESSION_BUS_ADDRESS',
  'XDG_CURRENT_DESKTOP',
  'XDG_SESSION_TYPE',
  'HOME',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'LC_MESSAGES',
];
/** The PATH a dialog runs with (fixed system folders). */
export const DIALOG_PATH = '/usr/bin:/bin';

/**
 * The minimal environment of a dialog process: DIALOG_ENV_KEYS copied when set, PATH fixed, a UTF-8 locale when none is
 * set.
 */
export function dialogEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = { PATH: DIALOG_PATH };
  for (const k of DIALOG_ENV_KEYS) {
    const v = env[k];
    if (typeof v === 'string' && v.length > 0 && !v.includes('\0')) out[k] = v;
  }
  if (out.LANG === undefined && out.LC_ALL === undefined && out.LC_CTYPE === undefined) out.LANG = 'C.UTF-8';
  return out;
}

type StatLike = { uid: number; mode: number; isFile(): boolean; isDirectory(): boolean };
export type StatFn = (path: string) => StatLike | undefined;

function statOrUndefined(path: string): StatLike | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Whether a system program may be run: a regular executable file owned by root (or the current user), not
 * writable by group or others, in a folder likewise owned and not writable by group or others.
 */
export function trustedProgram(
  path: string,
  stat: StatFn = statOrUndefined,
  uid: number | undefined = process.getuid?.(),
): boolean {
  const ok = (st: StatLike | undefined, dir: boolean): boolean =>
    st !== undefined &&
    (dir ? st.isDirectory() : st.isFile()) &&
    (st.uid === 0 || st.uid === uid) &&
    (st.mode & 0o022) === 0 &&
    (dir || (st.mode & 0o111) !== 0);
  return ok(stat(path), false) && ok(stat(dirname(path)), true);
}

/**
 * The dialog program for this platform, looked up only in DIALOG_DIRS (never PATH): on macOS `osascript`;
 * elsewhere `zenity`, then `kdialog` (kdialog first when XDG_CURRENT_DESKTOP names KDE). Undefined when none qualifies
 * (trustedProgram).
 */
export function findDialogProgram(
  o: {
    platform?: NodeJS.Platform;
    env?: NodeJS.ProcessEnv;
    dirs?: readonly string[];
    stat?: StatFn;
    uid?: number;
  } = {},
): DialogProgram | undefined {
  const platform = o.platform ?? process.platform;
  const dirs = o.dirs ?? DIALOG_DIRS;
  const kde = /kde/i.test(o.env?.XDG_CURRENT_DESKTOP ?? '');
  const kinds: DialogKind[] =
    platform === 'darwin' ? ['osascript'] : kde ? ['kdialog', 'zenity'] : ['zenity', 'kdialog'];
  for (const kind of kinds) {
    for (const dir of dirs) {
      const path = join(dir, kind);
      if (trustedProgram(path, o.stat ?? statOrUndefined, o.uid ?? process.getuid?.())) return { kind, path };
    }
  }
  return undefined;
}

/**
 * Whether a desktop session is there, and if not why: on Linux and the BSDs a `WAYLAND_DISPLAY` whose socket
 * exists (in XDG_RUNTIME_DIR unless absolute) or a `DISPLAY` (a local `:N` display needs its socket
 * /tmp/.X11-unix/XN); on macOS the console (`/dev/console`) belongs to the current user, i.e. they are logged
 * in to the GUI.
 */
export function desktopSession(
  o: {
    platform?: NodeJS.Platform;
    env?: NodeJS.ProcessEnv;
    stat?: (p: string) => { uid: number } | undefined;
    uid?: number;
  } = {},
): { ok: true } | { ok: false; why: string } {
  const platform = o.platform ?? process.platform;
  const env = o.env ?? process.env;
  const stat = o.stat ?? ((p: string) => statOrUndefined(p));
  if (platform === 'win32') return { ok: false, why: 'no dialog program on this platform' };
  if (platform === 'darwin') {
    const st = stat('/dev/console');
    const uid = o.uid ?? process.getuid?.();
    return st !== undefined && st.uid === uid
      ? { ok: true }
      : { ok: false, why: 'no logged-in GUI session for this user (the console belongs to someone else)' };
  }
  const wayland = env.WAYLAND_DISPLAY;
  if (wayland) {
    const sock = isAbsolute(wayland) ? wayland : env.XDG_RUNTIME_DIR ? join(env.XDG_RUNTIME_DIR, wayland) : undefined;
    if (sock !== undefined && stat(sock) !== undefined) return { ok: true };
  }
  const display = env.DISPLAY;
  if (display) {
    const m = /^(?:unix)?:(\d+)(?:\.\d+)?$/.exec(display);
    if (!m) return { ok: true }; // a remote or forwarded display: cannot be checked without connecting
    if (stat(`/tmp/.X11-unix/X${m[1]}`) !== undefined) return { ok: true };
    return { ok: false, why: `DISPLAY=${m[0]} but no X server socket /tmp/.X11-unix/X${m[1]}` };
  }
  return {
    ok: false,
    why: wayland
      ? 'WAYLAND_DISPLAY is set but its socket is missing, and DISPLAY is unset'
      : 'no desktop session (DISPLAY and WAYLAND_DISPLAY are unset)',
  };
}

/**
 * Longest run without a space on one dialog line, in code points: toolkits wrap only at spaces, so a longer run would
 * widen the window past the screen.
 */
export const DIALOG_RUN_CHARS = 80;
/**
 * Most lines a dialog shows (a taller window would push its buttons off the screen); the rest become one cut marker
 * line.
 */
export const DIALOG_MAX_LINES = 36;
/** Prefix of a dialog line that continues the line above (a run longer than DIALOG_RUN_CHARS broken up). */
export const CONTINUED = '   \u21aa ';

/**
 * Break every run of more than DIALOG_RUN_CHARS code points without a space, preferring not to split an escape like
 * `\u202e`.
 */
export function breakLongRuns(line: string): string[] {
  const out: string[] = [];
  let cur: string[] = [];
  let run = 0;
  for (const ch of line) {
    if (ch === ' ') {
      run = 0;
      cur.push(ch);
      continue;
    }
    if (run === DIALOG_RUN_CHARS) {
      const back = cur.lastIndexOf('\\');
      const cut = back > cur.length - Math.min(run, 11) && back > 0 ? back : cur.length;
      out.push(cur.slice(0, cut).join(''));
      cur = cur.slice(cut);
      run = cur.length;
    }
    cur.push(ch);
    run++;
  }
  out.push(cur.join(''));
  return out.map((l, i) => (i === 0 ? l : `${CONTINUED}${l}`));
}

/**
 * The dialog's text: DIALOG_HEADER, then the question as every channel shows it (core/ask/text.ts
 * renderQuestion: sanitized, each line cut at 600 characters with the marker), offering `once` only;
 * runs without spaces broken into continued lines (breakLongRuns), at most DIALOG_MAX_LINES lines
 * (the rest become `… [cut: N more lines]`).
 */
export function dialogLines(q: Question): string[] {
  const lines = [DIALOG_HEADER, ...wordQuestion({ ...q, scopes: ['once'] })].flatMap(breakLongRuns);
  if (lines.length <= DIALOG_MAX_LINES) return lines;
  return [...lines.slice(0, DIALOG_MAX_LINES - 1), `… [cut: ${lines.length - (DIALOG_MAX_LINES - 1)} more lines]`];
}

/**
 * Text for kdialog: forced rich text (`<qt>`), every markup character and backslash (kdialog's own `\n`, `\\` escapes)
 * written as an entity.
 */
export function kdialogText(lines: string[]): string {
  const esc = (s: string): string =>
    s.replace(/[&<>"'\\]/g, (c) => `&#${c.charCodeAt(0)};`).replace(/^ +/, (sp) => '&nbsp;'.repeat(sp.length));
  return `<qt>${lines.map(esc).join('<br>')}</qt>`;
}

/** The AppleScript run by osascript: fixed text; the question arrives as `item 1 of argv`, the wait (s) as `item 2`. */
export const OSASCRIPT_LINES: readonly string[] = [
  'on run argv',
  `set r to display dialog (item 1 of argv) with title "${DIALOG_TITLE}" buttons {"${DENY_LABEL}", ` +
    `"${ALLOW_LABEL}"} default button "${DENY_LABEL}" with icon caution giving up after ((item 2 ` +
    `of argv) as integer)`,
  'if gave up of r then return "timeout"',
  'return button returned of r',
  'end run',
];

/**
 * The argument vector (after the program) showing `lines` with the two choices, the default focus on Deny,
 * giving up after `waitSeconds`. The text is one argument, never part of a script or markup:
 * - zenity: `--question --switch --no-markup` with one extra button per choice (the clicked label is printed);
 * - kdialog: `--yesno` with kdialogText;
 * - osascript: `-e` lines of the fixed OSASCRIPT_LINES, then the text and the wait as arguments.
 */
export function dialogArgs(kind: DialogKind, lines: string[], waitSeconds: number): string[] {
  const text = lines.join('\n');
  const wait = String(Math.max(1, Math.ceil(waitSeconds)));
  switch (kind) {
    case 'zenity':
      return [
        '--question',
        '--switch',
        '--no-markup',
        `--title=${DIALOG_TITLE}`,
        `--text=${text}`,
        `--extra-button=${DENY_LABEL}`,
        `--extra-button=${ALLOW_LABEL}`,
        '--width=720',
        `--timeout=${wait}`,
      ];
    case 'kdialog':
      return [
        `--title=${DIALOG_TITLE}`,
        `--yesno=${kdialogText(lines)}`,
        `--yes-label=${ALLOW_LABEL}`,
        `--no-label=${DENY_LABEL}`,
      ];
    case 'osascript':
      return [...OSASCRIPT_LINES.flatMap((l) => ['-e', l]), text, wait];
  }
}

/**
 * What the dialog's exit means: allow once, deny, or undefined (no answer here: closed, timed out, failed to
 * open the display, killed). zenity and osascript print the clicked label; kdialog exits 0 (yes) or 1 (no).
 */
export function dialogVerdict(kind: DialogKind, code: number | null, stdout: string): 'allow' | 'deny' | undefined {
  if (kind === 'kdialog') return code === 0 ? 'allow' : code === 1 ? 'deny' : undefined;
  const said = stdout.trim();
  if (said === ALLOW_LABEL) return 'allow';
  if (said === DENY_LABEL) return 'deny';
  return undefined;
}

const running = new Set<ChildProcess>();
let exitHook = false;
/** Kill every open dialog when this process exits, so none outlives its question. */
function track(child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const c of running) c.kill('SIGKILL');
    });
  }
}

export interface DialogChannelOptions {
  /** `auto` (default): used whenever a desktop session and a dialog program are there; `off`: never. */
  mode?: 'auto' | 'off';
  /** The CLI's environment, read for the desktop session's variables only (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** How long the dialog itself stays up at most, ms (its own give-up backstop; the ask router's ask_wait decides). */
  waitMs?: number;
  /** Channel name (default `dialog`). */
  name?: string;
  /** For tests: where to look for the program (default DIALOG_DIRS) and the platform. */
  dirs?: readonly string[];
  platform?: NodeJS.Platform;
}

/**
 * The desktop dialog channel. Live while `mode` is `auto`, a desktop session is there (desktopSession) and a
 * dialog program is found in the system folders (findDialogProgram). Each question opens one dialog process,
 * spawned directly by this trusted process (never inside a sandbox) with dialogEnv only; the answer is its
 * clicked choice (dialogVerdict). When the question is withdrawn (answered elsewhere, ask_wait over,
 * cancelled) the dialog is killed (SIGTERM, SIGKILL after 2 s) and anything it says later is ignored.
 */
export class DialogAskChannel implements AskChannel {
  readonly name: string;
  private readonly mode: 'auto' | 'off';
  private readonly env: NodeJS.ProcessEnv;
  private readonly waitMs: number;
  private readonly dirs: readonly string[] | undefined;
  private readonly platform: NodeJS.Platform;
  /**
   * How the last dialog ended without an answer nor a withdrawal (its exit code or signal and the start of its stderr),
   * for diagnosis.
   */
  lastFailure: { code: number | null; signal: string | null; stderr: string } | undefined;

  constructor(opts: DialogChannelOptions = {}) {
    this.name = opts.name ?? 'dialog';
    this.mode = opts.mode ?? 'auto';
    this.env = opts.env ?? process.env;
    this.waitMs = opts.waitMs ?? 120_000;
    this.dirs = opts.dirs;
    this.platform = opts.platform ?? process.platform;
  }

  /** The program a question would open now, or why none can (one line). */
  state(): { ok: true; program: DialogProgram } | { ok: false; why: string } {
    if (this.mode === 'off') return { ok: false, why: 'turned off (settings ask.dialog "off")' };
    const session = desktopSession({ platform: this.platform, env: this.env });
    if (!session.ok) return session;
    const program = findDialogProgram({
      platform: this.platform,
      env: this.env,
      ...(this.dirs ? { dirs: this.dirs } : {}),
    });
    if (!program) {
      const names = this.platform === 'darwin' ? 'osascript' : 'zenity or kdialog';
      return { ok: false, why: `no ${names} in ${(this.dirs ?? DIALOG_DIRS).join(', ')} (PATH is not searched)` };
    }
    return { ok: true, program };
  }

  live(): boolean {
    return this.state().ok;
  }

  /**
   * Form questions (an MCP server's elicitation) are shown with zenity only (node/ask/dialog-form.ts); kdialog and
   * osascript show yes/no questions.
   */
  get forms(): boolean {
    const s = this.state();
    return s.ok && s.program.kind === 'zenity';
  }

  whyNot(): string | undefined {
    const s = this.state();
    return s.ok ? undefined : s.why;
  }

  ask(q: Question, signal: AbortSignal): Promise<Answer | undefined> {
    if (signal.aborted) return Promise.resolve(undefined);
    const s = this.state();
    if (!s.ok) return Promise.resolve(undefined);
    const { kind, path } = s.program;
    const formArgs =
      q.form !== undefined && kind === 'zenity'
        ? zenityFormArgs(q, [...dialogLines(q), ...formFieldLines(q)], this.waitMs / 1000)
        : undefined;
    if (q.form !== undefined && formArgs === undefined) return Promise.resolve(undefined);
    return new Promise<Answer | undefined>((resolve) => {
      let child: ChildProcess;
      try {
        child = spawn(path, formArgs ?? dialogArgs(kind, dialogLines(q), this.waitMs / 1000), {
          env: dialogEnv(this.env),
          cwd: '/',
          stdio: ['ignore', 'pipe', 'pipe'],
        });
      } catch {
        resolve(undefined);
        return;
      }
      track(child);
      let stdout = '';
      let settled = false;
      let killTimer: ReturnType<typeof setTimeout> | undefined;
      const finish = (a: Answer | undefined): void => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        resolve(a);
      };
      const onAbort = (): void => {
        finish(undefined);
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          killTimer = setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
          killTimer.unref?.();
        }
      };
      signal.addEventListener('abort', onAbort, { once: true });
      child.stdout?.setEncoding('utf8');
      child.stdout?.on('data', (d: string) => {
        if (stdout.length < MAX_STDOUT) stdout += d.slice(0, MAX_STDOUT - stdout.length);
      });
      let stderr = '';
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (d: string) => {
        if (stderr.length < MAX_STDOUT) stderr += d.slice(0, MAX_STDOUT - stderr.length);
      });
      child.on('error', () => finish(undefined));
      child.on('close', (code, sig) => {
        if (killTimer) clearTimeout(killTimer);
        if (formArgs !== undefined) {
          // zenity --forms: OK prints the values (exit 0), Cancel or closing the window is exit 1 (a dismissal)
          const values = code === 0 ? parseZenityForm(q, stdout) : undefined;
          if (code === 0 && values === undefined) this.lastFailure = { code, signal: sig, stderr };
          return finish(
            values !== undefined
              ? { allow: true, scope: 'once', channel: this.name, values }
              : code === 1
                ? { allow: false, scope: 'once', channel: this.name, dismissed: true }
                : undefined,
          );
        }
        const v = dialogVerdict(kind, code, stdout);
        if (v === undefined && !settled) this.lastFailure = { code, signal: sig, stderr };
        finish(v === undefined ? undefined : { allow: v === 'allow', scope: 'once', channel: this.name });
      });
    });
  }
}
