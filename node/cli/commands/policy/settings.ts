// tycli settings path|show|edit: find, read and edit the settings files; Node host, trusted side.
import { spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { TyError } from '../../../../core/errors.js';
import { DEFAULT_SESSION_IDLE_MS } from '../../../../core/mcp/wire/session-clock.js';
import type { CliCommand, CliContext } from '../../types.js';
import { note, out, outJson, terminalSafe, usage } from '../../output.js';

async function where(ctx: CliContext) {
  const { settingsFiles } = await import('../../../settings/load.js');
  return settingsFiles({ home: ctx.globals.home, cwd: ctx.cwd });
}

async function present(path: string | undefined): Promise<string | undefined> {
  if (!path) return undefined;
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

const path: CliCommand = {
  path: ['settings', 'path'],
  summary: 'print where the settings files are (user, project, local)',
  usage: `Usage: tycli settings path

The user file is the per-user config folder's tycli/settings.json (XDG: $XDG_CONFIG_HOME, default
~/.config), or <home>/config/settings.json with --home or TYCLI_HOME. Project and local files are
.tycli/settings.json and .tycli/settings.local.json in the nearest folder above the working directory
that has a .tycli folder. See docs/settings.md for every key.
With --json: {"ok":true,"user","project","local","movedTo"} (absent scopes are null).`,
  allowPositionals: false,
  async run(ctx) {
    const w = await where(ctx);
    if (ctx.globals.json) {
      outJson(ctx, {
        ok: true,
        user: w.user,
        project: w.project ?? null,
        local: w.local ?? null,
        movedTo: w.movedTo ?? null,
      });
      return 0;
    }
    out(ctx, w.user);
    if (w.movedTo) note(ctx, `(the old location, still read; move it to ${w.movedTo})`);
    for (const [scope, p] of [
      ['project', w.project],
      ['local', w.local],
    ] as const)
      if (p) note(ctx, `${scope}: ${p}${(await present(p)) === undefined ? ' (not present)' : ''}`);
    return 0;
  },
};

const show: CliCommand = {
  path: ['settings', 'show'],
  summary: 'show the settings files in effect and the merged values',
  usage: `Usage: tycli settings show

Prints each settings file (user, project, local) that exists, then the effective values after merging
(permissions.mode, sandbox, runtime, ask_wait, session_idle, ask.dialog, pause), keyed as in a settings file.
Invalid files are an error.
With --json: {"ok":true,"files":[{"scope","path","present"}],"effective":{...}}.`,
  allowPositionals: false,
  async run(ctx) {
    const { loadSettings } = await import('../../../settings/load.js');
    const s = await loadSettings({ home: ctx.globals.home, cwd: ctx.cwd });
    // keyed as in a settings file, so a value shown here can be copied into one
    const effective = {
      permissions: { mode: s.policy.mode },
      sandbox: s.sandbox ?? 'auto',
      runtime: s.runtime ?? 'node',
      ask_wait: s.askWaitMs,
      session_idle: s.sessionIdleMs ?? DEFAULT_SESSION_IDLE_MS,
      ask: { dialog: s.askDialog },
      pause: s.pause,
    };
    if (ctx.globals.json) {
      outJson(ctx, { ok: true, files: s.files, effective, warnings: s.warnings });
      return 0;
    }
    for (const f of s.files) {
      out(ctx, `# ${f.scope}: ${f.path}${f.present ? '' : ' (not present)'}`);
      const text = f.present ? await present(f.path) : undefined;
      if (text !== undefined) out(ctx, terminalSafe(ctx, text.trimEnd()));
    }
    out(ctx, `# effective\n${JSON.stringify(effective, null, 2)}`);
    for (const w of s.warnings) note(ctx, w);
    return 0;
  },
};

const edit: CliCommand = {
  path: ['settings', 'edit'],
  summary: 'open the user settings file in $VISUAL or $EDITOR, then check it',
  usage: `Usage: tycli settings edit [--project | --local]

Creates the file ({}) when it does not exist, opens it in $VISUAL, else $EDITOR, else vi, and checks it
when the editor exits: an invalid file is reported with E_INVALID_SETTINGS naming the field (the file
is kept as written, so you can fix it).
  --project   edit the project file (.tycli/settings.json of the nearest project folder)
  --local     edit the local file (.tycli/settings.local.json; keep it out of version control)`,
  options: { project: { type: 'boolean' }, local: { type: 'boolean' } },
  allowPositionals: false,
  async run(ctx, v) {
    const w = await where(ctx);
    const target = v.project ? w.project : v.local ? w.local : (w.movedTo ?? w.user);
    if (!target) usage('no project folder here: create a .tycli folder in the project root first');
    if (
      w.movedTo &&
      !v.project &&
      !v.local &&
      (await present(w.user)) !== undefined &&
      (await present(w.movedTo)) === undefined
    ) {
      // Editing moves the file to the new location; the old one stays as it was (remove it when done).
      await mkdir(dirname(w.movedTo), { recursive: true, mode: 0o700 });
      await writeFile(w.movedTo, (await present(w.user))!, { mode: 0o600, flag: 'wx' });
      note(ctx, `copied ${w.user} to ${w.movedTo}; remove the old file once you are done`);
    }
    if ((await present(target)) === undefined) {
      await mkdir(dirname(target), { recursive: true, mode: 0o700 });
      await writeFile(target, '{}\n', { mode: 0o600, flag: 'wx' });
    }
    const editor = ctx.env.VISUAL || ctx.env.EDITOR || 'vi';
    const code = await new Promise<number>((res, rej) => {
      const child = spawn(editor, [target], { stdio: 'inherit', shell: /\s/.test(editor), env: ctx.env });
      child.on('error', rej);
      child.on('close', (c) => res(c ?? 1));
    }).catch((e: Error) => {
      throw new TyError('E_USAGE', `cannot start the editor "${editor}": ${e.message}; set VISUAL or EDITOR`);
    });
    if (code !== 0) throw new TyError('E_USAGE', `the editor exited with ${code}; ${target} was not checked`);
    const { loadSettings } = await import('../../../settings/load.js');
    await loadSettings({ home: ctx.globals.home, cwd: ctx.cwd });
    if (ctx.globals.json) outJson(ctx, { ok: true, path: target });
    else note(ctx, `${target}: valid`);
    return 0;
  },
};

export const settingsCommands: CliCommand[] = [path, show, edit];
