// Shared MCP servers: one server for every session via a hub on a 0600 Unix socket, answers only to their asker, idle
// stop; test side.
import { stat, readdir } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { FIXTURE, PairTransport, ROOT, addNodeServer, groupAlive, tempHome } from './helpers.js';
import { McpBridge } from '../../node/mcp/bridge.js';
import { serveStream } from '../../node/mcp/serve.js';
import { hubPaths, type HubLauncher } from '../../node/mcp/hub.js';
import { definitionsDir, loadDefinition } from '../../node/mcp/definitions.js';

let home: string;
let cleanup: () => Promise<void>;
const ends: (() => Promise<void>)[] = [];
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
});
afterEach(async () => {
  for (const e of ends.splice(0).reverse()) await e();
  await cleanup();
});

// the hub runs in /: the tsx loader is named by absolute URL
const TSX = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
const launcher =
  (idleMs: number): HubLauncher =>
  (def) => ({
    command: process.execPath,
    args: [
      '--import',
      TSX,
      join(ROOT, 'test/mcp/cli-entry.ts'),
      '--home',
      home,
      'mcp',
      'hub',
      def.name,
      '--idle-ms',
      String(idleMs),
    ],
  });

async function session(b: McpBridge): Promise<Client> {
  const toServer = new PassThrough();
  const fromServer = new PassThrough();
  const done = serveStream(b, toServer, fromServer);
  const client = new Client({ name: 't', version: '1' }, { capabilities: {} });
  await client.connect(new PairTransport(toServer, fromServer));
  ends.push(async () => {
    await client.close().catch(() => undefined);
    toServer.end();
    await done;
  });
  return client;
}
const textOf = (r: unknown): string => (r as { content: { text: string }[] }).content[0]!.text;

async function waitFor(cond: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  for (let i = 0; i < ms / 25; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('condition not met');
}

describe('shared MCP servers (--shared)', () => {
  it('one server for every session; each answer reaches only its asker; 0600 socket keyed without the token; idle hub kills its server', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none', shared: true, env: { FX_TOKEN: 'token-value-123' } });
    const b1 = new McpBridge({ home, sandbox: 'one', hubLauncher: launcher(500) });
    const b2 = new McpBridge({ home, sandbox: 'two', hubLauncher: launcher(500) });
    ends.push(
      () => b1.close(),
      () => b2.close(),
    );
    const [c1, c2, c3] = [await session(b1), await session(b1), await session(b2)];
    const infos = await Promise.all(
      [c1, c2, c3].map(
        async (c) => JSON.parse(textOf(await c.callTool({ name: 'fx__received', arguments: {} }))) as { pgid: number },
      ),
    );
    expect(new Set(infos.map((i) => i.pgid)).size).toBe(1);
    const pgid = infos[0]!.pgid;
    // concurrent calls from every session: each gets its own answer
    const calls = [c1, c2, c3].flatMap((c, ci) =>
      Array.from({ length: 15 }, (_, k) =>
        c.callTool({ name: 'fx__search', arguments: { q: `s${ci}-${k}` } }).then((r) => [`s${ci}-${k}`, textOf(r)]),
      ),
    );
    for (const [q, t] of await Promise.all(calls)) expect(t).toBe(`found ${q}`);
    const def = (await loadDefinition(home, 'fx'))!;
    const { socket } = await hubPaths(home, def);
    expect((await stat(socket)).mode & 0o777).toBe(0o600);
    const names = (await readdir(definitionsDir(home))).join(' ');
    expect(names).not.toContain('token-value-123');
    expect((await stat(join(definitionsDir(home), '.key'))).mode & 0o777).toBe(0o600);
    // every session ends: the hub goes idle, stops, and its server's group is gone
    for (const e of ends.splice(0).reverse()) await e();
    await waitFor(() => !groupAlive(pgid));
    await waitFor(
      async () =>
        !(await stat(socket).then(
          () => true,
          () => false,
        )),
    );
  }, 30_000);

  it('a session that stops reading is ended at 64 unread answers (or 1 MiB kept); others go on', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none', shared: true });
    const b = new McpBridge({ home, sandbox: 'one', hubLauncher: launcher(500) });
    ends.push(() => b.close());
    const good = await session(b);
    await good.callTool({ name: 'fx__received', arguments: {} }); // starts the hub
    const { socket: path } = await hubPaths(home, (await loadDefinition(home, 'fx'))!);
    const raw = createConnection(path);
    await new Promise((r) => raw.once('connect', r));
    raw.pause();
    let closed = false;
    raw.once('close', () => (closed = true));
    const init = {
      jsonrpc: '2.0',
      id: 'i',
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    };
    raw.write(JSON.stringify(init) + '\n');
    for (let i = 0; i < 200; i++)
      raw.write(
        JSON.stringify({
          jsonrpc: '2.0',
          id: i,
          method: 'tools/call',
          params: { name: 'big', arguments: { n: 65536 } },
        }) + '\n',
      );
    // the other session is not held up
    expect(textOf(await good.callTool({ name: 'fx__search', arguments: { q: 'still' } }))).toBe('found still');
    // read what the slow session got: it was ended before all 200 answers
    let lines = 0;
    raw.on('data', (c: Buffer) => (lines += c.toString().split('\n').length - 1));
    raw.resume();
    // The hub ends the session once 64 answers sit unread; on a loaded machine producing them takes a while:
    // wait for the close itself, with a generous bound.
    await waitFor(() => closed, 90_000);
    expect(lines).toBeLessThan(201);
    raw.destroy();
  }, 180_000);
});
