// Process groups of the host's children (sandboxes, hooks, native Python): killed whole, and on host exit; Node host,
// trusted side.

/** SIGKILL the whole process group led by `pid` (a child spawned `detached`); nothing when it is gone or undefined. */
export function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

// Every live tracked group, killed when the host exits (process 'exit': synchronous, so no await is possible there).
const liveGroups = new Set<number>();
let exitHookInstalled = false;

/** Kill `pid`'s group when this process exits, unless `forgetGroup` came first. */
export function trackGroup(pid: number): void {
  liveGroups.add(pid);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const g of liveGroups) killGroup(g);
    });
  }
}

/** The group is gone (reaped): no longer killed on exit. */
export function forgetGroup(pid: number): void {
  liveGroups.delete(pid);
}
