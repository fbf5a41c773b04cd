// Folders that survive a power loss: a folder's new entries are durable only once the folder itself is fsync'd, so a
// folder made here has its parents' entries fsync'd before it is used; Node host, trusted side.
// POSIX (fsync(2)): "fsync() ... does not necessarily ensure that the entry in the directory containing the file has
// also reached disk. For that an explicit fsync() on a file descriptor for the directory is also needed." The same
// holds for a folder made by mkdir(2): without a parent fsync, a power loss can take the new folder and everything
// written into it, even files fsync'd one by one. Found by the crash harness (test/faults/crash/) in power-loss mode.
import { closeSync, fsyncSync, openSync } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/** fsync a folder so its entries (files created, renamed or removed in it) survive a power loss. Never throws. */
export async function syncDir(dir: string): Promise<void> {
  let d;
  try {
    d = await open(dir, 'r');
    await d.sync();
  } catch {
    /* some file systems refuse a folder fsync; the entries are then as durable as that file system makes them */
  } finally {
    await d?.close().catch(() => undefined);
  }
}

/** syncDir for a caller that cannot wait (a synchronous commit path). Never throws. */
export function syncDirSync(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    /* as syncDir */
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Create `dir` and any missing parents (mode `mode`, default 0o700; an existing folder keeps its mode) so that the
 * new folders survive a power loss: the parent of each folder created is fsync'd, outermost first. An existing `dir`
 * costs one mkdir and nothing else. Resolves to whether anything was created.
 * @throws the file-system error of mkdir (EACCES, ENOTDIR, ENOSPC...)
 */
export async function makeDurableDir(dir: string, mode = 0o700): Promise<boolean> {
  const first = await mkdir(dir, { recursive: true, mode });
  if (first === undefined) return false;
  // the folders created: `first` and every level below it down to `dir`; each one's entry lives in its parent
  const target = resolve(dir);
  const created: string[] = [];
  for (let p = target; ; p = dirname(p)) {
    created.unshift(p);
    if (p === resolve(first) || dirname(p) === p) break;
  }
  for (const p of created) await syncDir(dirname(p));
  return true;
}
