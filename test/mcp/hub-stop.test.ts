// `tycli mcp hub` (the built command line) stops within a second of SIGTERM: the waiting session is told, the shared
// server's process group stopped, the socket and lock removed; test side (needs `npm run build`).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { FIXTURE, PairTransport, ROOT, addNodeServer, groupAlive, tempHome } from './helpers.js';
import { McpBridge } from '../../node/mcp/bridge.js';
import { serveStream } from '../../node/mcp/serve.js';
import { hubPaths } from '../../node/mcp/hub.js';
import { loadDefinition } from '../../node/mcp/definitions.js';

const TYCLI = join(ROOT, 'bin/tycli.mjs');
/** The bound on SIGTERM -> exit: the hub aims at well under a second; this leaves room for a loaded machine. */
const GENEROUS_MS = 3000;

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

async function waitFor(cond: () => boolean, ms = 20_000): Promise<void> {
  for (let i = 0; i < ms / 20; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('condition not met');
}

describe.skipIf(!existsSync(join(ROOT, 'dist/cli/tycli.cjs')))('tycli mcp hub and SIGTERM', () => {
  it('exits within a second of SIGTERM: the waiting call answered E_MCP_ENDED (-32014), the server gone, files removed, exit 143', async () => {
    await addNodeServer(home, 'fx', FIXTURE, [], { ask: 'none', shared: true });
    const def = (await loadDefinition(home, 'fx'))!;
    const { socket, lock } = await hubPaths(home, def);
    // the hub, started as the bridge would start it (its own process, the built command line)
    const hub: ChildProcess = spawn(process.execPath, [TYCLI, '--home', home, 'mcp', 'hub', 'fx'], {
      cwd: '/',
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    hub.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<{ code: number | null; at: number }>((r) =>
      hub.once('exit', (code) => r({ code, at: performance.now() })),
    );
    ends.push(async () => {
      if (hub.exitCode === null) hub.kill('SIGKILL');
    });
    await waitFor(() => existsSync(socket));
    // a client session through the bridge, which connects to that hub
    const bridge = new McpBridge({
      home,
      sandbox: 'hubstop',
      hubLauncher: () => ({ command: '/bin/false', args: [] }),
    });
    const toServer = new PassThrough();
    const fromServer = new PassThrough();
    const done = serveStream(bridge, toServer, fromServer);
    const client = new Client({ name: 't', version: '1' }, { capabilities: {} });
    await client.connect(new PairTransport(toServer, fromServer));
    ends.push(async () => {
      await client.close().catch(() => undefined);
      toServer.end();
      await done;
      await bridge.close();
    });
    const info = JSON.parse(
      ((await client.callTool({ name: 'fx__received', arguments: {} })).content as { text: string }[])[0]!.text,
    ) as { pgid: number };
    expect(groupAlive(info.pgid)).toBe(true);
    // a call the server will not answer for a minute: it is waiting when the hub is told to stop
    const waiting = client.callTool({ name: 'fx__slow', arguments: { ms: 60_000 } }, undefined, { timeout: 90_000 });
    const outcome = waiting.then(
      () => 'answered',
      (e: unknown) => e,
    );
    await new Promise((r) => setTimeout(r, 200));
    const t0 = performance.now();
    hub.kill('SIGTERM');
    const { code, at } = await exited;
    const took = at - t0;
    console.log(`tycli mcp hub: SIGTERM -> exit in ${Math.round(took)} ms`);
    expect(code, stderr).toBe(143);
    expect(took).toBeLessThan(GENEROUS_MS);
    // the session was told: its waiting call got an answer, not a hang
    const e = (await outcome) as McpError;
    expect(e).toBeInstanceOf(McpError);
    expect([e.code, (e.data as { code?: string }).code]).toEqual([-32014, 'E_MCP_ENDED']);
    // the server's whole process group is gone, and the hub left no socket or lock
    await waitFor(() => !groupAlive(info.pgid), 5000);
    expect(existsSync(socket)).toBe(false);
    expect(existsSync(lock)).toBe(false);
  }, 60_000);
});
