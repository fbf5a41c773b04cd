// Benchmark helpers shared by the host benches (warm, large, throughput, idle): hosts over fresh homes, plain-child
// baselines over pipes, process trees, floors; test side.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { closeSync, fdatasyncSync, openSync, readFileSync, readdirSync, writeSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

export const round = (x, d = 3) => Number(x.toFixed(d));
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The built modules the host benches use (dist/, `npm run build` first). */
export async function load() {
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
export const manifest = (name) => ({
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

/** The same answer the tool gives, computed in this process: the sandbox replaced by an immediate in-process answer. */
export const immediatePool = {
  call: async (_spec, args, o) => {
    o?.onSent?.();
    return { n: args.data.length, k: args.k ?? 0 };
  },
};

/**
 * createNodeHost on a fresh home in the temp folder (the store's disk), default settings with the tools allowed by
 * mode default, `tools` installed. `immediate`: the sandbox replaced by an immediate in-process answer (the host's own
 * work). Returns `{host, home, call(name, args), close()}`.
 */
export async function benchHost(mod, tools, { immediate = false, prefix = 'ty-bench-host-' } = {}) {
  const home = await mkdtemp(join(os.tmpdir(), prefix));
  const host = await mod.createNodeHost({
    home,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home },
    cwd: home,
    python: false,
    globals: { allow: [] },
    ...(immediate ? { pool: immediatePool } : {}),
  });
  for (const t of tools) await host.registry.install(manifest(t));
  return {
    host,
    home,
    call: async (name, args) => {
      const r = await host.invoker.invoke(name, args);
      if (!r.ok) throw new Error(`${name}: ${JSON.stringify(r.error)}`);
      return r.result;
    },
    close: async () => {
      await host.close();
      await rm(home, { recursive: true, force: true });
    },
  };
}

/** The same work in a plain node child over a pipe: NDJSON line in, parse, answer `{n, k}` as one line. */
const ECHO =
  "const fs=require('node:fs');let b='';process.stdin.setEncoding('utf8');process.stdin.on('data',d=>{b+=d;let " +
  "i;while((i=b.indexOf('\\n'))>=0){const l=b.slice(0,i);b=b.slice(i+1);const m=JSON.parse(l);fs.writeSync(1,JSON.stringify({id:m.id,result:{n:m.args.data.length,k:m.args.k??0}})+'\\n');}})";

/**
 * A plain node child (empty environment) answering NDJSON calls; `call(args)` resolves with its answer line. Calls may
 * overlap (pipelined). `pid` for its memory and wake-ups.
 */
export function plainChild() {
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
export const pipeOnce = () =>
  ackChild(
    "const fs=require('node:fs');process.stdin.on('data',d=>{for(let i=d.indexOf(10);i>=0;i=d.indexOf(10,i+1))fs.writeSync(1,'k')})",
  );

/**
 * Like pipeOnce, but the child parses each line (JSON.parse of the whole line, bytes joined once) before acknowledging:
 * serialize + pipe + parse, the floor of a call whose arguments must arrive as data.
 */
export const pipeParse = () =>
  ackChild(
    "const fs=require('node:fs');let parts=[];process.stdin.on('data',d=>{let s=0,i;while((i=d.indexOf(10,s))>=0){parts.push(d.subarray(s,i));const " +
      "m=JSON.parse(Buffer.concat(parts).toString('utf8'));parts=[];fs.writeSync(1,String(m.k));s=i+1}if(s<d.length)parts.push(d.subarray(s))})",
  );

/**
 * The durability floor on the store's disk: one `bytes`-byte line appended to a file in `dir` and fdatasync'd, on this
 * thread (what one durable audit record costs at the least). `once()` is one such append; `close()` ends it.
 */
export function fsyncFloor(dir, bytes = 300) {
  const fd = openSync(join(dir, 'floor.log'), 'a', 0o600);
  const line = Buffer.from(`${'f'.repeat(bytes - 1)}\n`);
  return {
    once: () => {
      writeSync(fd, line);
      fdatasyncSync(fd);
    },
    close: () => closeSync(fd),
  };
}

/** Pids of every descendant of `root` (from /proc/PID/stat ppid fields). */
export function descendants(root) {
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
export async function throughput(fns, n, width) {
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

/**
 * Times the kernel put each thread of `pids` on a CPU (the third field of /proc/PID/task/TID/schedstat), summed: a
 * sleeping process that wakes up is scheduled in once per wake-up.
 */
export function runCount(pids) {
  let n = 0;
  for (const pid of pids) {
    let tids;
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const t of tids) {
      try {
        n += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').trim().split(' ')[2]);
      } catch {
        /* gone */
      }
    }
  }
  return n;
}

/** `time` of the load average now, as a note's text. */
export const loadNow = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(', ');

/**
 * `n` host processes over one home (test/bench/host-worker.mjs), each serving calls over its stdio: `call(i, tool,
 * args)` sends a call to process `i` and resolves with its `ok`; `close()` ends them (each closes its host).
 */
export async function hostProcesses(n, home) {
  const procs = [];
  for (let i = 0; i < n; i++) {
    const c = spawn(process.execPath, [new URL('./host-worker.mjs', import.meta.url).pathname, home], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const waiting = new Map();
    const lines = createInterface({ input: c.stdout });
    const ready = new Promise((r) => lines.once('line', r));
    lines.on('line', (l) => {
      if (l === 'ready') return;
      const m = JSON.parse(l);
      waiting.get(m.id)?.(m.ok);
      waiting.delete(m.id);
    });
    procs.push({ c, waiting, ready, next: 0 });
  }
  await Promise.all(procs.map((p) => p.ready));
  return {
    pids: procs.map((p) => p.c.pid),
    call: (i, tool, args) =>
      new Promise((r) => {
        const p = procs[i];
        const id = ++p.next;
        p.waiting.set(id, r);
        p.c.stdin.write(`${JSON.stringify({ id, tool, args })}\n`);
      }),
    close: async () => {
      await Promise.all(
        procs.map(
          (p) =>
            new Promise((r) => {
              p.c.once('exit', r);
              p.c.stdin.end();
            }),
        ),
      );
    },
  };
}
