// Benchmark: the team gateway's calls/s through one and two `tycli serve --http` instances on one PostgreSQL store
// against one instance on the file store, and PostgreSQL's share of a warm call (its statement time per call); test
// side.
import { rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { pairRatio, spread, summary } from './stats.mjs';

const round = (x, d = 3) => Math.round(x * 10 ** d) / 10 ** d;
const range = (a, b, d = 2) => {
  const r = pairRatio(a, b);
  return `${round(r.p25, d)}–${round(r.p75, d)}`;
};

/** The test helpers (TypeScript, no vitest inside): the private PostgreSQL cluster and the gateway harness. */
async function helpers() {
  const { tsImport } = await import('tsx/esm/api');
  const pg = await tsImport('../helpers/postgres.ts', import.meta.url);
  const harness = await tsImport('../gateway/harness.ts', import.meta.url);
  const { connectHttp } = await import('../../dist/node/client.js');
  return { ...pg, ...harness, connectHttp };
}

/** `calls` tool/run calls by `concurrency` workers, worker k on `clients[k % clients.length]`; returns calls/s. */
async function batch(clients, calls, concurrency) {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, k) => {
      const c = clients[k % clients.length];
      while (next < calls) {
        const n = next++;
        const r = await c.tool.run('echo', { n });
        if (r.result?.n !== n) throw new Error(`wrong answer for ${n}: ${JSON.stringify(r)}`);
      }
    }),
  );
  return calls / ((performance.now() - t0) / 1000);
}

/** One sequential warm call, ms. */
async function once(c, n) {
  const t0 = performance.now();
  const r = await c.tool.run('echo', { n });
  if (r.result?.n !== n) throw new Error('wrong answer');
  return performance.now() - t0;
}

export async function run({ rounds = 6, callsPerRound = 240, concurrency = 8, warmCalls = 150 } = {}) {
  const h = await helpers();
  const pg = await h.startPostgres();
  const homes = [];
  const instances = [];
  const clients = [];
  const settings = { permissions: { allow: ['registry(*)', 'tool(*)'] } };
  const echo = h.tool('echo', 'return { n: a.n };', { n: { type: 'integer' } });
  try {
    const url = await pg.createDatabase('bench');
    const onPg = h.env(url);
    const admin = h.machine(settings);
    const fileHome = h.machine(settings);
    homes.push(admin, fileHome);
    const onFiles = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: fileHome };
    if ((await h.tycli(admin, ['store', 'migrate'], onPg)).code !== 0) throw new Error('store migrate failed');
    const tokenOf = async (home, e) =>
      h.jsonOf(await h.tycli(home, ['--json', 'token', 'create', '--principal', 'bench'], e)).token;
    const pgToken = await tokenOf(admin, onPg);
    const fileToken = await tokenOf(fileHome, onFiles);
    const args = ['serve', '--http', '127.0.0.1:0'];
    const F = await h.startInstance(fileHome, args, onFiles);
    instances.push(F);
    for (let i = 0; i < 2; i++) {
      const home = h.machine(settings);
      homes.push(home);
      instances.push(await h.startInstance(home, args, onPg));
    }
    const [, P1, P2] = instances;
    const cF = await h.connectHttp(F.url, fileToken, { name: 'bench' });
    const c1 = await h.connectHttp(P1.url, pgToken, { name: 'bench' });
    const c2 = await h.connectHttp(P2.url, pgToken, { name: 'bench' });
    clients.push(cF, c1, c2);
    await cF.tool.add(echo);
    await c1.tool.add(echo);
    for (let i = 0; i < 30; i++) for (const c of clients) await once(c, i);

    // throughput: rounds interleaved (file, one PostgreSQL instance, two), so machine load affects each alike
    const file = [];
    const one = [];
    const two = [];
    for (let r = 0; r < rounds; r++) {
      file.push(await batch([cF], callsPerRound, concurrency));
      one.push(await batch([c1], callsPerRound, concurrency));
      two.push(await batch([c1, c2], callsPerRound, concurrency));
    }
    const sF = summary(file);
    const s1 = summary(one);
    const s2 = summary(two);
    const rows = [
      {
        name: `calls/s, 1 instance on PostgreSQL (${concurrency} concurrent clients)`,
        value: round(s1.median, 1),
        unit: 'calls/s',
        spread: spread(s1, sF, 1),
        baseline: '1 instance on the file store',
        baselineValue: round(sF.median, 1),
        ratio: round(s1.median / sF.median, 2),
        ratioSpread: range(one, file),
      },
      {
        name: `calls/s, 2 instances on one PostgreSQL (${concurrency} concurrent clients spread over both)`,
        value: round(s2.median, 1),
        unit: 'calls/s',
        spread: spread(s2, sF, 1),
        baseline: '1 instance on the file store',
        baselineValue: round(sF.median, 1),
        ratio: round(s2.median / sF.median, 2),
        ratioSpread: range(two, file),
      },
    ];

    // a warm call, sequential, file store and PostgreSQL interleaved call by call
    const lf = [];
    const lp = [];
    for (let i = 0; i < warmCalls; i++) {
      lf.push(await once(cF, i));
      lp.push(await once(c1, i));
    }
    const wf = summary(lf);
    const wp = summary(lp);
    rows.push({
      name: 'a warm tool/run over HTTP, one instance on PostgreSQL',
      value: round(wp.median),
      unit: 'ms',
      spread: spread(wp, wf),
      baseline: 'the same call, one instance on the file store',
      baselineValue: round(wf.median),
      ratio: round(wp.median / wf.median, 2),
      ratioSpread: range(lp, lf),
    });

    // PostgreSQL's share of a warm call: statement time in the database (pg_stat_database.active_time, flushed by
    // idle backends within 10 s) over the calls' wall time seen by the client, for calls on P1 alone
    const activeMs = () => Number(pg.psql("SELECT active_time FROM pg_stat_database WHERE datname = 'bench'"));
    await sleep(11_000);
    const before = activeMs();
    const lone = [];
    for (let i = 0; i < warmCalls; i++) lone.push(await once(c1, i));
    await sleep(11_000);
    const dbMs = (activeMs() - before) / warmCalls;
    const wall = summary(lone);
    const meanWall = lone.reduce((a, b) => a + b, 0) / lone.length;
    rows.push({
      name: 'PostgreSQL statement time per warm call (mean, server side)',
      value: round(dbMs),
      unit: 'ms',
      spread: '',
      baseline: 'the warm call’s wall time at the client (mean)',
      baselineValue: round(meanWall),
      ratio: round(dbMs / meanWall, 2),
      ratioSpread: '',
    });
    return {
      title:
        'Team gateway: calls/s on PostgreSQL (1 and 2 instances) vs the file store, and PostgreSQL’s share of a call',
      rows,
      notes: [
        `each instance a \`tycli serve --http\` process with its own home; clients use the typed HTTP client with a ` +
          `per-client token; ${rounds} rounds of ${callsPerRound} tool/run calls per configuration, interleaved ` +
          '(file store, 1 PostgreSQL instance, 2), ratios paired round by round',
        "two instances share this machine's cores with the database and the client: the 2-instance figure shows the store does not serialise instances, not what two machines give",
        `PostgreSQL share: pg_stat_database.active_time over ${warmCalls} sequential calls on one instance (every ` +
          'statement of that instance and of the idle second one, including its LISTEN session), divided by the ' +
          `calls' summed wall time at the client; the warm call median was ${round(wall.median)} ms`,
        'PostgreSQL 15 from Debian, a private cluster on loopback (fsync and synchronous_commit on), started and stopped by the benchmark',
      ],
    };
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
    await Promise.all(instances.map((i) => i.stop()));
    await pg.stop();
    for (const home of homes) rmSync(home, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await run({ rounds: Number(process.env.ROUNDS ?? 6) });
  console.log(JSON.stringify(r, null, 2));
}
