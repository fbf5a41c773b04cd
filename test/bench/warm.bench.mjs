// Benchmark: the host's warm path (invoker.invoke on a retained sandbox, gate and audit included), memory per retained
// sandbox, throughput over 8 tools; test side.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { flagRows, floorRows, memoryByKind } from './runner-memory.mjs';
import { pairRatio, spread, summary } from './stats.mjs';

const round = (x, d = 3) => Number(x.toFixed(d));

async function load() {
  const [host, sandbox, runtime, append, canonical] = await Promise.all([
    import('../../dist/node/host/host.js'),
    import('../../dist/node/sandbox/runtime.js'),
    import('../../dist/core/exec/runtime.js'),
    import('../../dist/node/store/append.js'),
    import('../../dist/core/revisions/canonical.js'),
  ]);
  return { ...host, ...sandbox, ...runtime, ...append, ...canonical };
}

/** A tool that answers with a small summary of its arguments, so the result stays small whatever the input. */
const manifest = (name) => ({
  name,
  description: 'answers with the size of its arguments',
  parameters: {
    type: 'object',
    properties: { data: { type: 'string' }, k: { type: 'number' } },
    required: ['data'],
    additionalProperties: false,
  },
  execution: {
    kind: 'sandboxed-code',
    runtime: 'javascript',
    source: 'export default async (a) => ({ n: a.data.length, k: a.k ?? 0 });',
  },
});

/** The same work in a plain node child over a pipe: NDJSON line in, parse, answer `{n, k}` as one line. */
const ECHO =
  "const fs=require('node:fs');let b='';process.stdin.setEncoding('utf8');process.stdin.on('data',d=>{b+=d;let " +
  "i;while((i=b.indexOf('\\n'))>=0){const l=b.slice(0,i);b=b.slice(i+1);const m=JSON.parse(l);fs.writeSync(1,JSON.stringify({id:m.id,result:{n:m.args.data.length,k:m.args.k??0}})+'\\n');}})";

/**
 * A plain node child (empty environment) answering NDJSON calls; `call(args)` resolves with its answer line. Calls may
 * overlap (pipelined).
 */
function plainChild() {
  const c = spawn(process.execPath, ['-e', ECHO], { env: {}, stdio: ['pipe', 'pipe', 'ignore'] });
  const waiting = new Map();
  let next = 0;
  let buf = '';
  c.stdout.setEncoding('utf8');
  c.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const m = JSON.parse(line);
      const w = waiting.get(m.id);
      waiting.delete(m.id);
      w?.(m.result);
    }
  });
  return {
    pid: c.pid,
    call: (args) =>
      new Promise((r) => {
        const id = ++next;
        waiting.set(id, r);
        c.stdin.write(JSON.stringify({ v: 1, type: 'call', id, args }) + '\n');
      }),
    close: () => c.kill('SIGKILL'),
  };
}

/**
 * A node child running `script` (stdin lines in, one acknowledgement each out); `send(args)` pipes JSON.stringify(args)
 * as one line and waits for its acknowledgement.
 */
function ackChild(script) {
  const c = spawn(process.execPath, ['-e', script], { env: {}, stdio: ['pipe', 'pipe', 'ignore'] });
  let waiting;
  c.stdout.on('data', () => {
    const w = waiting;
    waiting = undefined;
    w?.();
  });
  return {
    send: (args) =>
      new Promise((r) => {
        waiting = r;
        c.stdin.write(JSON.stringify(args) + '\n');
      }),
    close: () => c.kill('SIGKILL'),
  };
}

/**
 * JSON-serialize `args` and pipe it once to a child that acknowledges each complete line: the floor of moving `args` to
 * another process.
 */
const pipeOnce = () =>
  ackChild(
    "const fs=require('node:fs');process.stdin.on('data',d=>{for(let i=d.indexOf(10);i>=0;i=d.indexOf(10,i+1))fs.writeSync(1,'k')})",
  );

/**
 * Like pipeOnce, but the child parses each line (JSON.parse of the whole line, bytes joined once) before acknowledging:
 * the floor of a call whose arguments must arrive as data.
 */
const pipeParse = () =>
  ackChild(
    "const fs=require('node:fs');let parts=[];process.stdin.on('data',d=>{let s=0,i;while((i=d.indexOf(10,s))>=0){parts.push(d.subarray(s,i));const " +
      "m=JSON.parse(Buffer.concat(parts).toString('utf8'));parts=[];fs.writeSync(1,String(m.k));s=i+1}if(s<d.length)parts.push(d.subarray(s))})",
  );

/** Pids of every descendant of `root` (from /proc/PID/stat ppid fields). */
function descendants(root) {
  const parent = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parent.set(Number(d), ppid);
    } catch {
      /* gone */
    }
  }
  const out = [];
  const want = new Set([root]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, pp] of parent) if (want.has(pp) && !want.has(pid)) want.add(pid), out.push(pid), (grew = true);
  }
  return out;
}

/** `n` calls with `width` in flight at once over `fns` (round robin); calls per second. */
async function throughput(fns, n, width) {
  let issued = 0;
  const t0 = performance.now();
  const lane = async () => {
    while (issued < n) {
      const i = issued++;
      await fns[i % fns.length](i);
    }
  };
  await Promise.all(Array.from({ length: width }, lane));
  return n / ((performance.now() - t0) / 1000);
}

/** @returns {Promise<{title: string, rows: object[], notes: string[]}>} */
export async function run({ warmCalls = 1500, bigCalls = 40, rounds = 7, throughputCalls = 3000 } = {}) {
  const mod = await load();
  const loadAtStart = os.loadavg();
  const home = await mkdtemp(join(os.tmpdir(), 'ty-bench-warm-'));
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home };
  const host = await mod.createNodeHost({ home, env, cwd: home, python: false, globals: { allow: [] } });
  // The same host path (registry, validation, gate, audit) with the sandbox replaced by an immediate in-process
  // answer: the ceiling of the host's own work, measured alongside.
  const floorHome = await mkdtemp(join(os.tmpdir(), 'ty-bench-warm-floor-'));
  const immediate = { call: async (_spec, args) => ({ n: args.data.length, k: args.k ?? 0 }) };
  const floorHost = await mod.createNodeHost({
    home: floorHome,
    env: { ...env, HOME: floorHome },
    cwd: floorHome,
    python: false,
    globals: { allow: [] },
    pool: immediate,
  });
  const rows = [];
  const notes = [];
  const kb1 = { data: 'x'.repeat(1000), k: 1 };
  const mb1 = { data: 'y'.repeat(1024 * 1024), k: 2 };
  const tools = Array.from({ length: 8 }, (_, i) => `warm${i}`);
  const plain = [];
  let once;
  let parse;
  try {
    for (const t of tools) await host.registry.install(manifest(t));
    for (const t of tools) await floorHost.registry.install(manifest(t));
    const callOn = (h) => async (name, args) => {
      const r = await h.invoker.invoke(name, args);
      if (!r.ok) throw new Error(`${name}: ${JSON.stringify(r.error)}`);
      return r.result;
    };
    const call = callOn(host);
    const callFloor = callOn(floorHost);
    const echo = plainChild();
    plain.push(echo);
    once = pipeOnce();
    parse = pipeParse();
    // warm-up: sandbox start, JIT, page cache
    for (let i = 0; i < 100; i++) {
      await call('warm0', kb1);
      await callFloor('warm0', kb1);
      await echo.call(kb1);
    }
    // The floor parts, measured alongside: the same sandbox round trip without the host (a runtime instance, no OS
    // wrapper: bubblewrap does not change a warm call, test/bench/isolation.bench.mjs) and one group-committed audit
    // line.
    const rt = new mod.NodeSandboxRuntime({ engine: 'node' });
    const m0 = manifest('floor');
    const inst = await rt.start({ revision: 'bfloor', manifest: m0, limits: { ...mod.DEFAULT_LIMITS } });
    const callOpts = {
      signal: new AbortController().signal,
      onCapability: async () => {
        throw new Error('none');
      },
      limits: { ...mod.DEFAULT_LIMITS },
    };
    const appender = new mod.GroupAppender(join(home, 'floor.log'));
    const line = JSON.stringify({
      v: 1,
      time: new Date().toISOString(),
      principal: 'cli:user',
      tool: 'warm0',
      revision: 'b'.repeat(59),
      kind: 'tool',
      decision: 'allow',
      rule: 'mode default',
      list: 'mode',
      scope: 'default',
      durationMs: 0.5,
      outcome: 'ok',
      call: 'c'.repeat(36),
    });
    for (let i = 0; i < 50; i++) await inst.call(kb1, callOpts), await appender.append(line);
    // 1 KB: host call and bare pipe round trip, paired call by call (order alternating), the floor parts in turn
    const h = [];
    const p = [];
    const sb = [];
    const fs = [];
    const hf = [];
    for (let i = 0; i < warmCalls; i++) {
      const a = async () => {
        const t0 = performance.now();
        await call('warm0', kb1);
        h.push(performance.now() - t0);
      };
      const b = async () => {
        const t0 = performance.now();
        await echo.call(kb1);
        p.push(performance.now() - t0);
      };
      if (i % 2) await a(), await b();
      else await b(), await a();
      let t0 = performance.now();
      await inst.call(kb1, callOpts);
      sb.push(performance.now() - t0);
      t0 = performance.now();
      await appender.append(line);
      fs.push(performance.now() - t0);
      t0 = performance.now();
      await callFloor('warm0', kb1);
      hf.push(performance.now() - t0);
    }
    const hs = summary(h);
    const ps = summary(p);
    const pr = pairRatio(h, p);
    rows.push({
      name: 'host warm call, 1 KB of arguments (invoker.invoke: resolve, validate, gate, audit, sandbox round trip)',
      value: round(hs.median),
      unit: 'ms',
      spread: spread(hs, ps),
      baseline: 'NDJSON round trip to a plain node child over a pipe (same 1 KB, parsed, small answer)',
      baselineValue: round(ps.median),
      ratio: round(hs.median / ps.median, 2),
      ratioSpread: `${pr.p25.toFixed(2)}–${pr.p75.toFixed(2)}`,
      target: '<= 5x',
    });

    const sbs = summary(sb);
    const fss = summary(fs);
    const floor = sbs.median + fss.median;
    rows.push({
      name: 'floor part: the same 1 KB call on a sandbox without the host (runtime instance round trip)',
      value: round(sbs.median),
      unit: 'ms',
      spread: spread(sbs, ps),
      baseline: 'NDJSON round trip to a plain node child',
      baselineValue: round(ps.median),
      ratio: round(sbs.median / ps.median, 2),
    });
    rows.push({
      name: "floor part: one audit line appended and fdatasync'd alone (the completion record, which the answer waits for)",
      value: round(fss.median),
      unit: 'ms',
      spread: spread(fss),
      baseline: 'NDJSON round trip to a plain node child',
      baselineValue: round(ps.median),
      ratio: round(fss.median / ps.median, 2),
    });
    rows.push({
      name: 'floor of a host warm call: sandbox round trip + one synced audit line (the host work itself excluded)',
      value: round(floor),
      unit: 'ms',
      baseline: 'NDJSON round trip to a plain node child',
      baselineValue: round(ps.median),
      ratio: round(floor / ps.median, 2),
    });
    const hfs = summary(hf);
    rows.push({
      name: "floor part: the host's own work, 1 KB (the same invoker.invoke path with the sandbox replaced by an immediate in-process answer; its one fsync included)",
      value: round(hfs.median),
      unit: 'ms',
      spread: spread(hfs, ps),
      baseline: 'NDJSON round trip to a plain node child',
      baselineValue: round(ps.median),
      ratio: round(hfs.median / ps.median, 2),
    });

    // 1 MB: host call vs JSON-serializing and piping 1 MB once
    for (let i = 0; i < 5; i++) await call('warm0', mb1), await once.send(mb1);
    const H = [];
    const P = [];
    for (let i = 0; i < bigCalls; i++) {
      const a = async () => {
        const t0 = performance.now();
        await call('warm0', mb1);
        H.push(performance.now() - t0);
      };
      const b = async () => {
        const t0 = performance.now();
        await once.send(mb1);
        P.push(performance.now() - t0);
      };
      if (i % 2) await a(), await b();
      else await b(), await a();
    }
    // 1 MB floor parts: the sandbox round trip alone (canonical text sent as is, as the host does) and the host's own
    // work
    // the arguments as the host hands them on: canonical text and its pieces (a long string is a piece of its own)
    const mbText = () => {
      const argsParts = mod.canonicalParts(mb1, 'E_INVALID_ARGS');
      return { argsJson: mod.joinParts(argsParts), argsParts };
    };
    for (let i = 0; i < 5; i++) await inst.call(mb1, { ...callOpts, ...mbText() }), await callFloor('warm0', mb1);
    const SB = [];
    const HF = [];
    for (let i = 0; i < bigCalls; i++) {
      let t0 = performance.now();
      await inst.call(mb1, { ...callOpts, ...mbText() });
      SB.push(performance.now() - t0);
      t0 = performance.now();
      await callFloor('warm0', mb1);
      HF.push(performance.now() - t0);
      t0 = performance.now();
      await once.send(mb1);
      P.push(performance.now() - t0);
    }
    // 1 MB that JSON must escape (text lines with quotes): escaped once by JSON.stringify, as the baseline does
    const mbEsc = {
      data: 'a "quoted" line of text, then a newline\n'.repeat(Math.ceil((1024 * 1024) / 40)).slice(0, 1024 * 1024),
      k: 2,
    };
    for (let i = 0; i < 5; i++)
      await call('warm0', mbEsc), await once.send(mbEsc), await parse.send(mbEsc), await parse.send(mb1);
    const HE = [];
    const PE = [];
    const QE = []; // the same escaped 1 MB piped to a child that parses it
    const Q = []; // the bench's 1 MB piped to a child that parses it
    for (let i = 0; i < bigCalls; i++) {
      const a = async () => {
        const t0 = performance.now();
        await call('warm0', mbEsc);
        HE.push(performance.now() - t0);
      };
      const b = async () => {
        const t0 = performance.now();
        await once.send(mbEsc);
        PE.push(performance.now() - t0);
      };
      if (i % 2) await a(), await b();
      else await b(), await a();
      let t0 = performance.now();
      await parse.send(mbEsc);
      QE.push(performance.now() - t0);
      t0 = performance.now();
      await parse.send(mb1);
      Q.push(performance.now() - t0);
    }
    await inst.destroy('bench');
    const Hs = summary(H);
    const Ps = summary(P);
    const PR = pairRatio(H, P);
    rows.push({
      name: 'host warm call, 1 MB of arguments',
      value: round(Hs.median, 2),
      unit: 'ms',
      spread: spread(Hs, Ps, 2),
      baseline: 'JSON.stringify of the same 1 MB and piping it once to a node child (acknowledged)',
      baselineValue: round(Ps.median, 2),
      ratio: round(Hs.median / Ps.median, 2),
      ratioSpread: `${PR.p25.toFixed(2)}–${PR.p75.toFixed(2)}`,
      target: '<= 1.5x',
    });
    const HEs = summary(HE);
    const PEs = summary(PE);
    const PER = pairRatio(HE, PE);
    rows.push({
      name: 'host warm call, 1 MB of arguments that JSON must escape (a string of text lines with quotes and newlines)',
      value: round(HEs.median, 2),
      unit: 'ms',
      spread: spread(HEs, PEs, 2),
      baseline: 'JSON.stringify of the same 1 MB and piping it once to a node child (acknowledged)',
      baselineValue: round(PEs.median, 2),
      ratio: round(HEs.median / PEs.median, 2),
      ratioSpread: `${PER.p25.toFixed(2)}–${PER.p75.toFixed(2)}`,
    });
    const QEs = summary(QE);
    const Qs = summary(Q);
    rows.push({
      name: 'floor, 1 MB that JSON must escape: JSON.stringify, the pipe, and JSON.parse in the child (the minimum of arguments that must arrive as data, no host, no canonicalization)',
      value: round(QEs.median, 2),
      unit: 'ms',
      spread: spread(QEs, PEs, 2),
      baseline: 'JSON.stringify of the same 1 MB and piping it once (nobody parses)',
      baselineValue: round(PEs.median, 2),
      ratio: round(QEs.median / PEs.median, 2),
    });
    const SBs = summary(SB);
    const HFs = summary(HF);
    rows.push({
      name: 'floor, 1 MB: JSON.stringify, the pipe, and JSON.parse in the child (the minimum of arguments that must arrive as data, no host, no canonicalization)',
      value: round(Qs.median, 2),
      unit: 'ms',
      spread: spread(Qs, Ps, 2),
      baseline: 'JSON.stringify of 1 MB and piping it once (nobody parses)',
      baselineValue: round(Ps.median, 2),
      ratio: round(Qs.median / Ps.median, 2),
    });
    rows.push({
      name: 'floor part, 1 MB: canonicalizing the arguments once and the sandbox round trip without the host (the text sent as is; the runner parses it once)',
      value: round(SBs.median, 2),
      unit: 'ms',
      spread: spread(SBs, Ps, 2),
      baseline: 'JSON.stringify of 1 MB and piping it once',
      baselineValue: round(Ps.median, 2),
      ratio: round(SBs.median / Ps.median, 2),
    });
    rows.push({
      name: "floor part, 1 MB: the host's own work (the invoker.invoke path with an immediate in-process answer: canonicalize, validate, gate, audit)",
      value: round(HFs.median, 2),
      unit: 'ms',
      spread: spread(HFs, Ps, 2),
      baseline: 'JSON.stringify of 1 MB and piping it once',
      baselineValue: round(Ps.median, 2),
      ratio: round(HFs.median / Ps.median, 2),
    });

    // Canonicalizing 1 MB strings of each kind against JSON.stringify of the same, both encoded to UTF-8 bytes (what
    // the write does)
    const shapes = {
      ASCII: 'y'.repeat(1024 * 1024),
      'Cyrillic (two bytes per character)': 'ж'.repeat(1024 * 1024),
      'text lines that JSON must escape': mbEsc.data,
    };
    for (const [label, str] of Object.entries(shapes)) {
      const v = { data: str, k: 2 };
      const C = [];
      const J = [];
      for (let i = 0; i < 25; i++) {
        let t0 = performance.now();
        for (const piece of mod.canonicalParts(v, 'E_INVALID_ARGS')) Buffer.byteLength(piece);
        C.push(performance.now() - t0);
        t0 = performance.now();
        Buffer.byteLength(JSON.stringify(v));
        J.push(performance.now() - t0);
      }
      const Cs = summary(C.slice(5));
      const Js = summary(J.slice(5));
      rows.push({
        name: `canonicalizing 1 MB arguments, ${label} (canonicalParts, each piece UTF-8-measured)`,
        value: round(Cs.median, 2),
        unit: 'ms',
        spread: spread(Cs, Js, 2),
        baseline: 'JSON.stringify of the same arguments, UTF-8-measured',
        baselineValue: round(Js.median, 2),
        ratio: round(Cs.median / Js.median, 2),
      });
    }

    // Throughput: 64 in flight over 8 tools vs 8 plain children, rounds interleaved
    for (let i = 1; i < 8; i++) plain.push(plainChild());
    const small = { data: 'hello', k: 3 };
    const hostFns = tools.map((t) => () => call(t, small));
    const floorFns = tools.map((t) => () => callFloor(t, small));
    const plainFns = plain.map((c) => () => c.call(small));
    await throughput(hostFns, 400, 64);
    await throughput(floorFns, 400, 64);
    await throughput(plainFns, 400, 64);
    const ht = [];
    const pt = [];
    const ft = [];
    const cpu = [];
    const fcpu = [];
    const measured = async (fns, rates, cpus) => {
      const c0 = process.cpuUsage();
      rates.push(await throughput(fns, throughputCalls, 64));
      const c = process.cpuUsage(c0);
      cpus.push((c.user + c.system) / throughputCalls / 1000); // ms of this process's CPU per call
    };
    const hostRound = () => measured(hostFns, ht, cpu);
    const floorRound = () => measured(floorFns, ft, fcpu);
    const plainRound = async () => pt.push(await throughput(plainFns, throughputCalls, 64));
    for (let r = 0; r < rounds; r++) {
      const order = [
        [plainRound, hostRound, floorRound],
        [hostRound, floorRound, plainRound],
        [floorRound, plainRound, hostRound],
      ][r % 3];
      for (const f of order) await f();
    }
    const hts = summary(ht);
    const pts = summary(pt);
    const tr = pairRatio(ht, pt);
    const cs = summary(cpu);
    rows.push({
      name: 'host process CPU per call during the throughput rounds (user + system; its inverse is the ceiling of one host thread)',
      value: round(cs.median, 3),
      unit: 'ms',
      spread: spread(cs),
      baseline: 'ceiling: calls/s one fully busy host thread could do at that cost',
      baselineValue: Math.round((1 / cs.median) * 1000),
    });
    rows.push({
      name: 'throughput, 64 concurrent calls over 8 tools (8 retained sandboxes)',
      value: Math.round(hts.median),
      unit: 'calls/s',
      spread: spread(hts, pts, 0),
      baseline: '8 plain node children, the same calls over pipes, 64 in flight',
      baselineValue: Math.round(pts.median),
      ratio: round(hts.median / pts.median, 2),
      ratioSpread: `${tr.p25.toFixed(2)}–${tr.p75.toFixed(2)}`,
      target: '>= 0.8x',
    });
    const fts = summary(ft);
    const fcs = summary(fcpu);
    const fr = pairRatio(ft, pt);
    rows.push({
      name: `floor: throughput of the host's own work (the same 64 calls over 8 tools, the sandbox replaced by an immediate in-process answer; ${round(fcs.median, 3)} ms of host CPU per call)`,
      value: Math.round(fts.median),
      unit: 'calls/s',
      spread: spread(fts, pts, 0),
      baseline: '8 plain node children, the same calls over pipes, 64 in flight',
      baselineValue: Math.round(pts.median),
      ratio: round(fts.median / pts.median, 2),
      ratioSpread: `${fr.p25.toFixed(2)}–${fr.p75.toFixed(2)}`,
    });

    // Memory: every process of the 8 sandbox trees (all descendants of this process but the plain children and the pipe
    // child)
    const plainPids = new Set([...plain.map((c) => c.pid)]);
    for (const c of plain) c.close();
    once.close();
    once = undefined;
    parse.close();
    parse = undefined;
    plain.length = 0;
    await new Promise((r) => setTimeout(r, 300));
    const sandboxPids = descendants(process.pid).filter((pid) => !plainPids.has(pid));
    const kinds = memoryByKind(sandboxPids);
    const sum = (f) => Object.values(kinds).reduce((a, k) => a + f(k), 0);
    const m = { rss: sum((k) => k.rss), pss: sum((k) => k.pss), procs: sum((k) => k.procs) };
    const bare = plainChild();
    await bare.call(small);
    const b = memoryByKind([bare.pid]).node ?? { rss: NaN, pss: NaN };
    bare.close();
    const per = m.rss / tools.length;
    const perPss = m.pss / tools.length;
    const parts = Object.entries(kinds)
      .map(
        ([k, v]) =>
          `${v.procs / tools.length} ${k} ${round(v.rss / tools.length, 1)} MiB RSS / ${round(v.pss / tools.length, 1)} PSS / ${round(v.anon / tools.length, 1)} anonymous`,
      )
      .join('; ');
    rows.push({
      name: `memory per retained sandbox, RSS (${tools.length} retained, ${m.procs / tools.length} processes each: ${parts})`,
      value: round(per, 1),
      unit: 'MiB',
      baseline: 'one plain node child after a call (same work)',
      baselineValue: round(b.rss, 1),
      ratio: round(per / b.rss, 2),
      target: '<= 30',
    });
    rows.push({
      name: 'memory per retained sandbox, PSS (shared pages split among the processes sharing them)',
      value: round(perPss, 1),
      unit: 'MiB',
      baseline: 'one plain node child after a call, PSS',
      baselineValue: round(b.pss, 1),
      ratio: round(perPss / b.pss, 2),
    });
    const runnerFlags = mod.nodeRunnerV8Flags(mod.DEFAULT_LIMITS.memoryMb);
    const wrapper = kinds.bwrap
      ? { rss: kinds.bwrap.rss / tools.length, pss: kinds.bwrap.pss / tools.length }
      : undefined;
    rows.push(...(await floorRows(runnerFlags, wrapper, { rss: per, pss: perPss })));
    // V8 flags a small runner could take: memory and CPU time of a plain node child doing a small tool's work
    rows.push(...(await flagRows(runnerFlags)));
    notes.push(
      `memory floor (floor rows): one idle node process that has loaded nothing holds about ${round(b.rss, 0)} ` +
        `MiB RSS here, most of it the node executable's code pages (about 30 MiB of /usr/bin/node mapped), ` +
        `shared by every node process: counted whole in each process's RSS, split in PSS. A retained ` +
        `sandbox is one such process plus bubblewrap's two small ones, so <= 30 MiB RSS is below the ` +
        `floor of one node process per sandbox, whatever the flags (--jitless and --lite-mode leave ` +
        `the optimizing compiler's code pages untouched, a few MiB of shared RSS, at two to three times ` +
        `the CPU). PSS is what each further sandbox really adds`,
      "the runner's V8 flags (node/sandbox/runtime.ts nodeRunnerV8Flags, chosen from the flag rows): " +
        '--max-semi-space-size=1 at the default 256 MiB heap (1/256 of the heap limit, 1-16 MiB; V8 ' +
        'lets each semi-space grow to 16 MiB and keeps it) holds the least anonymous memory after the ' +
        "work at no CPU cost beyond noise; --v8-pool-size=1 runs V8's background work (concurrent marking, " +
        'parallel scavenges, background compilation) on one platform thread instead of four: three threads ' +
        'and about 1 MiB fewer per sandbox. Rejected: --optimize-for-size (the same memory as the semi-space ' +
        'cap, more CPU), --single-threaded (all GC work on the main thread), --lite-mode and --jitless ' +
        '(see the floor note). The Deno runner takes the same semi-space cap; Python sandboxes keep ' +
        "V8's defaults",
      'bubblewrap --as-pid-1 would drop its pid-1 reaper (its RSS is in the per-kind breakdown of ' +
        'the memory row) but is not used: the kernel drops signals with a default action sent to a PID ' +
        "namespace's init, so RLIMIT_CPU's SIGXCPU at the soft limit would be ignored (the CPU limit " +
        'would kill only at the hard limit, as an unexplained SIGKILL instead of "CPU time limit reached") ' +
        'and the runner could not SIGKILL itself when its channel is closed or replaced',
      `host: createNodeHost in this process (fresh home, default settings with the tools allowed by ` +
        `mode default, OS sandbox posture auto: bubblewrap when it works here), ${tools.length} tools ` +
        `of the same small source; ${warmCalls} 1 KB calls and ${bigCalls} 1 MB calls paired with their ` +
        `baseline, alternating order; the host path includes the registry lookup, argument validation, ` +
        `the gate (rules, pause, decisions) and two durable audit records per call`,
      'where a warm call goes (per call, sequential): the sandbox round trip (two process wake-ups, ' +
        'like the pipe baseline), the registry binding, pause and permanent-decision records checked ' +
        'in the store (one stat each: a record is read again only when its stamp changed, so another ' +
        "process's changes count at once), argument canonicalization and validation, and two audit " +
        'records: the intent record is written before the sandbox runs the call, the completion record ' +
        'after the result; one group-committed fdatasync makes both durable before the answer (the intent ' +
        'record gets its own fsync only when the call takes longer than STAGED_SYNC_MS, 50 ms). That ' +
        'fsync is the floor above the round trip; the call cannot be answered before it. The "host\'s ' +
        'own work" row runs the same path with the sandbox replaced by an immediate in-process answer',
      '1 MB: the host canonicalizes the arguments once (core/revisions/canonical.ts canonicalParts: ' +
        'the text that is measured, previewed and sent) and sends that text as is inside the call message ' +
        '(no second serialization); the sandbox parses it once. A long string that JSON writes verbatim ' +
        '(no quote, backslash, control character or lone surrogate: checked with native scans: a memchr-like ' +
        'indexOf per escaped character, or one regular-expression pass for a string stored two bytes ' +
        "per character, where memchr would stop at every character whose high byte is a control character's; " +
        'several times faster than escaping it character by character as JSON.stringify does) is a piece ' +
        "of its own, the caller's string itself: the call message leaves as one corked writev of [head, " +
        'the string, tail], encoded to UTF-8 once straight from the strings, never joined into one text ' +
        '(joining a 1 MB text and flattening it for the write costs about as much as the pipe itself). ' +
        "The floor rows split the rest: the sandbox round trip alone with the same pieces, and the host's " +
        'own work without a sandbox (canonicalization, validation, gate, one fsync); the baseline serializes ' +
        'with JSON.stringify and pipes once but nobody parses',
      'throughput: calls to one retained sandbox are serialized (one in flight per sandbox, the isolation ' +
        'design), so at most 8 are in the sandboxes at once and every call costs a wake-up of a sleeping ' +
        "sandbox process on each side (its write syscall is where most of the host thread's time goes), " +
        'while the plain children get 8 pipelined lines each and read them in batches. The floor row ' +
        "is the host's own work with the sandbox replaced by an immediate answer: even with no sandbox " +
        'at all the gated, audited host path (store stats, validation, two audit records per call, group-committed ' +
        'fsyncs) stays far below 0.8x of 8 pipelined plain children on this machine, so the target is ' +
        'out of reach without pipelining calls into a sandbox',
      'host CPU profile of the throughput rounds (node --cpu-prof, samples inside the measured window): ' +
        'before the group-commit and per-call changes the host spent about 0.22 ms of CPU per call, ' +
        'its samples led by fdatasync run on the event loop (about 30%: a lone record was synced on ' +
        'the calling thread even with 63 other calls in flight), pipe writes to the sandboxes, schema ' +
        'parses of every result message and audit record, a store read of the name binding and a clear/set ' +
        'of the idle timer per call; now an fsync runs on the calling thread only when no other call ' +
        "is in flight, a short call's two audit records share one, results and common audit records " +
        'are checked field by field (only what the schemas accept), the binding is stat-checked, and ' +
        "calls without a caller's signal add no listeners. What is left on the host thread: the write " +
        "to a sleeping sandbox's pipe (about a quarter of the samples: the wake-up of that process), " +
        'three store stats (binding, pause, decisions), argument validation, building and writing two ' +
        'audit records',
      `throughput: ${rounds} interleaved rounds of ${throughputCalls} calls, 64 in flight, round robin over the 8 tools / 8 children; median of round rates`,
      'memory: /proc/PID/smaps_rollup Rss and Pss summed over every process of the sandbox trees after ' +
        'the throughput rounds, divided by the number of sandboxes; the memory target is a value (MiB), ' +
        'not a ratio',
      `load average at the start: ${loadAtStart.map((x) => x.toFixed(2)).join(', ')}; at the end: ${os
        .loadavg()
        .map((x) => x.toFixed(2))
        .join(', ')} (a shared 2-core machine: the pairs and interleaved rounds compare like with like)`,
    );
  } finally {
    for (const c of plain) c.close();
    once?.close();
    parse?.close();
    await host.close();
    await floorHost.close();
    await rm(home, { recursive: true, force: true });
    await rm(floorHome, { recursive: true, force: true });
  }
  return { title: 'Host warm path: warm calls, throughput and memory per retained sandbox', rows, notes };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await run();
  console.log(JSON.stringify(r, null, 2));
}
