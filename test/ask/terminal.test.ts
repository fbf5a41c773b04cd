// Tests for the terminal ask channel: a fake terminal stream, and a real pseudo-terminal via script(1); test code,
// trusted side.
import { PassThrough } from 'node:stream';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { execFileSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { TerminalAskChannel, interpretTypedLine, newAnswerCode } from '../../node/ask/terminal.js';
import type { TerminalHandle } from '../../node/ask/tty.js';
import { AskRouter } from '../../core/ask/router.js';
import type { Question } from '../../core/exec/runtime.js';

class FakeTty implements TerminalHandle {
  input = new PassThrough();
  written = '';
  closed = false;
  write(text: string): void {
    this.written += text;
  }
  close(): void {
    this.closed = true;
  }
  async code(): Promise<string> {
    for (let i = 0; i < 200; i++) {
      const m = /Type ([A-Z]{4}) to allow/.exec(this.written);
      if (m) return m[1]!;
      await new Promise((r) => setTimeout(r, 1));
    }
    throw new Error('no code shown');
  }
}

const question: Question = {
  id: 'q1',
  title: 'Allow fetch?\u001b[2J',
  details: ['tool: weather (bafy...)', 'origin: https://api.example.com\u202e'],
  suggestedRule: 'fetch(read:https://api.example.com)',
  hints: { readOnlyHint: true, destructiveHint: true },
};

function channelWith(tty: FakeTty): TerminalAskChannel {
  return new TerminalAskChannel({ open: () => tty });
}

describe('terminal channel with a fake terminal', () => {
  it('the right code allows once; the question is shown sanitized with hints and rule', async () => {
    const tty = new FakeTty();
    const p = channelWith(tty).ask(question, new AbortController().signal);
    const code = await tty.code();
    tty.input.write(`${code}\n`);
    expect(await p).toEqual({ allow: true, scope: 'once', channel: 'terminal' });
    expect(tty.written).toContain('Allow fetch?\\x1b[2J');
    expect(tty.written).toContain('\\u202e');
    expect(tty.written).not.toContain('\u001b');
    expect(tty.written).not.toContain('\u202e');
    expect(tty.written).toContain('readOnlyHint=true, destructiveHint=true');
    expect(tty.written).toContain("--allow 'fetch(read:https://api.example.com)'");
    expect(tty.closed).toBe(true);
  });

  it('a wrong code, "y", an empty line or extra words refuse', async () => {
    for (const typed of ['ZZZZ', 'y', 'yes', '', 'CODE extra words']) {
      const tty = new FakeTty();
      const p = channelWith(tty).ask(question, new AbortController().signal);
      const code = await tty.code();
      const line =
        typed === 'CODE extra words' ? `${code} extra words` : typed === 'ZZZZ' && code === 'ZZZZ' ? 'AAAA' : typed;
      tty.input.write(`${line}\n`);
      expect(await p).toEqual({ allow: false, scope: 'once', channel: 'terminal' });
    }
  });

  it('the code is fresh for every question', async () => {
    const codes = new Set<string>();
    for (let i = 0; i < 20; i++) codes.add(newAnswerCode());
    expect(codes.size).toBeGreaterThan(15);
    for (const c of codes) expect(c).toMatch(/^[A-Z]{4}$/);
  });

  it('session scope only when offered', async () => {
    expect(interpretTypedLine('abcd session', 'ABCD', ['once', 'session'])).toEqual({ allow: true, scope: 'session' });
    expect(interpretTypedLine('ABCD session', 'ABCD', ['once'])).toEqual({ allow: false });
    expect(interpretTypedLine('ABCD permanent', 'ABCD', ['once', 'session'])).toEqual({ allow: false });
    expect(interpretTypedLine(' ABCD ', 'ABCD', ['once'])).toEqual({ allow: true, scope: 'once' });
    expect(interpretTypedLine('ABCDE', 'ABCD', ['once'])).toEqual({ allow: false });
  });

  it('end of input and over-long input refuse', async () => {
    const tty = new FakeTty();
    const p = channelWith(tty).ask(question, new AbortController().signal);
    await tty.code();
    tty.input.end();
    expect(await p).toMatchObject({ allow: false });
    const tty2 = new FakeTty();
    const p2 = channelWith(tty2).ask(question, new AbortController().signal);
    await tty2.code();
    tty2.input.write('A'.repeat(1000));
    expect(await p2).toMatchObject({ allow: false });
  });

  it('a withdrawn question gets no answer from the terminal and says so', async () => {
    const tty = new FakeTty();
    const c = new AbortController();
    const p = channelWith(tty).ask(question, c.signal);
    const code = await tty.code();
    c.abort();
    expect(await p).toBeUndefined();
    tty.input.write(`${code}\n`);
    expect(tty.written).toContain('withdrawn');
    expect(tty.closed).toBe(true);
  });

  it('through the router: the terminal answer wins and the code never leaves the channel', async () => {
    const tty = new FakeTty();
    const router = new AskRouter({ channels: [channelWith(tty)] });
    const q: Question = { ...question, scopes: ['once', 'session'] };
    const p = router.ask(q);
    const code = await tty.code();
    tty.input.write(`${code} session\r`);
    const out = await p;
    expect(out).toEqual({ allow: true, scope: 'session', channel: 'terminal' });
    expect(JSON.stringify(out)).not.toContain(code);
    expect(JSON.stringify(q)).not.toContain(code);
  });

  it('without a controlling terminal the channel is not live', () => {
    // vitest workers have no controlling terminal here; the probe must say so rather than guess.
    const ch = new TerminalAskChannel({ probe: () => false });
    expect(ch.live()).toBe(false);
    const none = new TerminalAskChannel({ open: () => undefined, probe: () => true });
    return expect(none.ask(question, new AbortController().signal)).resolves.toBeUndefined();
  });
});

const haveScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;
const root = resolve(import.meta.dirname, '..', '..');

describe.skipIf(!haveScript)('terminal channel on a real pseudo-terminal (script -qc)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ty-ask-pty-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const child = join(dir, 'child.mts');
  writeFileSync(
    child,
    [
      `import { TerminalAskChannel } from ${JSON.stringify(join(root, 'node/ask/terminal.ts'))};`,
      `import { AskRouter } from ${JSON.stringify(join(root, 'core/ask/router.ts'))};`,
      `const router = new AskRouter({ channels: [new TerminalAskChannel()], askWaitMs: Number(process.argv[2]) });`,
      `const out = await router.ask({ id: 'q', title: 'Allow pty test?', details: ['from a pseudo-terminal'] });`,
      `process.stdout.write('\\nRESULT:' + JSON.stringify(out) + '\\n');`,
      `process.exit(0);`,
    ].join('\n'),
  );

  /** Run the child under script(1) so it has a controlling pty; `stdinFrom` redirects its stdin. */
  async function runOnPty(
    askWaitMs: number,
    stdinFrom: string,
    act: (code: string, typeOnTty: (s: string) => void) => Promise<void>,
  ): Promise<unknown> {
    const cmd = `exec ${JSON.stringify(process.execPath)} --import tsx ${JSON.stringify(child)} ${askWaitMs} < ${JSON.stringify(stdinFrom)}`;
    const proc = spawn('script', ['-qec', cmd, '/dev/null'], {
      cwd: root,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    try {
      let code: string | undefined;
      for (let i = 0; i < 3000 && !code; i++) {
        code = /Type ([A-Z]{4}) to allow/.exec(out)?.[1];
        if (!code) await new Promise((r) => setTimeout(r, 5));
      }
      expect(code, out).toBeDefined();
      await act(code!, (s) => proc.stdin.write(s));
      for (let i = 0; i < 3000 && !/RESULT:[^\r\n]*\r?\n/.test(out); i++) await new Promise((r) => setTimeout(r, 5));
      const m = /RESULT:([^\r\n]*)\r?\n/.exec(out);
      expect(m, out).not.toBeNull();
      return JSON.parse(m![1]!.trim());
    } finally {
      try {
        process.kill(-proc.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  }

  it('typing the shown code on the terminal allows', async () => {
    const out = await runOnPty(60_000, '/dev/null', async (code, type) => type(`${code}\r`));
    expect(out).toEqual({ allow: true, scope: 'once', channel: 'terminal' });
  }, 30_000);

  it('a wrong code typed on the terminal refuses', async () => {
    const out = await runOnPty(60_000, '/dev/null', async (code, type) =>
      type(`${code === 'QQQQ' ? 'WWWW' : 'QQQQ'}\r`),
    );
    expect(out).toMatchObject({ allow: false, reason: 'refused', channel: 'terminal' });
  }, 30_000);

  it('the right code arriving on piped stdin does not answer (only /dev/tty is read)', async () => {
    const fifo = join(dir, 'stdin.fifo');
    if (!existsSync(fifo)) execFileSync('mkfifo', [fifo]);
    const writer = open(fifo, 'w');
    const out = await runOnPty(1500, fifo, async (code) => {
      const fh = await writer;
      await fh.write(`${code}\n${code}\n`);
      await fh.close();
    });
    expect(out).toMatchObject({ allow: false, reason: 'timeout' });
  }, 30_000);
});
