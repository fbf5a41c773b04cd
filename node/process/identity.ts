// Process identity (pid plus start time) for stale-lock and interrupted-call decisions; Node host, trusted side.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * A process's start time as the kernel reports it: field 22 of /proc/PID/stat (clock ticks since boot), as a
 * string; undefined where /proc is missing (macOS) or the process is gone. With the pid it names one process
 * for the life of the machine: a reused pid has a different start time (proc(5)).
 */
export function processStartTime(pid: number): string | undefined {
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces or ")": split after the last ")".
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const start = rest[19];
    return start !== undefined && /^\d+$/.test(start) ? start : undefined;
  } catch {
    return undefined;
  }
}

function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether the process `pid` that started at `start` (processStartTime; undefined: unknown) still runs. A pid
 * that exists with another start time is a reused pid: not alive. Without a start time only the pid is checked.
 */
export function processAlive(pid: number, start: string | undefined): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0 || !pidExists(pid)) return false;
  if (start === undefined) return true;
  const now = processStartTime(pid);
  return now === undefined || now === start;
}

let self: string | undefined;
/** This process as `HOST:PID:START` (START empty where unknown), written on `started` audit records. */
export function hostIdentity(): string {
  self ??= `${hostname()}:${process.pid}:${processStartTime(process.pid) ?? ''}`;
  return self;
}

/**
 * Whether the process named by a hostIdentity() string still runs. A process on another machine cannot be
 * checked: it counts as alive (its call is shown `started`, never falsely `interrupted`).
 */
export function hostIdentityAlive(id: string): boolean {
  const m = /^(.*):(\d+):(\d*)$/.exec(id);
  if (!m) return false;
  if (m[1] !== hostname()) return true;
  return processAlive(Number(m[2]), m[3] === '' ? undefined : m[3]);
}
