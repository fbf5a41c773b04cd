// Benchmark: what the OS sandbox (bubblewrap) adds to cold starts and warm calls of the Node and Deno sandboxes; test
// side.
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { cpuGroup, cpuOf } from './cpu-cgroup.mjs';
import { pairRatio, spread, summary } from './stats.mjs';

/** Load the compiled modules (npm run build); fall back to the TypeScript sources through tsx. */
async function load() {
  const names = [
    'node/sandbox/runtime',
    'node/sandbox/engines',
    'node/os-sandbox/posture',
    'node/os-sandbox/probe',
    'core/exec/runtime',
  ];
  try {
    if (process.env.TY_BENCH_SOURCES) throw new Error('sources requested');
    const mods = await Promise.all(names.map((n) => import(`../../dist/${n}.js`)));
    return { ...Object.assign({}, ...mods), from: 'dist' };
  } catch {
    const { tsImport } = await import('tsx/esm/api');
    const mods = [];
    for (const n of names) mods.push(await tsImport(`../../${n}.ts`, import.meta.url));
    return { ...Object.assign({}, ...mods), from: 'sources (tsx)' };
  }
}

const round = (x) => Math.round(x * 100) / 100;

/** A row from interleaved pairs of ms samples: medians, spreads, and the spread of the per-pair ratio. */
function pairRow(name, xs, bs, baseline, target) {
  const v = summary(xs);
  const b = summary(bs);
  const r = pairRatio(xs, bs);
  return {
    name,
    value: round(v.median),
    unit: 'ms',
    spread: spread(v, b, 2),
    baseline,
    baselineValue: round(b.median),
    ratio: round(v.median / b.median),
    ratioSpread: `${r.p25.toFixed(2)}–${r.p75.toFixed(2)}`,
    target,
  };
}

/**
 * Spawn (as `as.uid`/`as.gid` when given, as the sandbox runtime spawns a wrapper's `spawnAs`) and wait for exit; ms.
 */
function timedSpawn(command, args, env = {}, as = undefined) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const c = spawn(command, args, {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
      ...(as ? { uid: as.uid, gid: as.gid } : {}),
    });
    let err = '';
    c.stderr.on('data', (d) => (err += d));
    c.once('error', reject);
    c.once('exit', (code) =>
      code === 0
        ? resolve(performance.now() - t0)
        : reject(new Error(`${command} exited ${code}: ${err.slice(0, 300)}`)),
    );
  });
}

const SOURCE = 'let n = 0; export default async (args) => ({ n: ++n, echo: args })';

function spec(mod, engine) {
  return {
    revision: `bisolationbench${engine}`,
    manifest: {
      name: 'bench',
      description: '',
      parameters: {},
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source: SOURCE, engine },
    },
    limits: { ...mod.DEFAULT_LIMITS },
  };
}
const callOpts = (mod) => ({
  signal: new AbortController().signal,
  limits: { ...mod.DEFAULT_LIMITS },
  onCapability: async () => {
    throw new Error('none');
  },
});

/** Cold start: start + first call + destroy, ms. */
async function cold(mod, engine, wrap) {
  const rt = new mod.NodeSandboxRuntime(wrap ? { engine, wrap } : { engine });
  const t0 = performance.now();
  const inst = await rt.start(spec(mod, engine));
  await inst.call({ q: 1 }, callOpts(mod));
  const ms = performance.now() - t0;
  await inst.destroy('bench');
  return ms;
}

/**
 * Warm calls on two retained sandboxes (without and with the wrapper), interleaved call by call with the order
 * alternating, after 20 warm-up calls each: ms samples of each.
 */
async function warmPair(mod, engine, wrap, n) {
  const insts = [];
  try {
    for (const w of [undefined, wrap])
      insts.push(await new mod.NodeSandboxRuntime(w ? { engine, wrap: w } : { engine }).start(spec(mod, engine)));
    const o = callOpts(mod);
    for (const inst of insts) for (let i = 0; i < 20; i++) await inst.call({ q: i }, o);
    const xs = [[], []];
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < 2; j++) {
        const k = (i + j) % 2;
        const t0 = performance.now();
        await insts[k].call({ q: i }, o);
        xs[k].push(performance.now() - t0);
      }
    }
    return { plain: xs[0], wrapped: xs[1] };
  } finally {
    await Promise.all(insts.map((x) => x.destroy('bench')));
  }
}

export async function run() {
  const mod = await load();
  const probe = await mod.probeSandbox();
  const notes = [
    `modules from ${mod.from}`,
    `backend: ${probe.backend} ${probe.version ?? ''} ${probe.available ? 'available' : `UNAVAILABLE: ${probe.reason}`}`,
  ];
  if (!probe.available)
    return {
      title: 'OS isolation overhead (bubblewrap)',
      rows: [],
      notes: [...notes, 'no backend here: nothing measured'],
    };
  if (probe.dropTo)
    notes.push(
      `the CLI runs as root, so sandboxes run as a leased uid (${probe.dropTo.uid} in the probe): ` +
        `the JavaScript sandbox runtime spawns bwrap as that uid itself where that equals setpriv's ` +
        `drop (no setpriv exec; the "setpriv uid drop alone" row is what that exec cost, still paid ` +
        `by native Python)`,
    );
  const plan = mod.planIsolation('required', probe);
  const wrap = plan.wrap;
  const node = process.execPath;
  const deno = mod.resolveDeno();
  const COLD = 21;
  const WARM = 400;
  const rows = [];

  // Bare spawns, interleaved so machine load hits both sides alike.
  const w = wrap({
    command: node,
    args: ['-e', '0'],
    env: {},
    readOnlyPaths: [],
    writablePaths: [],
    spawnerSetsIds: true,
  });
  const bare = [];
  const wrapped = [];
  for (let i = 0; i < COLD; i++) {
    bare.push(await timedSpawn(node, ['-e', '0']));
    wrapped.push(await timedSpawn(w.command, w.args, w.env, w.spawnAs));
  }
  const bareS = summary(bare);
  const base = bareS.median;
  rows.push(pairRow('node -e 0 inside bwrap (spawn to exit)', wrapped, bare, 'env -i node -e 0', '<= 1.15x'));

  // The host's own synchronous work per sandbox: building the wrapped command line (paths resolved and checked, a uid
  // leased when the CLI runs as root) at start, and releasing the lease at exit; both run on the host's event loop.
  const probeSpec = spec(mod, 'node');
  const rt = new mod.NodeSandboxRuntime({ engine: 'node' });
  const build = [];
  const free = [];
  for (let i = 0; i < 200; i++) {
    let t0 = performance.now();
    const c = wrap({ ...rt.command(probeSpec), spawnerSetsIds: true });
    build.push(performance.now() - t0);
    t0 = performance.now();
    c.release?.();
    free.push(performance.now() - t0);
  }
  const bs = summary(build);
  const fs = summary(free);
  rows.push({
    name: 'host work per sandbox start: the runtime command line and its bwrap wrapping (realpaths, reachability, uid lease), synchronous',
    value: round(bs.median),
    unit: 'ms',
    spread: spread(bs, bareS, 3),
    baseline: 'env -i node -e 0',
    baselineValue: round(bareS.median),
    ratio: Number((bs.median / bareS.median).toFixed(3)),
  });
  rows.push({
    name: 'host work per sandbox exit: releasing the uid lease (synchronous part)',
    value: Number(fs.median.toFixed(3)),
    unit: 'ms',
    spread: spread(fs, undefined, 3),
    baseline: 'env -i node -e 0',
    baselineValue: round(bareS.median),
    ratio: Number((fs.median / bareS.median).toFixed(3)),
  });

  // Where that cost comes from: each layer of the wrapper alone around `node -e 0`, interleaved with the bare spawn.
  if (probe.path) {
    const ns = [
      '--unshare-all',
      '--die-with-parent',
      '--new-session',
      '--ro-bind',
      '/',
      '/',
      '--proc',
      '/proc',
      '--dev',
      '/dev',
    ];
    const layers = [
      [
        'layer: bwrap namespaces only (unshare-all, new session, die-with-parent)',
        probe.path,
        [...ns, node, '-e', '0'],
      ],
      [
        'layer: bwrap + nested user namespace (--unshare-user --disable-userns)',
        probe.path,
        ['--unshare-user', '--disable-userns', ...ns, node, '-e', '0'],
      ],
      ...(probe.prlimit
        ? [['layer: prlimit (RLIMITs) alone', probe.prlimit, ['--nproc=128', '--', node, '-e', '0']]]
        : []),
      ...(probe.dropTo
        ? [
            [
              'layer: setpriv uid drop alone',
              probe.dropTo.setprivPath,
              [`--reuid=${probe.dropTo.uid}`, `--regid=${probe.dropTo.gid}`, '--clear-groups', '--', node, '-e', '0'],
            ],
          ]
        : []),
    ];
    for (const [name, command, args] of layers) {
      const b = [];
      const l = [];
      for (let i = 0; i < COLD; i++) {
        b.push(await timedSpawn(node, ['-e', '0']));
        l.push(await timedSpawn(command, args));
      }
      rows.push(pairRow(name, l, b, 'env -i node -e 0', ''));
    }
    notes.push(
      'the layer rows measure each piece of the wrapper alone; their extra milliseconds roughly add ' +
        "up to the full wrapper's (the second includes the first). --disable-userns (a nested user namespace) " +
        'stops tool code from creating namespaces of its own; the uid drop exists because RLIMIT_NPROC ' +
        'does not bind uid 0',
    );
  }

  // The same comparisons in CPU time of the whole process tree (a cpuacct cgroup), which machine load moves far less.
  const group = cpuGroup();
  if (group) {
    try {
      const cpuRow = (name, xs, bs, baseline, target) => {
        const v = summary(xs);
        const b = summary(bs);
        const r = pairRatio(xs, bs);
        return {
          name,
          value: round(v.median),
          unit: 'ms CPU',
          spread: spread(v, b, 2),
          baseline,
          baselineValue: round(b.median),
          ratio: round(v.median / b.median),
          ratioSpread: `${r.p25.toFixed(2)}–${r.p75.toFixed(2)}`,
          target,
        };
      };
      const cb = [];
      const cw = [];
      for (let i = 0; i < COLD; i++) {
        cb.push(await cpuOf(group, [node, '-e', '0']));
        cw.push(await cpuOf(group, [w.command, ...w.args], w.spawnAs));
      }
      rows.push(
        cpuRow(
          'CPU time: node -e 0 inside bwrap (every process of the tree, cpuacct cgroup)',
          cw,
          cb,
          'CPU time: env -i node -e 0',
          '<= 1.15x',
        ),
      );
      for (const engine of ['node', ...(deno ? ['deno'] : [])]) {
        const inCgroup = (inner) => (req) => {
          const c = inner ? inner(req) : req;
          const [command, ...args] = group.prefix([c.command, ...c.args]);
          return { ...c, command, args };
        };
        const cpuCold = async (wrapped) => {
          const rt = new mod.NodeSandboxRuntime({ engine, wrap: inCgroup(wrapped ? wrap : undefined) });
          const u0 = group.usageMs();
          const inst = await rt.start(spec(mod, engine));
          await inst.call({ q: 1 }, callOpts(mod));
          await inst.destroy('bench');
          await new Promise((r) => setTimeout(r, 30));
          return group.usageMs() - u0;
        };
        const c0 = [];
        const c1 = [];
        for (let i = 0; i < COLD; i++) {
          if (i % 2 === 0) c0.push(await cpuCold(false)), c1.push(await cpuCold(true));
          else c1.push(await cpuCold(true)), c0.push(await cpuCold(false));
        }
        rows.push(
          cpuRow(
            `CPU time: ${engine} sandbox cold start (start + first call, then killed), bwrap (every process of the tree)`,
            c1,
            c0,
            `CPU time: ${engine} sandbox without bwrap`,
            '<= 1.15x',
          ),
        );
        if (engine === 'node') {
          // The floor of that row: the sandbox without bwrap plus only what the same wrapper adds to `node -e 0` (its
          // namespaces, the binds of the binary and its libraries, the prlimit exec), from the rows measured above.
          const base0 = summary(c0).median;
          const floor = base0 + summary(cw).median - summary(cb).median;
          rows.push({
            name: 'floor: CPU time of the node sandbox without bwrap plus what the same wrapper adds to node -e 0 (namespaces, binds of the binary and its libraries, prlimit)',
            value: round(floor),
            unit: 'ms CPU',
            baseline: 'CPU time: node sandbox without bwrap',
            baselineValue: round(base0),
            ratio: round(floor / base0),
          });
        }
      }
      notes.push(
        'CPU-time rows: a cgroup v1 cpuacct group counts every process of the sandbox tree (a `sh` that ' +
          "joins the group execs the command, on both sides alike); the host's own synchronous work is " +
          'in the host-work rows instead. On a loaded shared machine the wall-time rows mostly measure ' +
          'waiting for a core',
      );
    } finally {
      group.close();
    }
  } else notes.push('no cpuacct cgroup here (needs root and cgroup v1 cpuacct): CPU-time rows skipped');
  w.release?.();

  for (const engine of ['node', ...(deno ? ['deno'] : [])]) {
    const c0 = [];
    const c1 = [];
    await cold(mod, engine, undefined); // warm-up of each (page cache, per-process caches)
    await cold(mod, engine, wrap);
    for (let i = 0; i < COLD; i++) {
      // order alternates so neither side always runs right after the other's teardown
      if (i % 2 === 0) {
        c0.push(await cold(mod, engine, undefined));
        c1.push(await cold(mod, engine, wrap));
      } else {
        c1.push(await cold(mod, engine, wrap));
        c0.push(await cold(mod, engine, undefined));
      }
    }
    rows.push(
      pairRow(
        `${engine} sandbox cold start (start + first call), bwrap`,
        c1,
        c0,
        `${engine} sandbox without bwrap`,
        '<= 1.15x',
      ),
    );
    const b = summary(c1);
    rows.push({
      name: `${engine} sandbox cold start, bwrap, vs bare spawn`,
      value: round(b.median),
      unit: 'ms',
      spread: spread(b, bareS, 2),
      baseline: 'env -i node -e 0',
      baselineValue: round(base),
      ratio: round(b.median / base),
      target: engine === 'node' ? '<= 1.5x' : '',
    });
    const wp = await warmPair(mod, engine, wrap, WARM);
    const w0 = summary(wp.plain);
    const w1 = summary(wp.wrapped);
    rows.push({
      name: `${engine} warm call, bwrap`,
      value: round(w1.median),
      unit: 'ms',
      spread: spread(w1, w0, 3),
      baseline: `${engine} warm call without bwrap`,
      baselineValue: round(w0.median),
      ratio: round(w1.median / w0.median),
      target: '<= 1.1x',
    });
  }
  notes.push(
    `medians of ${COLD} cold runs and ${WARM} warm calls; with and without bwrap interleaved (cold: ` +
      `run by run, ratio p25–p75 over the per-run pairs; warm: call by call on two retained sandboxes, ` +
      `order alternating)`,
    'bwrap cost is namespace setup, bind mounts and the prlimit exec at spawn; a warm call crosses only the stdio pipe, so it should not differ',
  );
  return { title: 'OS isolation overhead (bubblewrap)', rows, notes };
}
