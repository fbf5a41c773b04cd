// tycli run NAME[@REV]: one tool call from the command line; Node host, trusted side.
import { readFile, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { TyError } from '../../../../core/errors.js';
import { AUDIT_LOG } from '../../../../core/audit/record.js';
import type { CliCommand, CliContext } from '../../types.js';
import { fail, out, outJson, terminalSafe, usage } from '../../output.js';
import { inertJson } from '../../../../core/ask/text.js';
import { cliHintFor } from '../../hints.js';
import { suggestTool } from '../../suggest.js';

/** Largest file read by --args @FILE or --arg-file, bytes (matches the invoker's argument cap). */
const MAX_ARG_FILE_BYTES = 8 * 1024 * 1024;

async function readArgFile(ctx: CliContext, path: string, flag: string): Promise<string> {
  const full = resolve(ctx.cwd, path);
  let st;
  try {
    st = await stat(full);
  } catch {
    usage(`${flag}: cannot read ${path}: no such file`);
  }
  if (!st.isFile()) usage(`${flag}: ${path} is not a file`);
  if (st.size > MAX_ARG_FILE_BYTES)
    throw new TyError('E_INVALID_ARGS', `${flag}: ${path} is larger than ${MAX_ARG_FILE_BYTES} bytes`);
  return readFile(full, 'utf8');
}

/** Read all of stdin (for `--args @-`), at most MAX_ARG_FILE_BYTES. */
async function readStdin(ctx: CliContext): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of ctx.io.stdin) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    total += b.length;
    if (total > MAX_ARG_FILE_BYTES)
      throw new TyError('E_INVALID_ARGS', `--args @-: stdin is larger than ${MAX_ARG_FILE_BYTES} bytes`);
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Build the arguments object: `--args JSON`, `--args @FILE.json` or `--args @-` (stdin) (default `{}`), then each
 * `--arg-file NAME=PATH` sets top-level field NAME to the text of PATH, read here on the host side
 * (the sandbox never gets file access).
 * @throws TyError E_INVALID_ARGS (not JSON / not an object), E_USAGE (unreadable file, bad NAME=PATH)
 */
export async function buildArgs(ctx: CliContext, argsOpt: string | undefined, argFiles: string[]): Promise<unknown> {
  let args: unknown = {};
  if (argsOpt !== undefined) {
    const text =
      argsOpt === '@-'
        ? await readStdin(ctx)
        : argsOpt.startsWith('@')
          ? await readArgFile(ctx, argsOpt.slice(1), '--args')
          : argsOpt;
    try {
      args = JSON.parse(text);
    } catch (e) {
      throw new TyError(
        'E_INVALID_ARGS',
        `--args is not valid JSON (${(e as Error).message}); pass a JSON object like '{"text":"hi"}' or @file.json`,
      );
    }
  }
  for (const spec of argFiles) {
    const eq = spec.indexOf('=');
    if (eq <= 0 || eq === spec.length - 1) usage(`--arg-file takes NAME=PATH (got "${spec.slice(0, 80)}")`);
    const name = spec.slice(0, eq);
    if (name === '__proto__' || name === 'constructor' || name === 'prototype')
      usage(`--arg-file: "${name}" is not a usable field name`);
    if (args === null || typeof args !== 'object' || Array.isArray(args))
      throw new TyError('E_INVALID_ARGS', '--arg-file needs the arguments to be a JSON object');
    if (Object.prototype.hasOwnProperty.call(args, name))
      usage(
        `--arg-file sets "${name.slice(0, 80)}", which --args or another --arg-file already sets; give each field once`,
      );
    (args as Record<string, unknown>)[name] = await readArgFile(ctx, spec.slice(eq + 1), '--arg-file');
  }
  return args;
}

const run: CliCommand = {
  path: ['run'],
  summary: 'run one tool call: NAME (the active revision) or NAME@REV (pinned)',
  usage: `Usage: tycli run NAME[@REV] [--args JSON|@FILE.json] [--arg-file NAME=PATH]... [--timeout MS] [--disposable] [--logs]

  --args JSON|@FILE     the arguments object (default {}); @- reads it from stdin
  --arg-file NAME=PATH  set argument NAME to the text of the file PATH (read by tycli, not by the tool)
  --timeout MS          wall-clock limit for this call in milliseconds (clamped to the host maximum)
  --disposable          run in a fresh sandbox that is destroyed afterwards
  --logs                show what the tool writes with console.* on stderr (control characters escaped; at most
                        200 messages a second, each cut at 8000 characters; messages beyond the rate are
                        counted in a "[N log messages dropped: rate limit]" line, at the latest before the result)

Arguments are checked against the revision's parameters, and the call against the permission rules, before any
tool code or argument reaches a sandbox (the sandbox process itself starts early, empty, and is killed on a refusal).
Output: the result (strings as they are, other values as JSON). With --json exactly one line:
{"ok":true,"revision":"...","settingsRevision":"...","result":...} (settingsRevision: when the tool has settings) or {"ok":false,"error":{"code":"...","message":"..."}}.
Exit codes: 0 ok, 1 the tool failed or the call was refused, 2 bad usage or arguments.`,
  options: {
    args: { type: 'string' },
    'arg-file': { type: 'string', multiple: true },
    timeout: { type: 'string' },
    disposable: { type: 'boolean' },
    logs: { type: 'boolean' },
  },
  async run(ctx, v, pos) {
    if (pos.length !== 1) usage('tycli run takes exactly one NAME or NAME@REV');
    let timeoutMs: number | undefined;
    if (v.timeout !== undefined) {
      const t = String(v.timeout);
      if (!/^[1-9][0-9]{0,15}$/.test(t))
        usage(`--timeout takes a whole number of milliseconds (got "${t.slice(0, 40)}")`);
      timeoutMs = Number(t);
    }
    const args = await buildArgs(ctx, v.args as string | undefined, (v['arg-file'] as string[] | undefined) ?? []);
    const { createNodeHost } = await import('../../../host/host.js');
    const { sanitizeInline } = await import('../../../../core/ask/text.js');
    const onToolLog = (_rev: string, level: string, text: string): void =>
      void ctx.io.stderr.write(`[tool ${level}] ${sanitizeInline(text)}\n`);
    // On a terminal (not with --json), a progress line while a Python revision's sandbox starts Pyodide.
    const progress =
      ctx.globals.json || (ctx.io.stderr as { isTTY?: boolean }).isTTY !== true
        ? undefined
        : await import('../../python-progress.js').then((m) =>
            m.pythonStartProgress(ctx.io.stderr, m.pyodideVersion()),
          );
    const host = await createNodeHost({
      home: ctx.globals.home,
      globals: ctx.globals,
      io: ctx.io,
      env: ctx.env,
      cwd: ctx.cwd,
      ...(v.logs === true ? { onToolLog } : {}),
      ...(progress ? { onStartProgress: progress } : {}),
      prestart: timeoutMs !== undefined ? { tool: pos[0]!, timeoutMs } : { tool: pos[0]! },
    });
    const ac = new AbortController();
    const onSignal = () => ac.abort();
    if (ctx.signal?.aborted) ac.abort();
    else ctx.signal?.addEventListener('abort', onSignal, { once: true });
    try {
      const r = await host.invoker.invoke(pos[0]!, args, {
        signal: ac.signal,
        disposable: v.disposable === true,
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      });
      // The outcome is reported only once the call's completion record is durable, so a power loss after a reported
      // result cannot take its record (found by test/faults/crash/: the host's staged completion records wait up to
      // STAGED_SYNC_MS for company). The one-shot CLI's exit fsyncs them anyway: this moves that fsync ahead of the
      // answer.
      try {
        await host.store.syncLog(AUDIT_LOG);
      } catch (e) {
        const err = e instanceof TyError ? e : new TyError('E_STORE', String(e));
        return fail(ctx, 'E_STORE', `the call ended, but its audit record could not be made durable: ${err.message}`);
      }
      if (!r.ok) {
        if (r.error.code === 'E_UNKNOWN_TOOL') r.error.data = await suggestTool(r.error.data, ctx.globals.home);
        const hint = cliHintFor(r.error.code, r.error.data);
        // the message of a tool's own error is its text, shown apart from the host's lines (node/cli/output.ts fail)
        const origin = r.error.data?.origin;
        const who = origin === 'tool' || origin === 'server' ? pos[0]!.split('@')[0]! : undefined;
        return fail(ctx, r.error.code, r.error.message, {
          ...(r.error.frames ? { frames: r.error.frames } : {}),
          ...(who !== undefined ? { toolText: { who } } : {}),
          ...(hint ? { hint } : {}),
        });
      }
      if (ctx.globals.json)
        outJson(ctx, {
          ok: true,
          revision: r.revision,
          ...(r.settingsRevision ? { settingsRevision: r.settingsRevision } : {}),
          result: r.result,
          ...(r.feedback ? { feedback: r.feedback } : {}),
        });
      else {
        // JSON: hidden characters as \u escapes, piped too
        out(ctx, typeof r.result === 'string' ? terminalSafe(ctx, r.result) : inertJson(r.result, 2));
        for (const f of r.feedback ?? []) ctx.io.stderr.write(`note: ${terminalSafe(ctx, f, ctx.io.stderr)}\n`);
      }
      return 0;
    } finally {
      ctx.signal?.removeEventListener('abort', onSignal);
      await host.close();
    }
  },
};

export const runCommands: CliCommand[] = [run];
