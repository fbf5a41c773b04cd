// Per-run working folders of native processes, removed only after every process using them is gone, on every exit path;
// Node host, trusted side.
import { existsSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { killGroup } from '../process/groups.js';

// Live folders and the process group that uses each; cleaned synchronously when the host exits.
const live = new Map<string, number | undefined>();
let hooked = false;
const swept = new Set<string>();

/**
 * SIGKILL every process whose working folder is `dir` or inside it (Linux /proc/PID/cwd; elsewhere nothing is
 * found). Catches what left the process group (setsid, double fork) but kept the folder it was started in.
 * Returns how many were signalled.
 */
export function killFolderUsers(dir: string): number {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return 0;
  }
  let n = 0;
  for (const p of pids) {
    const pid = Number(p);
    if (pid === process.pid) continue;
    let cwd: string;
    try {
      cwd = readlinkSync(`/proc/${p}/cwd`);
    } catch {
      continue;
    }
    if (cwd === dir || cwd.startsWith(`${dir}/`)) {
      try {
        process.kill(pid, 'SIGKILL');
        n++;
      } catch {
        /* gone */
      }
    }
  }
  return n;
}

function removeNowSync(dir: string, group: number | undefined): void {
  killGroup(group);
  for (let i = 0; i < 3; i++) {
    killFolderUsers(dir);
    rmSync(dir, { recursive: true, force: true });
    if (!existsSync(dir)) return;
  }
}

/**
 * A fresh 0700 folder `<root>/<prefix><host pid>-XXXXXX`, tracked until removeWorkDir: when the host exits
 * (normally, or on an uncaught error) its process group and folder users are killed and it is removed
 * synchronously; folders of hosts that died by SIGKILL are swept on the next call in the same root.
 */
export async function makeWorkDir(root: string, prefix: string): Promise<string> {
  sweepStale(root, prefix);
  const dir = await mkdtemp(join(root, `${prefix}${process.pid}-`));
  live.set(dir, undefined);
  if (!hooked) {
    hooked = true;
    process.once('exit', () => {
      for (const [d, g] of live) removeNowSync(d, g);
    });
  }
  return dir;
}

/** Record the process group that runs in `dir` (killed first when the host exits). */
export function setWorkDirGroup(dir: string, group: number | undefined): void {
  if (live.has(dir)) live.set(dir, group);
}

/**
 * Remove `dir` after the process tree using it is gone: its group is killed, then every process still working
 * in it (killFolderUsers), then the folder; repeated when a straggler re-created it.
 */
export async function removeWorkDir(dir: string): Promise<void> {
  const group = live.get(dir);
  killGroup(group);
  for (let i = 0; i < 3; i++) {
    killFolderUsers(dir);
    await rm(dir, { recursive: true, force: true });
    if (!existsSync(dir)) break;
  }
  live.delete(dir);
}

/** Once per root and prefix: remove folders left by hosts that are gone (their pid in the name). */
function sweepStale(root: string, prefix: string): void {
  const key = `${root}\0${prefix}`;
  if (swept.has(key)) return;
  swept.add(key);
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return;
  }
  const re = new RegExp(`^${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\d+)-`);
  for (const n of names) {
    const m = re.exec(n);
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid) continue;
    try {
      process.kill(pid, 0);
      continue; // its host still runs
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EPERM') continue;
    }
    removeNowSync(join(root, n), undefined);
  }
}
