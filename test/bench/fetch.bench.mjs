// Benchmark: mediated fetch (core pipeline + Node transport) vs a direct undici request to the same local HTTPS server;
// test side.
import { createServer } from 'node:https';
import { performance } from 'node:perf_hooks';
import selfsigned from 'selfsigned';
import { Agent, request } from 'undici';

const HOST = 'fetch-bench.example';

/** Load the compiled modules (npm run build); fall back to the TypeScript sources through tsx. */
async function load() {
  try {
    if (process.env.TY_BENCH_SOURCES) throw new Error('sources requested');
    const mediated = await import('../../dist/core/capabilities/fetch/mediated.js');
    const node = await import('../../dist/node/fetch.js');
    return { ...mediated, ...node, from: 'dist' };
  } catch {
    const { tsImport } = await import('tsx/esm/api');
    const mediated = await tsImport('../../core/fetch/mediated.ts', import.meta.url);
    const node = await tsImport('../../node/fetch.ts', import.meta.url);
    return { ...mediated, ...node, from: 'sources (tsx)' };
  }
}

async function startServer() {
  const pems = await selfsigned.generate([{ name: 'commonName', value: HOST }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: HOST },
          { type: 7, ip: '127.0.0.1' },
        ],
      },
    ],
  });
  const body = Buffer.from(JSON.stringify({ ok: true, items: [1, 2, 3], text: 'small response' }));
  const server = createServer({ key: pems.private, cert: pems.cert }, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: server.address().port, ca: pems.cert };
}

async function timeEach(n, fn) {
  const samples = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)];
}

/** @returns {Promise<{title: string, rows: object[], notes: string}>} */
export async function run({ iterations = 800, warmup = 50 } = {}) {
  const mod = await load();
  const { server, port, ca } = await startServer();
  const transport = new mod.NodeFetchTransport({
    ca,
    unsafeTestHooks: { resolve: async () => ['127.0.0.1'], allowAddresses: ['127.0.0.1'] },
  });
  const gate = {
    async authorize() {},
    async run() {
      throw new Error('unused');
    },
  };
  const mf = mod.createMediatedFetch({ gate, transport });
  const identity = {
    name: 'bench',
    revision: 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy',
    principal: 'bench',
    manifest: {
      name: 'bench',
      description: '',
      parameters: {},
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'x' },
      capabilities: { fetch: [{ origin: `https://${HOST}:${port}`, access: 'read' }] },
    },
  };
  const signal = new AbortController().signal;
  const direct = new Agent({ connect: { ca, servername: HOST } });
  const mediatedOnce = async () => {
    const r = await mf(identity, { url: `https://${HOST}:${port}/small` }, signal);
    if (r.status !== 200) throw new Error(`status ${r.status}`);
  };
  const directOnce = async () => {
    const r = await request(`https://127.0.0.1:${port}/small`, { dispatcher: direct });
    await r.body.arrayBuffer();
    if (r.statusCode !== 200) throw new Error(`status ${r.statusCode}`);
  };
  try {
    await timeEach(warmup, mediatedOnce);
    await timeEach(warmup, directOnce);
    // Interleaved rounds (alternating order) to even out drift on a shared machine; median of round medians.
    const rounds = 8;
    const per = Math.max(10, Math.floor(iterations / rounds));
    const ms = [];
    const ds = [];
    for (let r = 0; r < rounds; r++) {
      if (r % 2 === 0) {
        ms.push(await timeEach(per, mediatedOnce));
        ds.push(await timeEach(per, directOnce));
      } else {
        ds.push(await timeEach(per, directOnce));
        ms.push(await timeEach(per, mediatedOnce));
      }
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const value = median(ms);
    const baselineValue = median(ds);
    const ratios = ms.map((m, i) => m / ds[i]).sort((a, b) => a - b);
    const q = (p) => ratios[Math.min(ratios.length - 1, Math.max(0, Math.round((ratios.length - 1) * p)))];
    return {
      title: 'Mediated fetch',
      rows: [
        {
          name: 'mediated fetch, small response (median per request)',
          value: Number(value.toFixed(3)),
          unit: 'ms',
          baseline: 'direct undici request, same server, keep-alive',
          baselineValue: Number(baselineValue.toFixed(3)),
          ratio: Number((value / baselineValue).toFixed(2)),
          ratioSpread: `${q(0.25).toFixed(2)}–${q(0.75).toFixed(2)}`,
          target: '<= 1.3x',
        },
      ],
      notes:
        `${rounds} interleaved rounds of ${per} sequential GETs each (after ${warmup} warm-up), median ` +
        `of round medians (ratio p25–p75 over the per-round ratios), local HTTPS server on 127.0.0.1 ` +
        `with a throwaway certificate; the mediated path includes request validation, the target policy, ` +
        `the manifest bound, a no-op gate, header checks and base64 body encoding; modules from ${mod.from}.`,
    };
  } finally {
    await transport.close();
    await direct.destroy();
    await new Promise((r) => server.close(r));
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await run(), null, 2));
}
