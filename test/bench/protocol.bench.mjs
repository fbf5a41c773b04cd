// Benchmark: a tool/run round trip over `tycli serve` (stdio) vs the same call through the library (createNodeHost +
// invoker) and vs `tycli run`; test side.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { summary, spread, pairRatio } from './stats.mjs';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const BIN = join(ROOT, 'bin', 'tycli.mjs');
const round = (x, d = 3) => Math.round(x * 10 ** d) / 10 ** d;

const MANIFEST = {
  name: 'double',
  description: 'doubles x',
  parameters: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'], additionalProperties: false },
  execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async (a) => a.x * 2;' },
};

async function load() {
  const host = await import('../../dist/node/host/host.js');
  const client = await import('../../dist/node/client.js');
  return { ...host, ...client };
}

/** One `tycli run` process per call (what a program without the protocol pays), ms. */
function tycliRun(home, env) {
  return new Promise((res, rej) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [BIN, '--home', home, '--json', 'run', 'double', '--args', '{"x":21}'], {
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.once('error', rej);
    child.once('exit', (code) => {
      if (code !== 0 || !out.includes('"result":42')) return rej(new Error(`tycli run failed (${code}): ${out}`));
      res(performance.now() - t0);
    });
  });
}

export async function run({ warmCalls = 300, coldRuns = 15 } = {}) {
  const mod = await load();
  const home = await mkdtemp(join(tmpdir(), 'ty-bench-proto-'));
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    ...(process.env.NODE_EXTRA_CA_CERTS ? { NODE_EXTRA_CA_CERTS: process.env.NODE_EXTRA_CA_CERTS } : {}),
  };
  const notes = [
    'one retained sandbox per path, same home and settings (OS sandbox posture auto); warm calls interleaved call by call after 30 warm-up calls each, so machine load affects both alike',
    'library: createNodeHost(...).invoker.invoke in this process; protocol: the typed client over ' +
      '`tycli serve` stdio (NDJSON, the gate and audit per call on both paths); `tycli run`: a new ' +
      'process per call (start, host assembly, sandbox start, call)',
  ];
  const rows = [];
  const lib = await mod.createNodeHost({ home, env, cwd: home, python: false });
  let client;
  try {
    await lib.registry.install(MANIFEST);
    client = await mod.connectStdio([process.execPath, BIN, '--home', home, 'serve'], {
      env,
      cwd: home,
      name: 'bench',
    });
    const viaLib = async () => {
      const t0 = performance.now();
      const r = await lib.invoker.invoke('double', { x: 21 });
      if (!r.ok || r.result !== 42) throw new Error(`library call failed: ${JSON.stringify(r)}`);
      return performance.now() - t0;
    };
    const viaProto = async () => {
      const t0 = performance.now();
      const r = await client.tool.run('double', { x: 21 });
      if (r.result !== 42) throw new Error('protocol call failed');
      return performance.now() - t0;
    };
    for (let i = 0; i < 30; i++) {
      await viaLib();
      await viaProto();
    }
    const a = [];
    const b = [];
    for (let i = 0; i < warmCalls; i++) {
      b.push(await viaLib());
      a.push(await viaProto());
    }
    const proto = summary(a);
    const library = summary(b);
    rows.push({
      name: 'tool/run round trip over tycli serve (stdio), warm',
      value: round(proto.median),
      unit: 'ms',
      spread: spread(proto, library),
      baseline: 'the same call through the library (invoker.invoke)',
      baselineValue: round(library.median),
      ratio: round(proto.median / library.median, 2),
      ratioSpread: `${round(pairRatio(a, b).p25, 2)}–${round(pairRatio(a, b).p75, 2)}`,
      target: '<= 2x',
    });
    const cold = [];
    const protoAgain = [];
    for (let i = 0; i < coldRuns; i++) {
      cold.push(await tycliRun(home, env));
      protoAgain.push(await viaProto());
    }
    const c = summary(cold);
    const p2 = summary(protoAgain);
    rows.push({
      name: '`tycli run` of the same tool (one process per call)',
      value: round(c.median, 1),
      unit: 'ms',
      spread: spread(c, p2, 1),
      baseline: 'tool/run over tycli serve (stdio), warm',
      baselineValue: round(p2.median),
      ratio: round(c.median / p2.median, 1),
      ratioSpread: `${round(pairRatio(cold, protoAgain).p25, 1)}–${round(pairRatio(cold, protoAgain).p75, 1)}`,
    });
  } finally {
    await client?.close();
    await lib.close();
    await rm(home, { recursive: true, force: true });
  }
  return { title: 'Registration protocol: tool/run over stdio vs the library and tycli run', rows, notes };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await run();
  console.log(JSON.stringify(r, null, 2));
}
