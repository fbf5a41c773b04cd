// Unit tests for node/cli/main.ts dispatch, help, exit codes and output helpers (in process); test side.
import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { main } from './main.js';
import { commands } from './commands/index.js';
import { exitCodeFor, terminalSafe } from './output.js';
import type { CliCommand, CliContext, CliIO } from './types.js';
import { TyError } from '../../core/errors.js';

function io(tty = false): CliIO & { text(): { out: string; err: string } } {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d) => (out += String(d)));
  stderr.on('data', (d) => (err += String(d)));
  if (tty) Object.assign(stdout, { isTTY: true });
  return { stdout, stderr, stdin: new PassThrough(), interactive: false, text: () => ({ out, err }) };
}

const seen: { values: Record<string, unknown>; pos: string[]; ctx: CliContext }[] = [];
const fake: CliCommand[] = [
  {
    path: ['tool', 'add'],
    summary: 'add',
    usage: 'Usage: add',
    run: async (ctx, values, pos) => (seen.push({ ctx, values, pos }), 0),
  },
  {
    path: ['tool'],
    summary: 'tool root',
    usage: 'Usage: tool',
    options: { flag: { type: 'boolean' } },
    run: async (ctx, values, pos) => (seen.push({ ctx, values, pos }), 3),
  },
  {
    path: ['boom'],
    summary: 'throws',
    usage: 'Usage: boom',
    run: async () => {
      throw new Error('bad thing');
    },
  },
];

describe('tycli dispatch', () => {
  it('picks the longest matching command path and strips global options', async () => {
    seen.length = 0;
    const i = io();
    expect(
      await main(
        [
          '--home',
          '/tmp/h1',
          'tool',
          'add',
          'm.json',
          '--json',
          '--allow',
          'a',
          '--allow',
          'b',
          '--deny',
          'c',
          '--mode',
          'ask',
          '--sandbox',
          'off',
        ],
        { io: i, commands: fake, env: {} },
      ),
    ).toBe(0);
    expect(seen[0]!.pos).toEqual(['m.json']);
    expect(seen[0]!.values).toEqual({});
    expect(seen[0]!.ctx.globals).toEqual({
      home: '/tmp/h1',
      json: true,
      allow: ['a', 'b'],
      deny: ['c'],
      mode: 'ask',
      sandbox: 'off',
    });
    expect(
      await main(['tool', 'other', '--flag'], { io: io(), commands: fake, env: { TYCLI_HOME: 'rel' }, cwd: '/base' }),
    ).toBe(3);
    expect(seen[1]!.pos).toEqual(['other']);
    expect(seen[1]!.values).toEqual({ flag: true });
    expect(seen[1]!.ctx.globals.home).toBe('/base/rel');
  });

  it('--sandbox NAME names the client context of a command that takes names; a posture stays a posture', async () => {
    seen.length = 0;
    const serve: CliCommand[] = [
      {
        path: ['serve'],
        summary: 's',
        usage: 'Usage: s',
        options: { client: { type: 'string' } },
        sandboxNames: true,
        run: async (ctx, values, pos) => (seen.push({ ctx, values, pos }), 0),
      },
    ];
    expect(await main(['serve', '--sandbox', 'agent1'], { io: io(), commands: serve, env: {} })).toBe(0);
    expect(seen[0]!.values).toEqual({ client: 'agent1' });
    expect(seen[0]!.ctx.globals.sandbox).toBeUndefined();
    expect(await main(['serve', '--sandbox', 'required'], { io: io(), commands: serve, env: {} })).toBe(0);
    expect(seen[1]!.values).toEqual({});
    expect(seen[1]!.ctx.globals.sandbox).toBe('required');
    expect(await main(['serve', '--sandbox', 'a', '--client', 'b'], { io: io(), commands: serve, env: {} })).toBe(2);
    // a command without names keeps the strict posture check
    expect(await main(['tool', 'add', '--sandbox', 'agent1'], { io: io(), commands: fake, env: {} })).toBe(2);
  });

  it('unknown commands and options are E_USAGE (exit 2) with a suggestion', async () => {
    const i = io();
    expect(await main(['tool', 'ad'], { io: i, commands: commands, env: {} })).toBe(2);
    expect(await main(['rn', 'x'], { io: i, commands: commands, env: {} })).toBe(2);
    expect(await main(['frobnicate'], { io: i, commands: fake, env: {} })).toBe(2);
    expect(await main(['tool', 'add', '--bogus'], { io: i, commands: fake, env: {} })).toBe(2);
    expect(await main(['--home', '', 'tool', 'add'], { io: i, commands: fake, env: {} })).toBe(2);
    const err = i.text().err.split('\n');
    expect(err[0]).toBe(
      "error[E_USAGE]: unknown command 'tool ad'; did you mean 'tycli tool add'? (see 'tycli --help')",
    );
    expect(err[1]).toContain("did you mean 'tycli run'");
    expect(err[2]).toMatch(/^error\[E_USAGE\]: unknown command 'frobnicate'/);
    expect(err[3]).toMatch(/^error\[E_USAGE\]: Unknown option '--bogus'/);
    expect(err[4]).toBe('error[E_USAGE]: --home needs a folder path');
  });

  it("a command's single-value option given twice is E_USAGE naming it; multiple-value options and global options may repeat", async () => {
    const opts: CliCommand = {
      path: ['pick'],
      summary: 'pick',
      usage: 'Usage: pick',
      options: { args: { type: 'string' }, 'arg-file': { type: 'string', multiple: true }, flag: { type: 'boolean' } },
      run: async (ctx, values, pos) => (seen.push({ ctx, values, pos }), 0),
    };
    const i = io();
    expect(await main(['pick', '--args', '{"a":1}', '--args', '{"a":2}'], { io: i, commands: [opts], env: {} })).toBe(
      2,
    );
    expect(i.text().err).toContain('--args is given more than once');
    expect(await main(['pick', '--args={}', '--args={}'], { io: io(), commands: [opts], env: {} })).toBe(2);
    expect(
      await main(
        [
          '--home',
          '/tmp/a',
          'pick',
          '--arg-file',
          'a=x',
          '--arg-file',
          'b=y',
          '--flag',
          '--flag',
          '--home',
          '/tmp/b',
          '--args',
          '{}',
        ],
        { io: io(), commands: [opts], env: {} },
      ),
    ).toBe(0);
    expect(seen.at(-1)?.values).toMatchObject({ 'arg-file': ['a=x', 'b=y'], args: '{}' });
  });

  it('a mistyped global option before the command is named with a suggestion, not "no command given"', async () => {
    const i = io();
    expect(await main(['--hom', '/tmp', 'tool', 'list'], { io: i, commands: fake, env: {} })).toBe(2);
    expect(await main(['--frobnicate'], { io: i, commands: fake, env: {} })).toBe(2);
    const err = i.text().err.split('\n');
    expect(err[0]).toBe(
      "error[E_USAGE]: Unknown option '--hom' before the command; did you mean '--home'? (see 'tycli --help')",
    );
    expect(err[1]).toMatch(/^error\[E_USAGE\]: Unknown option '--frobnicate' before the command/);
  });

  it('--json errors are one JSON line on stdout; internal errors exit 1', async () => {
    const i = io();
    expect(await main(['nope', '--json'], { io: i, commands: fake, env: {} })).toBe(2);
    expect(await main(['boom', '--json', '--home', '/tmp/x'], { io: i, commands: fake, env: {} })).toBe(1);
    const lines = i
      .text()
      .out.trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ ok: false, error: { code: 'E_USAGE' } });
    expect(lines[1]).toEqual({ ok: false, error: { code: 'E_TOOL_FAILED', message: 'internal error: bad thing' } });
    expect(i.text().err).toBe('');
  });

  it('--help works on every registered command and lists them all', async () => {
    for (const c of commands) {
      const i = io();
      expect(await main([...c.path, '--help'], { io: i, env: {} }), c.path.join(' ')).toBe(0);
      expect(i.text().out).toContain(`tycli ${c.path.join(' ')}: ${c.summary}`);
      expect(i.text().out).toContain('--home DIR');
    }
    const all = io();
    expect(await main(['--help'], { io: all, env: {} })).toBe(0);
    for (const c of commands) expect(all.text().out).toContain(`  ${c.path.join(' ')}`);
    const group = io();
    expect(await main(['tool', '--help'], { io: group, env: {} })).toBe(0);
    expect(group.text().out).toContain('tool activate');
    expect(group.text().out).not.toMatch(/^ {2}run /m);
  });

  it("a tool's error text printed to a terminal's stderr is made inert", async () => {
    const i = io();
    Object.assign(i.stderr, { isTTY: true });
    const evil: CliCommand[] = [
      {
        path: ['x'],
        summary: 's',
        usage: 'u',
        run: async () => {
          throw new TyError('E_TOOL_FAILED', 'Error: \x1b[2J\x1b]0;PWNED\x07done');
        },
      },
    ];
    expect(await main(['x', '--home', '/tmp/x'], { io: i, commands: evil, env: {} })).toBe(1);
    // Only tycli's own colour (stderr is a TTY) reaches the terminal; the tool's escapes are shown inert.
    expect(i.text().err).toBe('\x1b[31merror[E_TOOL_FAILED]\x1b[0m: Error: \\x1b[2J\\x1b]0;PWNED\\x07done\n');
  });

  it('exit codes: 2 for input errors, 1 for failures and refusals', () => {
    for (const c of ['E_USAGE', 'E_INVALID_ARGS', 'E_INVALID_MANIFEST', 'E_UNKNOWN_TOOL'])
      expect(exitCodeFor(c)).toBe(2);
    for (const c of [
      'E_TOOL_FAILED',
      'E_TIMEOUT',
      'E_OUTPUT_LIMIT',
      'E_CAPABILITY_DENIED',
      'E_APPROVAL_REQUIRED',
      'E_INTEGRITY',
    ])
      expect(exitCodeFor(c)).toBe(1);
  });

  it('tool text printed to a terminal cannot drive it; piped output stays exact', () => {
    const evil = 'ok\x1b]52;c;Zm9v\x07 \x1b[2J\r\u202Egnp.exe\u200b\n\tnext';
    const ctxTty = { io: io(true), globals: { json: false } } as unknown as CliContext;
    const shown = terminalSafe(ctxTty, evil);
    expect(shown).toBe('ok\\x1b]52;c;Zm9v\\x07 \\x1b[2J\\r\\u202egnp.exe\\u200b\n\tnext');
    expect(shown).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u200b]/);
    // The kind, not the instances: every C0/C1 control (but LF, tab), DEL, bidi/zero-width/tag format characters,
    // line/paragraph separators.
    const raw = [
      ...Array.from({ length: 0x20 }, (_, i) => i),
      0x7f,
      ...Array.from({ length: 0x20 }, (_, i) => 0x80 + i),
      0x200b,
      0x200e,
      0x202a,
      0x202e,
      0x2066,
      0x2069,
      0x2028,
      0x2029,
      0xfeff,
      0xe0041,
      0xe007f,
    ]
      .filter((cp) => cp !== 0x0a && cp !== 0x09)
      .map((cp) => String.fromCodePoint(cp))
      .join('x');
    expect(terminalSafe(ctxTty, raw)).not.toMatch(
      /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]|\u{e0041}|\u{e007f}/u,
    );
    const ctxPipe = { io: io(false), globals: { json: false } } as unknown as CliContext;
    expect(terminalSafe(ctxPipe, evil)).toBe(evil);
  });
});

describe('lazy command modules', () => {
  it("the permissions rules help names the permission engine's scopes in order", async () => {
    const { SCOPES } = await import('../../core/policy/permissions.js');
    const { RULE_SCOPES_TEXT } = await import('./commands/policy/permissions.js');
    expect(RULE_SCOPES_TEXT).toBe(SCOPES.join(', '));
  });

  it('loading the command table and printing --help loads no schema, MCP, validator or CID library', async () => {
    const { spawnSync } = await import('node:child_process');
    const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = mkdtempSync(join(tmpdir(), 'tyhelp-'));
    try {
      // A resolve hook that records every module the process loads (tsx runs the TypeScript sources).
      writeFileSync(
        join(dir, 'hook.mjs'),
        `export async function resolve(s, c, n) { const r = await n(s, c); process.stderr.write('LOAD ' + r.url + '\\n'); return r; }`,
      );
      writeFileSync(
        join(dir, 'reg.mjs'),
        `import { register } from 'node:module'; register(${JSON.stringify(`file://${join(dir, 'hook.mjs')}`)});`,
      );
      writeFileSync(
        join(dir, 'run.mts'),
        `import { main } from ${JSON.stringify(join(import.meta.dirname, 'main.ts'))}; process.exitCode = await main(['--help']);`,
      );
      const r = spawnSync(
        process.execPath,
        ['--import', join(dir, 'reg.mjs'), '--import', 'tsx', join(dir, 'run.mts')],
        { encoding: 'utf8', cwd: join(import.meta.dirname, '..', '..'), timeout: 60_000 },
      );
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toContain('Commands:');
      const loaded = r.stderr
        .split('\n')
        .filter((l) => l.startsWith('LOAD '))
        .map((l) => l.slice(5));
      // the hook saw the command modules
      expect(loaded.some((u) => u.includes('/node/cli/commands/mcp/servers.ts'))).toBe(true);
      expect(
        loaded.filter((u) => /node_modules\/(zod|@modelcontextprotocol|@cfworker|multiformats|undici)\//.test(u)),
      ).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
