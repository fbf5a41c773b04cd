// Memory of a process tree as the kernel accounts it (Linux /proc): what a sandbox holds against its limit; Node host,
// trusted side.
import { readFileSync } from 'node:fs';

/** `root` and its descendants, from /proc/PID/task/PID/children (Linux); just `root` where that cannot be read. */
export function processTree(root: number): number[] {
  const out = [root];
  for (let i = 0; i < out.length && out.length < 64; i++) {
    try {
      const kids = readFileSync(`/proc/${out[i]}/task/${out[i]}/children`, 'latin1').trim();
      if (kids) for (const k of kids.split(' ')) out.push(Number(k));
    } catch {
      /* not Linux, or gone */
    }
  }
  return out;
}

/**
 * The private writable memory of `root` and its descendants, MiB: VmData of /proc/PID/status (heap, ArrayBuffers,
 * stacks: what RLIMIT_DATA bounds, untouched PROT_NONE reservations excluded), summed. Undefined when /proc tells
 * nothing (not Linux, the processes gone). One read per process of the tree.
 */
export function treeDataMb(root: number): number | undefined {
  let kb = 0;
  for (const pid of processTree(root)) {
    try {
      const m = /^VmData:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'));
      if (m) kb += Number(m[1]);
    } catch {
      /* gone meanwhile */
    }
  }
  return kb > 0 ? kb / 1024 : undefined;
}
