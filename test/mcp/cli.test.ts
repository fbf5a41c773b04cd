// tycli mcp add|list|show|remove|serve, including the SDK's own Client connected to `tycli mcp serve`; test side.
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { main } from '../../node/cli/main.js';
import type { CliIO } from '../../node/cli/types.js';
import { EVERYTHING, FIXTURE, ROOT, groupAlive, tempHome } from './helpers.js';
import { definitionsDir } from '../../node/mcp/definitions.js';

let home: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
});
/** Scratch folders of one test, removed after it. */
const scratch: string[] = [];
async function scratchDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  scratch.push(dir);
  return dir;
}
afterEach(async () => {
  for (const d of scratch.splice(0)) await rm(d, { recursive: true, force: true });
  await cleanup();
});

async function tycli(args: string[], cwd = ROOT): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let o = '';
  let e = '';
  stdout.on('data', (c) => (o += c));
  stderr.on('data', (c) => (e += c));
  const io: CliIO = { stdout, stderr, stdin: new PassThrough(), interactive: false };
  const code = await main(['--home', home, ...args], {
    io,
    env: { ...process.env, SECRET_IN_PARENT: 'parent-only' },
    cwd,
  });
  return { code, stdout: o, stderr: e };
}

describe('tycli mcp definitions', () => {
  it('add writes a 0600 file, keeps --env values secret in show and list', async () => {
    const r = await tycli([
      'mcp',
      'add',
      'ev',
      '--env',
      'API_TOKEN=s3cret-value',
      '--allow',
      'echo',
      '--',
      process.execPath,
      EVERYTHING,
      'stdio',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const file = join(definitionsDir(home), 'ev.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(definitionsDir(home))).mode & 0o777).toBe(0o700);
    const saved = JSON.parse(await readFile(file, 'utf8'));
    expect(saved.env.API_TOKEN).toBe('s3cret-value');
    expect(saved.env.SECRET_IN_PARENT).toBeUndefined();
    expect(saved.allow).toEqual(['echo']);
    for (const args of [
      ['mcp', 'show', 'ev'],
      ['mcp', 'list'],
      ['--json', 'mcp', 'show', 'ev'],
      ['--json', 'mcp', 'list'],
    ]) {
      const s = await tycli(args);
      expect(s.code).toBe(0);
      expect(s.stdout + s.stderr).not.toContain('s3cret-value');
      expect(s.stdout).toContain('ev');
    }
    expect((await tycli(['--json', 'mcp', 'show', 'ev'])).stdout).toContain('API_TOKEN');
    expect(r.stderr).not.toContain('does not exist');
  });

  it('add notes an absolute script path that does not exist (the definition is still stored)', async () => {
    const missing = join(home, 'not-built-yet', 'server.js');
    const r = await tycli(['mcp', 'add', 'later', '--', process.execPath, missing]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`note: ${missing} does not exist; the server will not start until it does`);
    expect((await tycli(['mcp', 'show', 'later'])).code).toBe(0);
    // the command itself, absolute and missing
    const gone = join(home, 'no-such-bin');
    const c = await tycli(['mcp', 'add', 'nobin', '--', gone, '--stdio']);
    expect(c.code, c.stderr).toBe(0);
    expect(c.stderr).toContain(`note: ${gone} does not exist`);
  });

  it('--env-from and --header-env take values from the environment, never the command line', async () => {
    expect(
      (await tycli(['mcp', 'add', 'ev2', '--env-from', 'SECRET_IN_PARENT', '--', process.execPath, EVERYTHING])).code,
    ).toBe(0);
    expect(JSON.parse(await readFile(join(definitionsDir(home), 'ev2.json'), 'utf8')).env.SECRET_IN_PARENT).toBe(
      'parent-only',
    );
    expect(
      (
        await tycli([
          'mcp',
          'add',
          'web',
          '--url',
          'https://mcp.example.com/mcp',
          '--header-env',
          'Authorization=SECRET_IN_PARENT',
        ])
      ).code,
    ).toBe(0);
    expect(JSON.parse(await readFile(join(definitionsDir(home), 'web.json'), 'utf8')).env.TYMCP_HEADER_1).toBe(
      'Authorization: parent-only',
    );
    const missing = await tycli(['mcp', 'add', 'ev3', '--env-from', 'NOT_SET_ANYWHERE', '--', process.execPath]);
    expect(missing.code).toBe(2);
  });

  it('refuses relative paths, bad names, neither or both of command and url, and --shared with --url', async () => {
    for (const args of [
      ['mcp', 'add', 'a', '--', 'node', './server.js'],
      ['mcp', 'add', 'a', '--', 'node', '--root=../x'],
      ['mcp', 'add', 'a', '--', 'bin/server'],
      ['mcp', 'add', 'a', '--', 'node', '.'],
      ['mcp', 'add', 'Bad_Name', '--', process.execPath],
      ['mcp', 'add', 'a'],
      ['mcp', 'add', 'a', '--url', 'http://example.com/mcp'],
      ['mcp', 'add', 'a', '--url', 'https://u:p@example.com/mcp'],
      ['mcp', 'add', 'a', '--shared', '--url', 'https://example.com/mcp'],
    ]) {
      const r = await tycli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/E_USAGE/);
    }
    expect((await tycli(['mcp', 'list'])).stdout).toBe('');
  });

  it('refuses a bare relative argument naming a file or folder in the current folder, and stores the command found on PATH (D6)', async () => {
    const dir = await scratchDir('tymcp-rel-');
    await writeFile(join(dir, 'x.js'), '');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(dir, 'srv'));
    // a ./ or ../ path is relative whether or not it names anything
    const dotted = await tycli(['mcp', 'add', 'rel', '--', 'node', './not-here.js'], dir);
    expect(dotted.stderr).toContain('"./not-here.js" is a relative path;');
    for (const args of [
      ['mcp', 'add', 'rel', '--', 'node', 'x.js'],
      ['mcp', 'add', 'rel', '--', 'node', 'srv'],
      ['mcp', 'add', 'rel', '--', 'node', '--root=srv'],
      ['mcp', 'add', 'rel', '--', 'no-such-command-tymcp'],
    ]) {
      const r = await tycli(args, dir);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/E_USAGE/);
      expect(r.stderr).toMatch(/absolute path/);
    }
    // words that name nothing in the folder are ordinary arguments; a command name is stored absolute
    const ok = await tycli(['mcp', 'add', 'rel', '--', 'node', join(dir, 'x.js'), 'stdio', '--flag=value'], dir);
    expect(ok.code, ok.stderr).toBe(0);
    const saved = JSON.parse(await readFile(join(definitionsDir(home), 'rel.json'), 'utf8'));
    expect(saved.command.startsWith('/')).toBe(true);
    expect(saved.command.endsWith('/node')).toBe(true);
    expect(saved.args).toEqual([join(dir, 'x.js'), 'stdio', '--flag=value']);
  });

  it('a saved definition with any other field, or readable by others, is refused', async () => {
    expect((await tycli(['mcp', 'add', 'fx', '--', process.execPath, FIXTURE])).code).toBe(0);
    const file = join(definitionsDir(home), 'fx.json');
    const saved = JSON.parse(await readFile(file, 'utf8'));
    await writeFile(file, JSON.stringify({ ...saved, cwd: '/tmp' }), { mode: 0o600 });
    const r = await tycli(['mcp', 'show', 'fx']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('E_INVALID_SETTINGS');
    await writeFile(file, JSON.stringify(saved), { mode: 0o644 });
    const { chmod } = await import('node:fs/promises');
    await chmod(file, 0o644);
    expect((await tycli(['mcp', 'show', 'fx'])).stderr).toContain('E_INVALID_SETTINGS');
  });

  it('adding a defined name again: the same definition changes nothing; a different one needs --approve-replacement (E_APPROVAL_REQUIRED, the differing fields named, no values)', async () => {
    const file = join(definitionsDir(home), 'fx.json');
    expect((await tycli(['mcp', 'add', 'fx', '--', process.execPath, FIXTURE])).code).toBe(0);
    const first = await readFile(file, 'utf8');
    const same = await tycli(['--json', 'mcp', 'add', 'fx', '--', process.execPath, FIXTURE]);
    expect(same.code, same.stderr).toBe(0);
    expect(JSON.parse(same.stdout)).toMatchObject({ ok: true, replaced: false, unchanged: true });
    // a broader rule list and a new secret: refused without approval, the file untouched
    const wider = [
      'mcp',
      'add',
      'fx',
      '--allow',
      'received',
      '--env',
      'TOKEN=t0p-secret',
      '--',
      process.execPath,
      FIXTURE,
    ];
    const refused = await tycli(wider);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('E_APPROVAL_REQUIRED');
    expect(refused.stderr).toContain('allow, env (TOKEN) differ');
    expect(refused.stderr).toContain('--approve-replacement');
    expect(refused.stderr).not.toContain('t0p-secret');
    expect(await readFile(file, 'utf8')).toBe(first);
    const approved = await tycli(['--json', ...wider.slice(0, 7), '--approve-replacement', ...wider.slice(7)]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(JSON.parse(approved.stdout)).toMatchObject({ ok: true, replaced: true, changed: ['allow', 'env'] });
    expect(approved.stdout).not.toContain('t0p-secret');
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({
      allow: ['received'],
      env: { TOKEN: 't0p-secret' },
    });
  });

  it('remove deletes it; removing again is an error', async () => {
    expect((await tycli(['mcp', 'add', 'fx', '--', process.execPath, FIXTURE])).code).toBe(0);
    expect((await tycli(['mcp', 'remove', 'fx'])).code).toBe(0);
    expect((await tycli(['mcp', 'remove', 'fx'])).code).toBe(2);
  });
});

describe('the SDK Client connected to tycli mcp serve', () => {
  it('a paused tool: the refusal names tycli resume NAME, once', async () => {
    const { tycliPaths } = await import('../../node/store/paths.js');
    const { mkdir } = await import('node:fs/promises');
    const settingsFile = tycliPaths(home).settingsFile;
    await mkdir(join(settingsFile, '..'), { recursive: true });
    await writeFile(
      settingsFile,
      JSON.stringify({ pause: { maxRefusals: 2, windowMs: 60_000 }, permissions: { deny: ['mcp(fx/search)'] } }),
    );
    expect((await tycli(['mcp', 'add', 'fx', '--', process.execPath, FIXTURE])).code).toBe(0);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', join(ROOT, 'test/mcp/cli-entry.ts'), '--home', home, 'mcp', 'serve'],
      cwd: ROOT,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'sdk', version: '1' });
    await client.connect(transport);
    try {
      const call = () =>
        client.callTool({ name: 'fx__search', arguments: { q: 'x' } }).then(
          () => 'resolved',
          (e: Error) => e.message,
        );
      expect(await call()).toContain('denied by deny rule mcp(fx/search)');
      expect(await call()).toContain(
        'are now paused until a person resumes them; a person can resume it with: tycli resume fx__search',
      );
      const paused = await call();
      expect(paused).toContain(
        'calls to "fx__search" are paused after 2 refusals within 60 s, until a person resumes them; a person can resume it with: tycli resume fx__search',
      );
      // "resumes them", "resume it with", "tycli resume": no other repeat
      expect(paused.split('resume').length).toBe(4);
    } finally {
      await client.close().catch(() => undefined);
    }
  }, 60_000);

  it('lists bridged tools, runs an allowed call, refuses one no rule allows, and leaves no server process', async () => {
    expect((await tycli(['mcp', 'add', 'fx', '--allow', 'received', '--', process.execPath, FIXTURE])).code).toBe(0);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        '--import',
        'tsx',
        join(ROOT, 'test/mcp/cli-entry.ts'),
        '--home',
        home,
        'mcp',
        'serve',
        '--client',
        'sdk',
        '--allow',
        'mcp(fx/poke)',
      ],
      cwd: ROOT,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'sdk', version: '1' }, { capabilities: { sampling: {}, roots: {} } });
    await client.connect(transport);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['fx__poke', 'fx__search', 'fx__received']));
      const r = await client.callTool({ name: 'fx__received', arguments: {} });
      const info = JSON.parse((r.content as { text: string }[])[0]!.text) as {
        pgid: number;
        initCaps: unknown;
        cwd: string;
      };
      expect(info.initCaps).toEqual({});
      expect(info.cwd).toBe('/');
      // no rule and no one to ask (no terminal, no question watcher): refused by the real gate
      const refused = String(
        await client.callTool({ name: 'fx__search', arguments: { q: 'x' } }).then(
          () => 'resolved',
          (e: Error) => e.message,
        ),
      );
      // said once, naming the server and its tool; the definition's identity (mcp:fx:HASH:sha256-…) stays in data and
      // audit
      expect(refused).toContain(
        'calling tool "search" of MCP server "fx" needs a person\'s approval, but nobody could be asked (',
      );
      expect(refused.split('nobody could be asked').length).toBe(2);
      expect(refused.split('questions (').length).toBe(2);
      expect(refused).not.toContain('mcp:fx:');
      expect(refused).not.toContain('sha256-');
      // a permission rule given to serve lets the call through the gate
      const poked = await client.callTool({ name: 'fx__poke', arguments: {} });
      expect(JSON.stringify(poked)).toContain('-32601');
      await client.close();
      // the serve process is gone and took the server's process group with it
      for (let i = 0; i < 100 && groupAlive(info.pgid); i++) await new Promise((res) => setTimeout(res, 20));
      expect(groupAlive(info.pgid)).toBe(false);
      const log = await readFile(join(home, 'state', 'mcp-requests.log'), 'utf8');
      expect(log).toContain('"method":"tools/call"');
      expect(log).toContain('"name":"search"');
      expect(log).not.toContain('"q"');
    } finally {
      await client.close().catch(() => undefined);
    }
  }, 30_000);
});

describe('tycli mcp namespace', () => {
  it('set validates and saves 0600; a broadcast mutation or a server name is refused; remove works', async () => {
    const dir = await scratchDir('tymcp-ns-');
    const good = {
      v: 1,
      name: 'code',
      actions: [{ name: 'find', access: 'read', targets: [{ kind: 'a', server: 'fa', tool: 'find' }] }],
    };
    await writeFile(join(dir, 'good.json'), JSON.stringify(good));
    await writeFile(
      join(dir, 'bad.json'),
      JSON.stringify({ ...good, actions: [{ ...good.actions[0], access: 'mutation', broadcast: true }] }),
    );
    await writeFile(join(dir, 'clash.json'), JSON.stringify({ ...good, name: 'fx' }));
    expect((await tycli(['mcp', 'namespace', 'set', 'good.json'], dir)).code).toBe(0);
    expect((await stat(join(home, 'config', 'mcp-namespaces', 'code.json'))).mode & 0o777).toBe(0o600);
    const bad = await tycli(['mcp', 'namespace', 'set', 'bad.json'], dir);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('E_INVALID_SETTINGS');
    expect((await tycli(['mcp', 'add', 'fx', '--', process.execPath, FIXTURE])).code).toBe(0);
    expect((await tycli(['mcp', 'namespace', 'set', 'clash.json'], dir)).code).toBe(2);
    expect((await tycli(['mcp', 'namespace', 'remove', 'code'])).code).toBe(0);
    expect((await tycli(['mcp', 'namespace', 'remove', 'code'])).code).toBe(2);
  });
});

describe('registered tool revisions through tycli mcp serve', () => {
  it('an external-service revision bound to a bridged tool is offered and needs the same MCP approval as a bridged call', async () => {
    const dir = await scratchDir('tymcp-tool-');
    const manifest = (name: string, tool: string) => ({
      name,
      description: 'search via fx',
      parameters: {
        type: 'object',
        properties: { q: { type: 'string' } },
        required: ['q'],
        additionalProperties: false,
      },
      execution: { kind: 'external-service', serviceId: 'fx', tool },
    });
    await writeFile(join(dir, 'a.json'), JSON.stringify(manifest('ext-search', 'search')));
    await writeFile(join(dir, 'b.json'), JSON.stringify(manifest('ext-other', 'find')));
    expect((await tycli(['tool', 'add', 'a.json'], dir)).code).toBe(0);
    expect((await tycli(['tool', 'add', 'b.json'], dir)).code).toBe(0);
    expect((await tycli(['mcp', 'add', 'fx', '--', process.execPath, FIXTURE])).code).toBe(0);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        '--import',
        'tsx',
        join(ROOT, 'test/mcp/cli-entry.ts'),
        '--home',
        home,
        'mcp',
        'serve',
        '--allow',
        'mcp(fx/search)',
      ],
      cwd: ROOT,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'sdk', version: '1' }, { capabilities: {} });
    await client.connect(transport);
    try {
      const tools = (await client.listTools()).tools;
      expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['ext-search', 'ext-other', 'fx__search']));
      const r = await client.callTool({ name: 'ext-search', arguments: { q: 'reg' } });
      expect(JSON.stringify(r)).toContain('found reg');
      const other = await client.callTool({ name: 'ext-other', arguments: { q: 'reg' } }).then(
        (x) => JSON.stringify(x),
        (e: Error) => e.message,
      );
      expect(other).toMatch(/no-channel|approval/);
      // a registered tool's failure (here arguments its schema refuses) is a tool execution error, not a JSON-RPC error
      const bad = (await client.callTool({ name: 'ext-search', arguments: { q: 'reg', extra: 1 } })) as {
        isError?: boolean;
        content: { text: string }[];
        _meta?: Record<string, unknown>;
      };
      expect(bad.isError).toBe(true);
      expect(bad._meta?.['tysandbox/code']).toBe('E_INVALID_ARGS');
      expect(bad.content[0]?.text).toMatch(/extra/);
    } finally {
      await client.close().catch(() => undefined);
    }
  }, 30_000);
});

describe('tool failures reach an MCP client as tool execution errors', () => {
  it('a registered tool that throws, passes its output limit or gets arguments its schema refuses: CallToolResult isError, not a JSON-RPC error', async () => {
    const dir = await scratchDir('tymcp-fail-');
    const params = { type: 'object', properties: { x: { type: 'number' } }, additionalProperties: false };
    const tool = (name: string, source: string, extra: Record<string, unknown> = {}) => ({
      name,
      description: `test tool ${name}`,
      parameters: params,
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
      ...extra,
    });
    await writeFile(
      join(dir, 'boom.json'),
      JSON.stringify(tool('boom', 'export default async () => { throw new Error("boom inside") }')),
    );
    await writeFile(
      join(dir, 'huge.json'),
      JSON.stringify(tool('huge', 'export default async () => "x".repeat(5000)', { limits: { outputBytes: 1000 } })),
    );
    expect((await tycli(['tool', 'add', 'boom.json'], dir)).code).toBe(0);
    expect((await tycli(['tool', 'add', 'huge.json'], dir)).code).toBe(0);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        '--import',
        'tsx',
        join(ROOT, 'test/mcp/cli-entry.ts'),
        '--home',
        home,
        '--sandbox',
        'off',
        'mcp',
        'serve',
        '--allow',
        'tool(boom)',
        '--allow',
        'tool(huge)',
      ],
      cwd: ROOT,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'sdk', version: '1' }, { capabilities: {} });
    await client.connect(transport);
    try {
      const expectToolError = async (name: string, args: Record<string, unknown>, code: string, text: RegExp) => {
        const r = (await client.callTool({ name, arguments: args })) as {
          isError?: boolean;
          content: { text: string }[];
          _meta?: Record<string, unknown>;
        };
        expect(r.isError, JSON.stringify(r)).toBe(true);
        expect(r._meta?.['tysandbox/code']).toBe(code);
        expect(r.content[0]?.text).toMatch(text);
        expect(r.content[0]?.text).not.toMatch(/tycli /);
      };
      await expectToolError('boom', {}, 'E_TOOL_FAILED', /boom inside/);
      await expectToolError('huge', {}, 'E_OUTPUT_LIMIT', /.+/);
      await expectToolError('boom', { y: 1 }, 'E_INVALID_ARGS', /y/);
      // an unknown tool stays a protocol fault
      await expect(client.callTool({ name: 'nope', arguments: {} })).rejects.toThrow(/nope/);
    } finally {
      await client.close().catch(() => undefined);
    }
  }, 60_000);
});
