// `tycli mcp proxy NAME`: one server under its own names through the gate, over stdio and HTTP, with the SDK client;
// test side.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ROOT, addNodeServer, startHttpProxy, tempHome } from './helpers.js';

const SDK_FIXTURE = join(ROOT, 'test/mcp/peers/sdk-server.mjs');
const ENTRY = join(ROOT, 'test/mcp/cli-entry.ts');
let home: string;
let cleanup: () => Promise<void>;
let child: ChildProcess | undefined;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
});
afterEach(async () => {
  if (child && child.exitCode === null) {
    const gone = new Promise((r) => child!.once('exit', r));
    child.kill('SIGTERM');
    await gone;
  }
  child = undefined;
  await cleanup();
});

const tycliArgs = (...rest: string[]) => ['--import', 'tsx', ENTRY, '--home', home, ...rest];

describe('tycli mcp proxy', () => {
  it("over stdio: the server's own names and URIs, its instructions sanitized, every call through the gate", async () => {
    await addNodeServer(home, 'sdk', SDK_FIXTURE, [], { allow: ['test_simple_text', 'resources/read'] });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: tycliArgs('mcp', 'proxy', 'sdk'),
      cwd: ROOT,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'sdk-client', version: '1' }, { capabilities: {} });
    await client.connect(transport);
    try {
      // the escape is made visible, never passed on as a control character
      expect(client.getInstructions()).toBe('Fixture server: call test_simple_text first.\\x1b[2J');
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('test_simple_text');
      expect(names.some((n) => n.includes('__'))).toBe(false);
      expect(JSON.stringify(await client.callTool({ name: 'test_simple_text', arguments: {} }))).toContain(
        'This is a simple text response',
      );
      // a tool no rule allows: asked through the gate, nobody can answer here, refused
      await expect(client.callTool({ name: 'test_image_content', arguments: {} })).rejects.toThrow(
        /approval|no-channel/,
      );
      expect((await client.listResources()).resources.map((r) => r.uri)).toContain('test://static-text');
      expect((await client.readResource({ uri: 'test://template/3/data' })).contents[0]).toMatchObject({
        uri: 'test://template/3/data',
      });
    } finally {
      await client.close();
    }
  }, 60_000);

  it('over HTTP with the bearer token; no token is 401; an undefined server is refused at start', async () => {
    await addNodeServer(home, 'sdk', SDK_FIXTURE, [], { ask: 'none' });
    const p = await startHttpProxy(home, 'sdk');
    child = p.proc;
    expect(
      (await fetch(p.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status,
    ).toBe(401);
    const client = new Client({ name: 'sdk-client', version: '1' }, { capabilities: {} });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(p.url), {
        requestInit: { headers: { authorization: `Bearer ${p.token}` } },
      }),
    );
    expect((await client.listPrompts()).prompts.map((x) => x.name)).toContain('test_simple_prompt');
    expect(JSON.stringify(await client.callTool({ name: 'test_embedded_resource', arguments: {} }))).toContain(
      'test://embedded-resource',
    );
    await client.close();
    const bad = spawn(process.execPath, tycliArgs('mcp', 'proxy', 'nope'), {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    bad.stderr!.on('data', (c) => (err += String(c)));
    const code = await new Promise((r) => bad.once('exit', r));
    expect(code).not.toBe(0);
    expect(err).toContain('E_UNKNOWN_TOOL');
  }, 60_000);
});
