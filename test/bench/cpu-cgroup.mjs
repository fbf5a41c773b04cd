// Benchmark helper: CPU time of a whole process tree (every process, bubblewrap's and the sandbox's included) from a
// cgroup v1 cpuacct group; test side.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = '/sys/fs/cgroup/cpuacct';

/**
 * A private cpuacct group, or undefined where there is none to make (needs root and cgroup v1 cpuacct). `prefix(argv)`
 * is `sh -c 'echo $$ > GROUP/cgroup.procs && exec "$@"' sh ARGV...`: the process joins the group before it execs, so
 * everything it starts is counted. `usageMs()` is the group's CPU time so far (user + system), ms.
 * Wall time on a loaded shared machine mostly measures waiting for a core; CPU time of the tree does not.
 */
export function cpuGroup() {
  if (process.getuid?.() !== 0 || !existsSync(join(ROOT, 'cpuacct.usage'))) return undefined;
  let dir;
  try {
    dir = mkdtempSync(join(ROOT, 'tysandbox-bench-'));
    chmodSync(dir, 0o755);
    chmodSync(join(dir, 'cgroup.procs'), 0o666); // a sandbox spawned as its leased uid joins it too
  } catch {
    return undefined;
  }
  return {
    prefix: (argv) => ['/bin/sh', '-c', `echo $$ > ${dir}/cgroup.procs && exec "$@"`, 'sh', ...argv],
    usageMs: () => Number(readFileSync(join(dir, 'cpuacct.usage'), 'utf8')) / 1e6,
    close: () => {
      try {
        rmdirSync(dir);
      } catch {
        /* a process still in it: left for the system */
      }
    },
  };
}

/** CPU ms of one `argv` run to its exit (spawned as `as.uid`/`as.gid` when given) in `group`. */
export async function cpuOf(group, argv, as) {
  const u0 = group.usageMs();
  const [cmd, ...args] = group.prefix(argv);
  await new Promise((resolve, reject) => {
    const c = spawn(cmd, args, {
      env: {},
      stdio: ['ignore', 'ignore', 'ignore'],
      ...(as ? { uid: as.uid, gid: as.gid } : {}),
    });
    c.once('error', reject);
    c.once('exit', () => resolve());
  });
  await new Promise((r) => setTimeout(r, 30)); // bubblewrap's pid 1 may be reaped just after the outer process exits
  return group.usageMs() - u0;
}
