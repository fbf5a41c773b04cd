// Benchmark: tools/call through the MCP bridge vs a direct SDK client to the same server-everything over stdio; test side.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const EVERYTHING = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const N = 200;
const CONCURRENT = 16;

/** Load the compiled modules (npm run build); fall back to the TypeScript sources through tsx. */
async function load() {
  try {
    if (process.env.TY_BENCH_SOURCES) throw new Error('sources requested');
    const bridge = await import('../../dist/node/mcp/bridge.js');
    const serve = await import('../../dist/node/mcp/serve.js');
    const defs = await import('../../dist/node/mcp/definitions.js');
    return { ...bridge, ...serve, ...defs, from: 'dist' };
  } catch {
    const { tsImport } = await import('tsx/esm/api');
    const bridge = await tsImport('../../node/mcp/bridge.ts', import.meta.url);
    const serve = await tsImport('../../node/mcp/serve.ts', import.meta.url);
    const defs = await tsImport('../../node/mcp/definitions.ts', import.meta.url);
    return { ...bridge, ...serve, ...defs, from: 'sources (tsx)' };
  }
}

/** A client-side SDK Transport over a PassThrough pair. */
class PairTransport {
  constructor(toServer, fromServer) {
    this.toServer = toServer;
    this.fromServer = fromServer;
    this.buf = '';
  }
  async start() {
    this.fromServer.on('data', (c) => {
      this.buf += c.toString('utf8');
      let i;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        this.onmessage?.(JSON.parse(line));
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

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Sequential latency, interleaved (direct, bridged, direct, ...) so both paths see the same machine load. */
async function latencies(direct, bridged) {
  for (let i = 0; i < 20; i++) {
    await direct(i);
    await bridged(i);
  }
  const d = [];
  const b = [];
  for (let i = 0; i < N; i++) {
    let t = performance.now();
    await direct(i);
    d.push(performance.now() - t);
    t = performance.now();
    await bridged(i);
    b.push(performance.now() - t);
  }
  return { direct: median(d), bridged: median(b) };
}

/** Calls per second with CONCURRENT callers, in alternating rounds; the best round of each path counts. */
async function throughput(direct, bridged) {
  const round = async (call) => {
    const t0 = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: CONCURRENT }, async () => {
      while (next < N) await call(next++);
    }));
    return N / ((performance.now() - t0) / 1000);
  };
  let d = 0;
  let b = 0;
  for (let r = 0; r < 3; r++) {
    d = Math.max(d, await round(direct));
    b = Math.max(b, await round(bridged));
  }
  return { direct: d, bridged: b };
}

export async function run() {
  const m = await load();
  const home = await mkdtemp(join(tmpdir(), 'tymcp-bench-'));
  const direct = new Client({ name: 'bench-direct', version: '1' }, { capabilities: {} });
  let bridged;
  let bridge;
  let toServer;
  let done;
  try {
    await direct.connect(new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio'], stderr: 'ignore' }));
    await m.saveDefinition(home, m.buildDefinition({ name: 'everything', command: [process.execPath, EVERYTHING, 'stdio'], folder: ROOT, processEnv: process.env, allow: ['echo'] }));
    bridge = new m.McpBridge({ home, sandbox: 'bench' });
    toServer = new PassThrough();
    const fromServer = new PassThrough();
    done = m.serveStream(bridge, toServer, fromServer);
    bridged = new Client({ name: 'bench-bridged', version: '1' }, { capabilities: {} });
    await bridged.connect(new PairTransport(toServer, fromServer));
    const callDirect = (i) => direct.callTool({ name: 'echo', arguments: { message: `m${i}` } });
    const callBridged = (i) => bridged.callTool({ name: 'everything__echo', arguments: { message: `m${i}` } });
    const lat = await latencies(callDirect, callBridged);
    const thr = await throughput(callDirect, callBridged);
    const d = { latencyMs: lat.direct, perSec: thr.direct };
    const b = { latencyMs: lat.bridged, perSec: thr.bridged };

    const latRatio = b.latencyMs / d.latencyMs;
    const thrRatio = d.perSec / b.perSec;
    return {
      title: 'MCP bridge: tools/call (server-everything echo over stdio)',
      rows: [
        { name: 'tools/call latency (median, sequential)', value: +b.latencyMs.toFixed(3), unit: 'ms', baseline: 'direct SDK client', baselineValue: +d.latencyMs.toFixed(3), ratio: +latRatio.toFixed(2), target: '<= 1.3x' },
        { name: `tools/call throughput (${CONCURRENT} concurrent)`, value: +b.perSec.toFixed(1), unit: 'calls/s', baseline: 'direct SDK client', baselineValue: +d.perSec.toFixed(1), ratio: +thrRatio.toFixed(2), target: 'ratio (direct/bridged) <= 1.3' },
      ],
      notes: `Latency: median of ${N} sequential calls per path, interleaved with the direct ones after 20 warm-up calls; throughput: best of 3 alternating rounds of ${N} calls; modules from ${m.from}. The bridged path is an SDK client -> the bridge (in-process, over a stream pair with the full message rules, definition reload, argument check and rule approval per call) -> the same server process. A client of 'tycli mcp serve' adds one more stdio hop, not measured here.`,
    };
  } finally {
    await direct.close().catch(() => undefined);
    await bridged?.close().catch(() => undefined);
    toServer?.end();
    await done;
    await bridge?.close();
    await rm(home, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await run(), null, 2));
}
