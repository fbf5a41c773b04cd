// Benchmark child: a warm host for the syscall count (test/bench/syscalls.mjs attaches strace to it); test side.
// Protocol on stdio: prints `ready <json>` once warm (its pid and what its descriptors name), runs CALLS sequential
// 1 KB calls when a line arrives on stdin, prints `done <json>` and exits.
import { readdirSync, readlinkSync } from 'node:fs';
import { benchHost, load } from './host-fixtures.mjs';

const calls = Number(process.env.CALLS ?? 300);
const mod = await load();
const h = await benchHost(mod, ['warm0'], { prefix: 'ty-bench-syscalls-' });
const kb1 = { data: 'x'.repeat(1000), k: 1 };
for (let i = 0; i < 300; i++) await h.call('warm0', kb1);
// past the store's 2 s "racy" window of the freshly written binding (a per-record stamp does not vouch for it sooner)
await new Promise((r) => setTimeout(r, 2100));
for (let i = 0; i < 100; i++) await h.call('warm0', kb1);
const link = (p) => {
  try {
    return readlinkSync(p);
  } catch {
    return '';
  }
};
const fds = {};
for (const fd of readdirSync('/proc/self/fd')) fds[fd] = link(`/proc/self/fd/${fd}`);
process.stdout.write(`ready ${JSON.stringify({ pid: process.pid, fds })}\n`);
await new Promise((r) => process.stdin.once('data', r));
const c0 = process.cpuUsage();
const t0 = performance.now();
for (let i = 0; i < calls; i++) await h.call('warm0', kb1);
const ms = performance.now() - t0;
const c = process.cpuUsage(c0);
process.stdout.write(`done ${JSON.stringify({ calls, ms, cpuMs: (c.user + c.system) / 1000 })}\n`);
await h.close();
process.exit(0);
