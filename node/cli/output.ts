// Output, error and exit-code helpers shared by tycli commands; Node host, trusted side.
import type { ErrorCode } from '../../protocol/errors.js';
import { TyError } from '../../core/errors.js';
import { escapeCodePoint, inertJson } from '../../core/ask/text.js';
import type { CliContext } from './types.js';
import { cliHint } from './hints.js';
import { formatFrames, type ToolFrame } from '../../core/exec/stack.js';

/** Exit code 2: the input was wrong (usage, manifest, arguments, unknown tool, settings); the person must change it. */
const INPUT_CODES = new Set<string>([
  'E_USAGE',
  'E_INVALID_ARGS',
  'E_INVALID_MANIFEST',
  'E_UNKNOWN_TOOL',
  'E_INVALID_SETTINGS',
  'E_INVALID_TASK',
  'E_UNPINNED_TASK',
]);

/** 2 for bad usage or input, 1 for everything else (the tool failed, or the call was refused). */
export function exitCodeFor(code: string): 1 | 2 {
  return INPUT_CODES.has(code) ? 2 : 1;
}

const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}]/gu;

/**
 * Text from a tool (results, descriptions) made inert for a terminal: when stdout is a TTY, every
 * control (ESC, CSI, OSC, CR, BEL...), bidi, zero-width and other invisible code point except LF and
 * tab is shown as a visible escape (core/ask/text.ts escapeCodePoint). Piped output stays byte-exact.
 */
export function terminalSafe(ctx: CliContext, text: string, stream: NodeJS.WritableStream = ctx.io.stdout): string {
  if (!(stream as { isTTY?: boolean }).isTTY) return text;
  return inert(text);
}

/** Every hidden code point except LF and tab shown as a visible escape, whatever the output is. */
export function inert(text: string): string {
  return text.replace(HIDDEN, (ch) => (ch === '\n' || ch === '\t' ? ch : escapeCodePoint(ch.codePointAt(0) ?? 0)));
}

const SGR = { bold: '1', dim: '2', red: '31', green: '32', yellow: '33', cyan: '36' } as const;
export type Style = keyof typeof SGR;

/**
 * Whether to colour what goes to `stream`: `FORCE_COLOR` set (and not `0`/`false`) forces it on, as Node's own
 * tty.getColorDepth does; else a non-empty `NO_COLOR` (no-color.org) turns it off; else only on a TTY whose
 * TERM is not `dumb`. Colour never reaches a pipe or a file unless forced.
 */
export function colorEnabled(
  ctx: Pick<CliContext, 'env' | 'io'>,
  stream: NodeJS.WritableStream = ctx.io.stdout,
): boolean {
  const force = ctx.env.FORCE_COLOR;
  if (force !== undefined) return force !== '0' && force !== 'false';
  if (ctx.env.NO_COLOR !== undefined && ctx.env.NO_COLOR !== '') return false;
  return Boolean((stream as { isTTY?: boolean }).isTTY) && ctx.env.TERM !== 'dumb';
}

/** `text` in the style when colour is enabled for `stream` (colorEnabled), else unchanged. */
export function paint(
  ctx: Pick<CliContext, 'env' | 'io'>,
  style: Style,
  text: string,
  stream: NodeJS.WritableStream = ctx.io.stdout,
): string {
  return text && colorEnabled(ctx, stream) ? `\u001b[${SGR[style]}m${text}\u001b[0m` : text;
}

/**
 * Progress of long work, on stderr and only when stderr is a TTY (a pipe or a log file gets nothing): one line
 * rewritten in place (`[3/12] name`), cleared by `done()`. Returns no-ops otherwise.
 */
export function progress(ctx: CliContext): {
  step(done: number, total: number, what: string): void;
  status(what: string): void;
  done(): void;
} {
  const err = ctx.io.stderr as NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  if (!err.isTTY) return { step() {}, status() {}, done() {} };
  let shown = false;
  const show = (text: string) => {
    const width = Math.max(20, (err.columns || 80) - 1);
    err.write(`\r\u001b[2K${paint(ctx, 'dim', inert(text).slice(0, width), err)}`);
    shown = true;
  };
  return {
    step: (done, total, what) => show(`[${done + 1}/${total}] ${what}`),
    status: (what) => show(what),
    done: () => {
      if (shown) err.write('\r\u001b[2K');
      shown = false;
    },
  };
}

/** Print one line to stdout. */
export function out(ctx: CliContext, text: string): void {
  ctx.io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** Print a note for people to stderr (never with --json, where stdout carries only results). */
export function note(ctx: CliContext, text: string): void {
  if (!ctx.globals.json) ctx.io.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
}

/**
 * Print exactly one JSON line to stdout, in the envelope every `--json` output has: an object with `"ok"` first
 * (`{"ok":true,...fields}`; `fail()` writes `{"ok":false,"error":{...}}`). An object without `ok` gets
 * `"ok":true`. Hidden code points (controls, bidi, zero-width, line separators) are written as `\\u` escapes
 * (core/ask/text.ts inertJson), so the line parses to the same value and cannot drive a terminal it is shown on.
 * A command prints one such line per run (a watching command: one per event).
 */
export function outJson(ctx: CliContext, value: unknown): void {
  const v =
    value !== null && typeof value === 'object' && !Array.isArray(value) && !('ok' in value)
      ? { ok: true, ...(value as Record<string, unknown>) }
      : value;
  ctx.io.stdout.write(`${inertJson(v)}\n`);
}

/** `outJson(ctx, {ok: true, ...fields})`: the one result line of a command that succeeded. */
export function outOk(ctx: CliContext, fields: Record<string, unknown>): void {
  outJson(ctx, { ok: true, ...fields });
}

/** What every line of text a tool wrote starts with on the terminal (its message, its frames); host lines never do. */
export const TOOL_LINE_PREFIX = 'tool: ';

/**
 * Text a tool wrote as one terminal line: every hidden code point escaped (core/ask/text.ts escapeCodePoint), line
 * feeds as `\n`, so it cannot start a line of its own, move the cursor or restyle what follows.
 */
export function oneLine(text: string): string {
  return text.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}]/gu, (ch) =>
    ch === '\n' ? '\\n' : escapeCodePoint(ch.codePointAt(0) ?? 0),
  );
}

/**
 * The lines of a tool's own error on the terminal: its message, then each of its frames (`    at fn (file:l:c)`), each
 * one escaped line (oneLine) under TOOL_LINE_PREFIX, so a message holding `\nerror[E_CAPABILITY_DENIED]: ...` or a fake
 * `at x (/etc/passwd:1:1)` frame cannot pass for a line of the host's.
 */
export function toolLines(message: string | undefined, frames: readonly ToolFrame[] = []): string[] {
  const text = [...(message !== undefined ? [message] : []), ...frames.map((f) => formatFrames([f]))];
  return text.map((l) => TOOL_LINE_PREFIX + oneLine(l));
}

/**
 * Report an error and return its exit code: `error[CODE]: message` on stderr (always made inert: the
 * message may carry text from a tool, and stderr is read by people even when piped), or with --json the line
 * `{"ok":false,"error":{"code","message"[,"frames"]}}` on stdout. `frames`: the tool's own stack frames mapped to
 * its source files (core/exec/stack.ts). With `toolText` the message is the tool's own (or its MCP server's) error
 * text: the host's line says who failed (`toolText.who`), and the message and frames follow as toolLines, each line
 * under `tool: `; frames without `toolText` are printed so too. `hint`: the host's own advice, on the host's line.
 */
export function fail(
  ctx: CliContext,
  code: ErrorCode | string,
  message: string,
  extra?: { frames?: ToolFrame[]; toolText?: { who: string }; hint?: string },
): 1 | 2 {
  const frames = extra?.frames?.length ? extra.frames : undefined;
  const hint = extra?.hint ? `; ${extra.hint}` : '';
  if (ctx.globals.json) {
    const text = extra?.toolText ? message : `${message}${hint}`;
    outJson(ctx, { ok: false, error: frames ? { code, message: text, frames } : { code, message: text } });
  } else {
    const head = paint(ctx, 'red', `error[${code}]`, ctx.io.stderr);
    const lines = extra?.toolText
      ? [
          `${head}: ${inert(oneLine(extra.toolText.who))} failed with its own error; what it said follows, each line marked "${TOOL_LINE_PREFIX.trim()}"${inert(hint)}`,
          ...toolLines(message, frames),
        ]
      : [`${head}: ${inert(message)}${inert(hint)}`, ...(frames ? toolLines(undefined, frames) : [])];
    ctx.io.stderr.write(`${lines.join('\n')}\n`);
  }
  return exitCodeFor(code);
}

/** Report any thrown value: TyError keeps its code; anything else is an internal failure (exit 1). */
export function failWith(ctx: CliContext, e: unknown): 1 | 2 {
  if (e instanceof TyError) {
    const hint = cliHint(e);
    // a tool's (or an MCP server's) own error text is shown apart from the host's line, as tycli run shows it
    const origin = e.data?.origin;
    if (e.code === 'E_TOOL_FAILED' && (origin === 'tool' || origin === 'server'))
      return fail(ctx, e.code, e.message, {
        toolText: { who: origin === 'tool' ? 'the tool' : "the MCP server's tool" },
        ...(hint ? { hint } : {}),
      });
    return fail(ctx, e.code, hint ? `${e.message}; ${hint}` : e.message);
  }
  const msg = e instanceof Error ? e.message : String(e);
  return fail(ctx, 'E_TOOL_FAILED', `internal error: ${msg.slice(0, 2000)}`);
}

/** Throw E_USAGE. */
export function usage(message: string): never {
  throw new TyError('E_USAGE', message);
}
