// profiling driver: only bridged calls
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
const ROOT = '/work/main';
const EVERYTHING = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const { tsImport } = await import('tsx/esm/api');
const m = {
  ...(await tsImport(ROOT + '/node/mcp/bridge.ts', import.meta.url)),
  ...(await tsImport(ROOT + '/node/mcp/serve.ts', import.meta.url)),
  ...(await tsImport(ROOT + '/node/mcp/definitions.ts', import.meta.url)),
};
class PairTransport {
  constructor(a, b) {
    this.toServer = a;
    this.fromServer = b;
    this.buf = '';
  }
  async start() {
    this.fromServer.on('data', (c) => {
      this.buf += c.toString('utf8');
      let i;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const l = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        this.onmessage?.(JSON.parse(l));
      }
    });
  }
  async send(m) {
    this.toServer.write(JSON.stringify(m) + '\n');
  }
  async close() {
    this.toServer.end();
    this.onclose?.();
  }
}
const home = await mkdtemp(join(tmpdir(), 'tymcp-prof-'));
await m.saveDefinition(
  home,
  m.buildDefinition({
    name: 'everything',
    command: [process.execPath, EVERYTHING, 'stdio'],
    folder: ROOT,
    processEnv: process.env,
    allow: ['echo'],
  }),
);
const bridge = new m.McpBridge({ home, sandbox: 'bench' });
const toServer = new PassThrough(),
  fromServer = new PassThrough();
const done = m.serveStream(bridge, toServer, fromServer);
const c = new Client({ name: 'b', version: '1' }, { capabilities: {} });
await c.connect(new PairTransport(toServer, fromServer));
const N = +(process.env.N ?? 3000);
for (let i = 0; i < 100; i++) await c.callTool({ name: 'everything__echo', arguments: { message: 'm' + i } });
const t0 = performance.now();
for (let i = 0; i < N; i++) await c.callTool({ name: 'everything__echo', arguments: { message: 'm' + i } });
console.log('per call ms', (performance.now() - t0) / N);
await c.close();
toServer.end();
await done;
await bridge.close();
await rm(home, { recursive: true, force: true });
