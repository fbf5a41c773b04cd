// The MCP Inspector CLI (@modelcontextprotocol/inspector, on Node 22) against `tycli mcp proxy` over stdio and HTTP;
// test side.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CONFORMANCE_DIR,
  NODE22,
  ROOT,
  addNodeServer,
  ensureConformanceFolder,
  startHttpProxy,
  tempHome,
} from './helpers.js';

const INSPECTOR = join(CONFORMANCE_DIR, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
let home: string;
let cleanup: () => Promise<void>;
let proxy: ChildProcess | undefined;
beforeAll(async () => {
  ensureConformanceFolder();
  ({ home, cleanup } = await tempHome());
  await addNodeServer(home, 'sdk', join(ROOT, 'test/mcp/peers/sdk-server.mjs'), [], { allow: ['test_simple_text'] });
}, 600_000);
afterAll(async () => {
  if (proxy && proxy.exitCode === null) {
    const gone = new Promise((r) => proxy!.once('exit', r));
    proxy.kill('SIGTERM');
    await gone;
  }
  await cleanup();
});

/** One Inspector CLI run; its catalog file kept in the test's home. */
function inspector(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const p = spawn(NODE22, [INSPECTOR, '--cli', ...args], {
      cwd: ROOT,
      env: { ...process.env, MCP_CATALOG_PATH: join(home, 'inspector-catalog.json') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    p.stdout.on('data', (c) => (out += String(c)));
    p.stderr.on('data', (c) => (out += String(c)));
    p.once('exit', (code) => resolve({ code, out }));
  });
}

describe('the MCP Inspector CLI', () => {
  it('lists and calls through tycli mcp proxy over stdio; a call no rule allows is refused by the gate', async () => {
    const cmd = [
      process.execPath,
      '--import',
      'tsx',
      join(ROOT, 'test/mcp/cli-entry.ts'),
      '--home',
      home,
      'mcp',
      'proxy',
      'sdk',
    ];
    const list = await inspector([...cmd, '--method', 'tools/list']);
    expect(list.code, list.out).toBe(0);
    expect((JSON.parse(list.out) as { tools: { name: string }[] }).tools.map((t) => t.name)).toContain(
      'test_simple_text',
    );
    const call = await inspector([...cmd, '--method', 'tools/call', '--tool-name', 'test_simple_text']);
    expect(call.code, call.out).toBe(0);
    expect(call.out).toContain('This is a simple text response for testing.');
    const refused = await inspector([...cmd, '--method', 'tools/call', '--tool-name', 'test_image_content']);
    expect(refused.out).toMatch(/approval|no-channel/);
    expect(refused.out).not.toContain('iVBOR');
  }, 120_000);

  it('over streamable HTTP with the bearer token as a header', async () => {
    const p = await startHttpProxy(home, 'sdk');
    proxy = p.proc;
    // resources/read is not allowed by a rule here: refused by the gate, the content never shown
    const r = await inspector([
      p.url,
      '--transport',
      'http',
      '--header',
      `Authorization: Bearer ${p.token}`,
      '--method',
      'resources/read',
      '--uri',
      'test://template/9/data',
    ]);
    expect(r.code).not.toBe(0);
    expect(r.out).toMatch(/approval, but nobody could be asked/);
    // inside the inspector's JSON
    expect(r.out).toContain('reading resource \\"test://template/9/data\\" of MCP server \\"sdk\\" needs');
    expect(r.out).not.toContain('mcp:sdk:');
    expect(r.out).not.toContain('Data for ID');
    // the rule that would allow it is named; no command-line advice reaches an MCP client
    expect(r.out).toContain('the rule that allows it without asking: mcp-resource(sdk/test://template/9/data)');
    expect(r.out).toContain('a person can add that rule under permissions.allow in settings');
    expect(r.out.split('mcp-resource(sdk/test://template/9/data)').length - 1).toBe(1);
    expect(r.out).not.toMatch(/tycli |--allow/);
    const listed = await inspector([
      p.url,
      '--transport',
      'http',
      '--header',
      `Authorization: Bearer ${p.token}`,
      '--method',
      'prompts/list',
    ]);
    expect(listed.code, listed.out).toBe(0);
    expect(listed.out).toContain('test_prompt_with_arguments');
    const noToken = await inspector([p.url, '--transport', 'http', '--method', 'tools/list']);
    expect(noToken.code).not.toBe(0);
  }, 120_000);
});
