// The desktop dialog ask channel for real: zenity under Xvfb answered by xdotool, from a bridged MCP call through tycli
// mcp serve; test side.
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { AskRouter } from '../../core/ask/router.js';
import { main } from '../../node/cli/main.js';
import type { CliIO } from '../../node/cli/types.js';
import { CONTINUED, DIALOG_HEADER, DIALOG_RUN_CHARS, DialogAskChannel } from '../../node/ask/dialog.js';
import { QuestionStore, questionsDir } from '../../node/ask/store.js';
import { FIXTURE, ROOT, tempHome } from '../mcp/helpers.js';
import {
  joinContinued,
  longestRun,
  pidAlive,
  processesOn,
  startXvfb,
  waitFor,
  windowsNamed,
  xdotool,
  type ProcInfo,
  type Xvfb,
} from '../helpers/desktop.js';

const ZENITY = '/usr/bin/zenity';
const TITLE = 'tysandbox: approve a tool call';
/** Code points no dialog may receive raw: controls (but LF), bidi, zero-width and other invisible ones. */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Cs}]/u;

let x: Xvfb;
beforeAll(async () => {
  x = await startXvfb();
}, 30_000);
afterAll(async () => {
  await x?.stop();
});

let home: string;
let cleanup: () => Promise<void>;
const scratch: string[] = [];
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
  await noDialogLeft();
});
afterEach(async () => {
  for (const d of scratch.splice(0)) await rm(d, { recursive: true, force: true });
  await cleanup();
});

async function tycli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let o = '';
  let e = '';
  stdout.on('data', (c) => (o += c));
  stderr.on('data', (c) => (e += c));
  const io: CliIO = { stdout, stderr, stdin: new PassThrough(), interactive: false };
  const code = await main(['--home', home, ...args], {
    io,
    env: { ...process.env, DISPLAY: x.display, ...env },
    cwd: ROOT,
  });
  return { code, stdout: o, stderr: e };
}

/** A folder with a fake `zenity` that would leave a marker file if it ever ran; put first on PATH. */
async function fakeZenityDir(): Promise<{ dir: string; marker: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'tyfakebin-'));
  scratch.push(dir);
  const marker = join(dir, 'fake-zenity-ran');
  await writeFile(join(dir, 'zenity'), `#!/bin/sh\necho ran > '${marker}'\necho 'Allow once'\n`);
  await chmod(join(dir, 'zenity'), 0o755);
  return { dir, marker };
}

/** `tycli mcp serve` as a desktop MCP client starts it: no terminal, a desktop session in its environment. */
async function serve(env: Record<string, string>): Promise<Client> {
  expect((await tycli(['mcp', 'add', 'fx', '--', process.execPath, FIXTURE])).code).toBe(0);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', join(ROOT, 'test/mcp/cli-entry.ts'), '--home', home, 'mcp', 'serve', '--client', 'desk'],
    cwd: ROOT,
    env,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'desk', version: '1' }, { capabilities: {} });
  await client.connect(transport);
  return client;
}

/**
 * Wait until no zenity process runs on our display and no window of one is left (the X server destroys a
 * dead client's windows shortly after the process ends). Bounded at 10 s; fails naming what is left.
 */
async function noDialogLeft(): Promise<void> {
  await waitFor(
    'no dialog process or window left on the display',
    async () =>
      (await processesOn(x.display, ZENITY)).length === 0 && (await windowsNamed(x.display, TITLE)).length === 0
        ? true
        : undefined,
    10_000,
  );
}

/** The one zenity process on our display, once it is up with its window shown. */
async function dialogUp(): Promise<{ proc: ProcInfo; window: string }> {
  const proc = await waitFor('a zenity process on the display', async () => (await processesOn(x.display, ZENITY))[0]);
  const window = await waitFor(
    'its window, shown',
    async () => (await windowsNamed(x.display, TITLE, true))[0],
    40_000,
  ).catch(async (e: unknown) => {
    throw new Error(
      `${String(e)}; zenity ${proc.pid} alive: ${pidAlive(proc.pid)}; windows named so (mapped or not): ${(await windowsNamed(x.display, TITLE)).join(' ') || 'none'}`,
    );
  });
  return { proc, window };
}

/** Press Tab (Deny has the focus) then Return: the "Allow once" button. */
async function clickAllow(window: string): Promise<void> {
  await xdotool(x.display, ['windowfocus', '--sync', window]);
  await xdotool(x.display, ['key', '--clearmodifiers', 'Tab', 'Return']);
}

async function auditRecords(): Promise<string> {
  const r = await tycli(['--json', 'audit']);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

function textArg(argv: string[]): string {
  const a = argv.find((s) => s.startsWith('--text='));
  if (a === undefined) throw new Error(`no --text= in ${JSON.stringify(argv.slice(0, 4))}`);
  return a.slice('--text='.length);
}

describe('a bridged MCP call asked on a zenity dialog', () => {
  it('appears as a zenity window (system zenity, not the PATH one; minimal environment; sanitized, cut text); a key press allows it', async () => {
    const fake = await fakeZenityDir();
    const hostile = `\u202eevil\u0085\u009b31m\u200b\u007f\u2066${'A'.repeat(10_000)}`;
    const client = await serve({
      PATH: `${fake.dir}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      HOME: home,
      DISPLAY: x.display,
      API_TOKEN: 'tok-must-not-leak',
      LD_PRELOAD: '',
    });
    try {
      const call = client.callTool({ name: 'fx__search', arguments: { q: hostile } }, undefined, { timeout: 60_000 });
      const { proc, window } = await dialogUp();
      // the system zenity, never the one earlier on PATH
      expect(proc.exe).toBe(ZENITY);
      expect(proc.argv[0]).toBe(ZENITY);
      await expect(stat(fake.marker)).rejects.toMatchObject({ code: 'ENOENT' });
      // only the desktop session's variables
      expect(proc.env).toEqual({ PATH: '/usr/bin:/bin', DISPLAY: x.display, HOME: home, LANG: 'C.UTF-8' });
      expect(proc.argv.slice(1, 4)).toEqual(['--question', '--switch', '--no-markup']);
      // the text as one argument: sanitized (escapes instead of bidi/control/invisible characters) and cut at 600
      const text = textArg(proc.argv);
      expect(longestRun(text.split('\n'))).toBeLessThanOrEqual(DIALOG_RUN_CHARS);
      const lines = joinContinued(text.split('\n'), CONTINUED);
      expect(lines[0]).toBe(DIALOG_HEADER);
      expect(HIDDEN.test(text.replace(/\n/g, ''))).toBe(false);
      const args = lines.find((l) => l.includes('arguments:'));
      expect(args).toBeDefined();
      for (const esc of ['\\u202e', '\\x85', '\\x9b', '\\u200b', '\\x7f', '\\u2066']) expect(args).toContain(esc);
      expect(args).toMatch(/… \[cut: \d+ more characters\]$/);
      for (const l of lines) expect(l.split('… [cut:')[0]!.length).toBeLessThanOrEqual(602);
      expect(text).not.toContain('A'.repeat(700));
      await clickAllow(window);
      const r = await call;
      expect((r.content as { text: string }[])[0]!.text).toBe(`found ${hostile}`);
      await waitFor('the dialog to end', async () => (pidAlive(proc.pid) ? undefined : true), 10_000);
      await expect(stat(fake.marker)).rejects.toMatchObject({ code: 'ENOENT' });
      expect(await auditRecords()).toContain('"channel":"dialog"');
    } finally {
      await client.close().catch(() => undefined);
    }
  }, 90_000);

  it('answered first in the question store: the dialog process is killed, its window gone, a later click answers nothing', async () => {
    const lock = await new QuestionStore(questionsDir(home)).holdWatchLock();
    const client = await serve({ PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, DISPLAY: x.display });
    try {
      const call = client.callTool({ name: 'fx__search', arguments: { q: 'from the store' } }, undefined, {
        timeout: 60_000,
      });
      const { proc, window } = await dialogUp();
      const geometry = await xdotool(x.display, ['getwindowgeometry', '--shell', window]);
      const waiting = await waitFor(
        'the stored question',
        async () => (await new QuestionStore(questionsDir(home)).list())[0],
      );
      const answered = await tycli(['answer', waiting.id, 'yes']);
      expect(answered.code, answered.stderr).toBe(0);
      const r = await call;
      expect((r.content as { text: string }[])[0]!.text).toBe('found from the store');
      // withdrawn: the dialog process ends and its window goes away
      await waitFor('the dialog process to be killed', async () => (pidAlive(proc.pid) ? undefined : true), 10_000);
      await noDialogLeft();
      // a click where its "Allow once" button was, and keys to its old window: nothing is there to answer
      const g = Object.fromEntries(
        geometry
          .trim()
          .split('\n')
          .map((l) => l.split('=')),
      ) as Record<string, string>;
      await xdotool(x.display, [
        'mousemove',
        String(Number(g.X) + Number(g.WIDTH) - 40),
        String(Number(g.Y) + Number(g.HEIGHT) - 20),
        'click',
        '1',
      ]);
      await expect(xdotool(x.display, ['key', '--window', window, 'Tab', 'Return'])).rejects.toThrow();
      const audit = await auditRecords();
      expect(audit).toContain('"channel":"questions"');
      expect(audit).not.toContain('"channel":"dialog"');
    } finally {
      await client.close().catch(() => undefined);
      await lock.release();
    }
  }, 90_000);
  it('without a desktop session the call is refused at once, and the refusal names each channel and why it cannot ask', async () => {
    const client = await serve({ PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home });
    try {
      await expect(client.callTool({ name: 'fx__search', arguments: { q: 'x' } })).rejects.toThrow(
        /approval, but nobody could be asked \(.*questions \(nobody is watching the waiting-question store\); dialog \(no desktop session \(DISPLAY and WAYLAND_DISPLAY are unset\)\)\)/,
      );
      expect(await processesOn(x.display, ZENITY)).toEqual([]);
    } finally {
      await client.close().catch(() => undefined);
    }
  }, 60_000);

  it('the MCP client going away while the dialog is up ends tycli and closes the dialog: no orphan process', async () => {
    expect((await tycli(['mcp', 'add', 'fx', '--', process.execPath, FIXTURE])).code).toBe(0);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(ROOT, 'bin/tycli.mjs'), '--home', home, 'mcp', 'serve'],
      cwd: ROOT,
      env: { HOME: home, DISPLAY: x.display },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'desk', version: '1' }, { capabilities: {} });
    await client.connect(transport);
    const servePid = transport.pid;
    expect(servePid).toBeTypeOf('number');
    const call = client.callTool({ name: 'fx__search', arguments: { q: 'never answered' } }).catch((e: unknown) => e);
    const { proc } = await dialogUp();
    await client.close();
    await waitFor('tycli mcp serve to end', async () => (pidAlive(servePid!) ? undefined : true), 20_000);
    await waitFor('the dialog process to end', async () => (pidAlive(proc.pid) ? undefined : true), 10_000);
    await noDialogLeft();
    await call;
  }, 60_000);
});

describe('the dialog channel on its own', () => {
  it('a hostile question text (bidi, controls, 10,000 characters) reaches zenity sanitized and cut; withdrawing kills it', async () => {
    const ch = new DialogAskChannel({ env: { DISPLAY: x.display, PATH: '/nonexistent', SECRET_TOKEN: 's' } });
    expect(ch.live()).toBe(true);
    const title = `Allow \u202etxt.exe\u202c\u001b]0;owned\u0007\u001b[2J\r\u200d\u00ad${'B'.repeat(10_000)}`;
    const withdraw = new AbortController();
    const answer = ch.ask(
      {
        id: 'h',
        title,
        details: ['line one\nline two\u2028not a break', `${'C'.repeat(10_000)}`],
        scopes: ['once', 'session'],
      },
      withdraw.signal,
    );
    const { proc } = await dialogUp().catch((e: unknown) => {
      throw new Error(`${String(e)}; the dialog ended: ${JSON.stringify(ch.lastFailure)}`);
    });
    const shown = textArg(proc.argv).split('\n');
    expect(longestRun(shown)).toBeLessThanOrEqual(DIALOG_RUN_CHARS);
    const lines = joinContinued(shown, CONTINUED);
    expect(lines[0]).toBe(DIALOG_HEADER);
    expect(lines[1]).toMatch(
      /^Allow \\u202etxt\.exe\\u202c\\x1b\]0;owned\\x07\\x1b\[2J\\r\\u200d\\xadB+… \[cut: \d+ more characters\]$/,
    );
    expect(lines[1]!.split('…')[0]!.length).toBe(600);
    expect(lines).toContain('  line one');
    expect(lines).toContain('  line two\\u2028not a break');
    expect(lines).toContain(`  ${'C'.repeat(600)}… [cut: 9400 more characters]`);
    expect(lines.at(-1)).toBe('  Allow for: once');
    for (const l of lines) expect(HIDDEN.test(l)).toBe(false);
    expect(proc.env.SECRET_TOKEN).toBeUndefined();
    withdraw.abort();
    expect(await answer).toBeUndefined();
    await waitFor('the dialog process to be killed', async () => (pidAlive(proc.pid) ? undefined : true), 10_000);
    await noDialogLeft();
  }, 60_000);

  it('a process that exits with a dialog open takes the dialog with it', async () => {
    const script = [
      `import { DialogAskChannel } from ${JSON.stringify(join(ROOT, 'node/ask/dialog.ts'))};`,
      `void new DialogAskChannel({ env: { DISPLAY: ${JSON.stringify(x.display)} } }).ask({ id: 'e', title: 'Allow exit?', details: [] }, new AbortController().signal);`,
      `process.stdin.once('data', () => process.exit(0));`,
    ].join('\n');
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      stdio: ['pipe', 'ignore', 'inherit'],
    });
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    const { proc } = await dialogUp();
    child.stdin!.end('exit\n');
    await exited;
    await waitFor('the dialog process to end', async () => (pidAlive(proc.pid) ? undefined : true), 10_000);
  }, 60_000);

  it('Deny has the focus: Return refuses, and the refusal names the dialog', async () => {
    const router = new AskRouter({
      channels: [new DialogAskChannel({ env: { DISPLAY: x.display } })],
      askWaitMs: 60_000,
    });
    const outcome = router.ask({ id: 'd', title: 'Allow enter?', details: [] });
    const { window } = await dialogUp();
    await xdotool(x.display, ['windowfocus', '--sync', window]);
    await xdotool(x.display, ['key', '--clearmodifiers', 'Return']);
    expect(await outcome).toMatchObject({ allow: false, reason: 'refused', channel: 'dialog' });
  }, 60_000);

  it('no answer within ask_wait is no: the router refuses with timeout and the dialog process is killed', async () => {
    const router = new AskRouter({
      channels: [new DialogAskChannel({ env: { DISPLAY: x.display } })],
      askWaitMs: 4000,
    });
    const outcome = router.ask({ id: 't', title: 'Allow slow?', details: [] });
    const { proc } = await dialogUp();
    expect(await outcome).toMatchObject({ allow: false, reason: 'timeout' });
    await waitFor('the dialog process to be killed', async () => (pidAlive(proc.pid) ? undefined : true), 10_000);
    await noDialogLeft();
  }, 60_000);

  it('tycli ask status names the dialog as able to ask on the display; not with ask.dialog off or without a display', async () => {
    const on = await tycli(['--json', 'ask', 'status']);
    expect(on.code, on.stderr).toBe(0);
    const s = JSON.parse(on.stdout) as {
      channels: { name: string; live: boolean; detail?: string }[];
      dialog: { program?: string };
    };
    expect(s.channels.find((c) => c.name === 'dialog')).toEqual({ name: 'dialog', live: true });
    expect(s.dialog.program).toBe(ZENITY);
    const text = await tycli(['ask', 'status']);
    expect(text.stdout).toContain(`dialog     can ask now (${ZENITY})`);
    const bare = await tycli(['ask', 'status'], { DISPLAY: '' });
    expect(bare.code).toBe(1);
    expect(bare.stdout).toContain('dialog     cannot ask: no desktop session (DISPLAY and WAYLAND_DISPLAY are unset)');
    expect(bare.stdout).toContain(
      'questions  cannot ask: nobody is watching the waiting-question store (run `tycli questions --watch` in a terminal to answer there)',
    );
    await mkdir(join(home, 'config'), { recursive: true, mode: 0o700 });
    await writeFile(join(home, 'config', 'settings.json'), JSON.stringify({ ask: { dialog: 'off' } }), { mode: 0o600 });
    const off = await tycli(['ask', 'status']);
    expect(off.code).toBe(1);
    expect(off.stdout).toContain('dialog     cannot ask: turned off (settings ask.dialog "off")');
  });
});
