// Benchmark helper: system calls of the host process per warm call, counted with strace on a warm host in a child
// process (test/bench/syscall-host.mjs) and sorted by what they are for; test side.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import os from 'node:os';
import { join } from 'node:path';

const HOST = new URL('./syscall-host.mjs', import.meta.url).pathname;

/** True when strace can run here (`apt-get install -y strace`). */
export function straceAvailable() {
  return spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0;
}

/**
 * Count the system calls of every thread of a warm host process over `calls` sequential 1 KB calls (strace -f
 * attached after the warm-up, so start-up is not counted). Each call is sorted into: the sandbox's pipe (the call
 * message written, the answer read, the event-loop waits for it), audit writes, fdatasync, statx (by the file it
 * names), and the rest by name.
 * @returns {Promise<{calls: number, perCall: Record<string, number>, total: number, statx: Record<string, number>}>}
 */
export async function countSyscalls({ calls = 300 } = {}) {
  const dir = await mkdtemp(join(os.tmpdir(), 'ty-bench-strace-'));
  const out = join(dir, 'trace.txt');
  const child = spawn(process.execPath, [HOST], {
    env: { ...process.env, CALLS: String(calls) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  const next = () => new Promise((r) => lines.once('line', r));
  let strace;
  try {
    const ready = JSON.parse((await next()).replace(/^ready /, ''));
    strace = spawn('strace', ['-f', '-qq', '-p', String(ready.pid), '-o', out], { stdio: 'ignore' });
    await new Promise((r) => setTimeout(r, 1000)); // attached to every thread
    const done = next();
    child.stdin.write('go\n');
    await done;
    strace.kill('SIGINT');
    await new Promise((r) => strace.once('exit', r));
    const text = await readFile(out, 'utf8');
    return classify(text, ready, calls);
  } finally {
    strace?.kill('SIGKILL');
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
}

/** Sort strace lines (`PID name(args) = ret`) into categories per call. */
function classify(text, ready, calls) {
  const audit = new Set(
    Object.entries(ready.fds)
      .filter(([, l]) => l.endsWith('/store/.logs/audit'))
      .map(([fd]) => fd),
  );
  // The sandbox's stdio are socket pairs (libuv), whose two ends have inodes of their own: its descriptors are told by
  // what goes through them (call messages out, results in).
  const pipeIn = new Set();
  const pipeOut = new Set();
  for (const m of text.matchAll(/^\d+\s+(write|writev|read)\((\d+), .{0,40}"type\\":\\"(call|result)/gm))
    (m[3] === 'call' ? pipeIn : pipeOut).add(m[2]);
  const counts = {};
  const statx = {};
  const add = (o, k) => (o[k] = (o[k] ?? 0) + 1);
  for (const line of text.split('\n')) {
    const m = /^\d+\s+([a-z_0-9]+)\((.*)$/.exec(line);
    if (!m) continue; // `<... resumed>` halves and exit lines
    const [, name, args] = m;
    const fd = /^(\d+)[,)]/.exec(args)?.[1];
    if ((name === 'write' || name === 'writev') && fd && pipeIn.has(fd)) add(counts, 'pipe: call message written');
    else if (name === 'read' && fd && pipeOut.has(fd)) add(counts, 'pipe: answer read');
    else if (name === 'epoll_pwait' || name === 'epoll_wait') add(counts, 'pipe: event-loop waits');
    else if ((name === 'write' || name === 'pwrite64') && fd && audit.has(fd)) add(counts, 'audit write');
    else if (name === 'fdatasync' || name === 'fsync') add(counts, name);
    else if (name === 'statx' || name === 'newfstatat' || name === 'fstat') {
      const path = /"([^"]*)"/.exec(args)?.[1] ?? '';
      const what = path === '' ? `fd ${fd}` : path.includes('/store/') ? `store/${path.split('/store/')[1]}` : path;
      add(statx, what.replace(/bagaa[a-z0-9]+/g, 'REV'));
      add(counts, 'statx');
    } else add(counts, name);
  }
  const perCall = Object.fromEntries(
    Object.entries(counts)
      .map(([k, v]) => [k, v / calls])
      .sort((a, b) => b[1] - a[1]),
  );
  const total = Object.values(perCall).reduce((a, b) => a + b, 0);
  return {
    calls,
    perCall,
    total,
    statx: Object.fromEntries(Object.entries(statx).map(([k, v]) => [k, v / calls])),
  };
}
