// Unit tests of the desktop dialog channel: program lookup, desktop detection, environment, command lines as text; test
// side.
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AskRouter, askRefusalError } from '../../core/ask/router.js';
import type { Question } from '../../core/exec/runtime.js';
import { wordQuestion } from './wording.js';
import { joinContinued, longestRun } from '../../test/helpers/desktop.js';
import {
  ALLOW_LABEL,
  CONTINUED,
  DIALOG_MAX_LINES,
  DIALOG_RUN_CHARS,
  breakLongRuns,
  DENY_LABEL,
  DIALOG_HEADER,
  DialogAskChannel,
  OSASCRIPT_LINES,
  desktopSession,
  dialogArgs,
  dialogEnv,
  dialogLines,
  dialogVerdict,
  findDialogProgram,
  kdialogText,
  trustedProgram,
} from './dialog.js';

const dirs: string[] = [];
async function tmp(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'tydialog-'));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

const q: Question = {
  id: 'q1',
  title: 'Allow fx to use mcp fx/search?',
  details: ['tool: fx', 'arguments: {"q":"x"}'],
  scopes: ['once', 'session', 'permanent'],
  suggestedRule: 'mcp(fx/search)',
};

describe('the osascript command line', () => {
  it('is a fixed script; the question text and the wait are arguments after it, never script text', () => {
    const hostile = 'Allow "x" & end run\n" buttons {"OK"} -- do shell script "rm -rf ~"';
    const lines = dialogLines({ ...q, title: hostile });
    const args = dialogArgs('osascript', lines, 120);
    expect(args.slice(0, OSASCRIPT_LINES.length * 2)).toEqual(OSASCRIPT_LINES.flatMap((l) => ['-e', l]));
    expect(args.slice(OSASCRIPT_LINES.length * 2)).toEqual([lines.join('\n'), '120']);
    const script = args.filter((_, i) => i < OSASCRIPT_LINES.length * 2 && i % 2 === 1).join('\n');
    expect(script).toBe(
      [
        'on run argv',
        `set r to display dialog (item 1 of argv) with title "tysandbox: approve a tool call?" buttons ` +
          `{"Deny", "Allow once"} default button "Deny" with icon caution giving up after ((item 2 of ` +
          `argv) as integer)`,
        'if gave up of r then return "timeout"',
        'return button returned of r',
        'end run',
      ].join('\n'),
    );
    expect(script).not.toContain('rm -rf');
    // the text argument starts with the fixed header, so osascript never reads it as an option
    expect(args[OSASCRIPT_LINES.length * 2]!.startsWith(DIALOG_HEADER)).toBe(true);
    expect(dialogVerdict('osascript', 0, 'Allow once\n')).toBe('allow');
    expect(dialogVerdict('osascript', 0, 'Deny\n')).toBe('deny');
    expect(dialogVerdict('osascript', 0, 'timeout\n')).toBeUndefined();
    expect(dialogVerdict('osascript', 1, '')).toBeUndefined();
  });
});

describe('the zenity and kdialog command lines', () => {
  it('zenity: --question --no-markup, the text as one --text= argument, only allow once and deny', () => {
    const lines = dialogLines(q);
    const args = dialogArgs('zenity', lines, 2.5);
    expect(args).toEqual([
      '--question',
      '--switch',
      '--no-markup',
      '--title=tysandbox: approve a tool call?',
      `--text=${lines.join('\n')}`,
      `--extra-button=${DENY_LABEL}`,
      `--extra-button=${ALLOW_LABEL}`,
      '--width=720',
      '--timeout=3',
    ]);
    expect(lines[0]).toBe(DIALOG_HEADER);
    expect(lines.at(-1)).toBe('  Allow for: once');
    expect(dialogVerdict('zenity', 1, 'Allow once\n')).toBe('allow');
    expect(dialogVerdict('zenity', 1, 'Deny\n')).toBe('deny');
    expect(dialogVerdict('zenity', 1, '')).toBeUndefined(); // closed, Escape, or the display failed to open
    expect(dialogVerdict('zenity', 5, '')).toBeUndefined(); // its own timeout
  });

  it('kdialog: rich text with every markup character and backslash as an entity', () => {
    const text = kdialogText(['A <b>bold</b> & "q" \'s\' \\n \\\\', '  indented']);
    expect(text).toBe(
      '<qt>A &#60;b&#62;bold&#60;/b&#62; &#38; &#34;q&#34; &#39;s&#39; &#92;n &#92;&#92;<br>&nbsp;&nbsp;indented</qt>',
    );
    expect(text).not.toContain('\\');
    const args = dialogArgs('kdialog', dialogLines(q), 10);
    expect(args).toEqual([
      '--title=tysandbox: approve a tool call?',
      `--yesno=${kdialogText(dialogLines(q))}`,
      `--yes-label=${ALLOW_LABEL}`,
      `--no-label=${DENY_LABEL}`,
    ]);
    expect(dialogVerdict('kdialog', 0, '')).toBe('allow');
    expect(dialogVerdict('kdialog', 1, '')).toBe('deny');
    expect(dialogVerdict('kdialog', 134, '')).toBeUndefined();
    expect(dialogVerdict('kdialog', null, '')).toBeUndefined();
  });

  it('each line is the shared sanitized text, cut at 600 characters with the marker; long runs continue on the next line', () => {
    const shown = dialogLines({ ...q, title: `\u202eevil\u001b[2J${'A'.repeat(10_000)}` });
    expect(longestRun(shown)).toBeLessThanOrEqual(DIALOG_RUN_CHARS);
    const lines = joinContinued(shown, CONTINUED);
    expect(lines[1]).toMatch(/^\\u202eevil\\x1b\[2JA+… \[cut: 9417 more characters\]$/);
    expect(lines[1]!.split('…')[0]!.length).toBe(600);
    expect(lines.slice(2)).toEqual(wordQuestion({ ...q, scopes: ['once'] }).slice(1));
  });

  it('breaks a run without spaces before an escape rather than inside it, and caps the lines', () => {
    const parts = breakLongRuns(`${'x'.repeat(75)}\\u202e${'y'.repeat(100)}`);
    expect(parts).toEqual(['x'.repeat(75), `${CONTINUED}\\u202e${'y'.repeat(74)}`, `${CONTINUED}${'y'.repeat(26)}`]);
    expect(breakLongRuns('short words stay as they are')).toEqual(['short words stay as they are']);
    const many = dialogLines({ ...q, details: Array.from({ length: 59 }, (_, i) => `detail ${i}`) });
    expect(many).toHaveLength(DIALOG_MAX_LINES);
    expect(many.at(-1)).toMatch(/^… \[cut: \d+ more lines\]$/);
  });
});

describe('finding the dialog program', () => {
  it('looks only in the system folders, never on PATH', async () => {
    const fake = await tmp();
    await writeFile(join(fake, 'zenity'), '#!/bin/sh\nexit 0\n');
    await chmod(join(fake, 'zenity'), 0o755);
    const empty = await tmp();
    expect(findDialogProgram({ platform: 'linux', env: { PATH: `${fake}:/usr/bin` }, dirs: [empty] })).toBeUndefined();
    const sys = await tmp();
    await chmod(sys, 0o755);
    await writeFile(join(sys, 'kdialog'), '#!/bin/sh\n');
    await chmod(join(sys, 'kdialog'), 0o755);
    expect(findDialogProgram({ platform: 'linux', env: {}, dirs: [empty, sys] })).toEqual({
      kind: 'kdialog',
      path: join(sys, 'kdialog'),
    });
    expect(findDialogProgram({ platform: 'darwin', env: {}, dirs: [sys] })).toBeUndefined();
  });

  it('refuses a program or folder writable by group or others, or not executable', async () => {
    const d = await tmp();
    await chmod(d, 0o755);
    const p = join(d, 'zenity');
    await writeFile(p, '#!/bin/sh\n');
    await chmod(p, 0o755);
    expect(trustedProgram(p)).toBe(true);
    await chmod(p, 0o775);
    expect(trustedProgram(p)).toBe(false);
    await chmod(p, 0o644);
    expect(trustedProgram(p)).toBe(false);
    await chmod(p, 0o755);
    await chmod(d, 0o777);
    expect(trustedProgram(p)).toBe(false);
    const other = (path: string) => ({
      uid: 4242,
      mode: 0o755,
      isFile: () => !path.endsWith('/d'),
      isDirectory: () => path.endsWith('/d'),
    });
    expect(trustedProgram('/d/zenity', other, 1000)).toBe(false);
    expect(trustedProgram('/d/zenity', other, 4242)).toBe(true);
  });

  it('on KDE prefers kdialog; on macOS only osascript', () => {
    const stat = (path: string) => ({
      uid: 0,
      mode: 0o755,
      isFile: () => path !== '/s',
      isDirectory: () => path === '/s',
    });
    expect(
      findDialogProgram({ platform: 'linux', env: { XDG_CURRENT_DESKTOP: 'KDE' }, dirs: ['/s'], stat })?.kind,
    ).toBe('kdialog');
    expect(
      findDialogProgram({ platform: 'linux', env: { XDG_CURRENT_DESKTOP: 'GNOME' }, dirs: ['/s'], stat })?.kind,
    ).toBe('zenity');
    expect(findDialogProgram({ platform: 'darwin', env: {}, dirs: ['/s'], stat })).toEqual({
      kind: 'osascript',
      path: '/s/osascript',
    });
  });
});

describe('the desktop session', () => {
  const exists = (paths: string[]) => (p: string) => (paths.includes(p) ? { uid: 501 } : undefined);
  it('Linux: a local DISPLAY needs its X socket; WAYLAND_DISPLAY needs its socket; neither is no session', () => {
    expect(desktopSession({ platform: 'linux', env: {}, stat: exists([]) })).toEqual({
      ok: false,
      why: 'no desktop session (DISPLAY and WAYLAND_DISPLAY are unset)',
    });
    expect(desktopSession({ platform: 'linux', env: { DISPLAY: ':3' }, stat: exists(['/tmp/.X11-unix/X3']) })).toEqual({
      ok: true,
    });
    expect(desktopSession({ platform: 'linux', env: { DISPLAY: ':3.0' }, stat: exists([]) }).ok).toBe(false);
    expect(desktopSession({ platform: 'linux', env: { DISPLAY: 'remote:10' }, stat: exists([]) }).ok).toBe(true);
    expect(
      desktopSession({
        platform: 'linux',
        env: { WAYLAND_DISPLAY: 'wayland-0', XDG_RUNTIME_DIR: '/run/user/501' },
        stat: exists(['/run/user/501/wayland-0']),
      }).ok,
    ).toBe(true);
    expect(
      desktopSession({
        platform: 'linux',
        env: { WAYLAND_DISPLAY: 'wayland-0', XDG_RUNTIME_DIR: '/run/user/501' },
        stat: exists([]),
      }).ok,
    ).toBe(false);
  });
  it('macOS: the console belongs to this user', () => {
    expect(desktopSession({ platform: 'darwin', env: {}, stat: exists(['/dev/console']), uid: 501 }).ok).toBe(true);
    expect(desktopSession({ platform: 'darwin', env: {}, stat: exists(['/dev/console']), uid: 502 }).ok).toBe(false);
  });
});

describe('the dialog environment', () => {
  it('keeps only the desktop session variables; PATH is fixed', () => {
    const env = dialogEnv({
      DISPLAY: ':1',
      XAUTHORITY: '/h/.Xauthority',
      DBUS_SESSION_BUS_ADDRESS: 'unix:path=/run/user/1/bus',
      HOME: '/h',
      PATH: '/evil:/usr/bin',
      API_TOKEN: 'secret',
      LD_PRELOAD: '/evil.so',
      GTK_MODULES: 'evil',
      LANG: 'de_DE.UTF-8',
    });
    expect(env).toEqual({
      PATH: '/usr/bin:/bin',
      DISPLAY: ':1',
      XAUTHORITY: '/h/.Xauthority',
      DBUS_SESSION_BUS_ADDRESS: 'unix:path=/run/user/1/bus',
      HOME: '/h',
      LANG: 'de_DE.UTF-8',
    });
    expect(dialogEnv({}).LANG).toBe('C.UTF-8');
  });
});

describe('the dialog channel in the ask router', () => {
  it('setting off, or no desktop session: not live, and a refusal names every channel and why', async () => {
    const off = new DialogAskChannel({ mode: 'off', env: { DISPLAY: ':0' } });
    expect(off.live()).toBe(false);
    expect(off.whyNot()).toBe('turned off (settings ask.dialog "off")');
    const none = new DialogAskChannel({ env: {}, platform: 'linux' });
    const router = new AskRouter({ channels: [none, off] });
    const out = await router.ask(q);
    expect(out).toMatchObject({
      allow: false,
      reason: 'no-channel',
      channels: [
        { name: 'dialog', live: false, detail: 'no desktop session (DISPLAY and WAYLAND_DISPLAY are unset)' },
        { name: 'dialog', live: false },
      ],
    });
    if (out.allow) throw new Error('unexpected');
    expect(askRefusalError('calling fx', out).message).toContain(
      'channels: dialog (no desktop session (DISPLAY and WAYLAND_DISPLAY are unset)); dialog (turned off (settings ask.dialog "off"))',
    );
  });

  it('without a dialog program in the folders: not live, and says where it looked', async () => {
    const empty = await tmp();
    await mkdir(join(empty, 'x'));
    const ch = new DialogAskChannel({ env: { DISPLAY: 'remote:1' }, dirs: [empty], platform: 'linux' });
    expect(ch.live()).toBe(false);
    expect(ch.whyNot()).toBe(`no zenity or kdialog in ${empty} (PATH is not searched)`);
  });
});
