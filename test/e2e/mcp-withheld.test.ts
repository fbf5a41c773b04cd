// `tycli mcp serve` withholds stored secret values from hook input, as `tycli run` does; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { runProcess } from './helpers.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'tycli.mjs');
const SECRET = 'topsecretvalue99';
let tmp: string;
let home: string;
let proj: string;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'tycli-mcp-withheld-'));
  home = join(tmp, 'home');
  proj = join(tmp, 'proj');
  await mkdir(join(proj, '.tycli'), { recursive: true, mode: 0o755 });
  await mkdir(join(proj, '.git'));
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp };
  const manifest = join(tmp, 'echo.json');
  await writeFile(
    manifest,
    JSON.stringify({
      name: 'echo',
      description: 'echo',
      parameters: { type: 'object', properties: { message: { type: 'string' } }, additionalProperties: false },
      execution: {
        kind: 'sandboxed-code',
        runtime: 'javascript',
        source: 'export default async ({ message }) => message;',
      },
    }),
  );
  expect((await runProcess(process.execPath, [BIN, '--home', home, 'tool', 'add', manifest], env, tmp)).code).toBe(0);
  const set = await new Promise<number>((res) => {
    import('node:child_process').then(({ spawn }) => {
      const c = spawn(process.execPath, [BIN, '--home', home, 'secret', 'set', 'TOKEN'], {
        env,
        cwd: tmp,
        stdio: ['pipe', 'ignore', 'ignore'],
      });
      c.stdin.end(SECRET);
      c.on('close', (code) => res(code ?? -1));
    });
  });
  expect(set).toBe(0);
  const hookOut = join(tmp, 'hook-input.json');
  await writeFile(
    join(proj, '.tycli', 'settings.json'),
    JSON.stringify({ hooks: { preToolUse: [{ matcher: '*', command: `cat >> ${hookOut}` }] } }),
    { mode: 0o644 },
  );
});

afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('mcp serve and secret values', () => {
  it('a local tool called over MCP hands its hooks the arguments with the stored secret value withheld', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, '--home', home, 'mcp', 'serve', '--allow', 'tool(echo)'],
      cwd: proj,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'sdk', version: '1' }, { capabilities: {} });
    await client.connect(transport);
    try {
      const r = await client.callTool({ name: 'echo', arguments: { message: `x ${SECRET} y` } });
      expect(r.isError).toBeFalsy();
    } finally {
      await client.close();
    }
    const seen = await readFile(join(tmp, 'hook-input.json'), 'utf8');
    expect(seen).toContain('<withheld>');
    expect(seen).not.toContain(SECRET);
  });
});
