// Replace a file atomically, the one way the Node host does it: a fresh temp file, written, fsynced, renamed over the
// target, the folder fsynced; Node host, trusted side.
// POSIX rename(2) within one file system is atomic: a reader sees the old bytes or the new ones, never a mix. The temp
// file is created with O_EXCL | O_NOFOLLOW (never an existing file, never through a planted symlink) and its mode set
// before any byte is written; a symlink at the target itself is replaced, not written through.
// Why not the write-file-atomic package, used here before: it neither fsyncs the folder (a rename is durable only
// once its directory is) nor lets a store sweep a killed writer's temp files, and it writes through a planted symlink.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants as FS,
  fchmodSync,
  fsyncSync,
  openSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { open, readdir, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';

export interface AtomicWriteOptions {
  /** Mode of the new file, exactly (umask does not apply); default 0o600. */
  mode?: number;
  /**
   * Folder for the temp file, on the target's file system; there it is named `<pid>.<hex>`, so sweepTempFiles can
   * remove a dead writer's. Default: the target's folder, as `.<name>.<pid>.<hex>.tmp`.
   */
  tmpDir?: string;
  /** fsync the file before the rename and the folder after it (default true); false for a cache that may be lost. */
  durable?: boolean;
}

const CREATE = FS.O_WRONLY | FS.O_CREAT | FS.O_EXCL | FS.O_NOFOLLOW;

function tempPath(file: string, tmpDir: string | undefined): string {
  const id = `${process.pid}.${randomBytes(8).toString('hex')}`;
  return tmpDir === undefined ? join(dirname(file), `.${basename(file)}.${id}.tmp`) : join(tmpDir, id);
}

/** Writes to one path, in call order: the last call's bytes are the ones left (as write-file-atomic did). */
const queues = new Map<string, Promise<unknown>>();

/**
 * Replace `file` with `data` (a string is written as UTF-8) atomically. Resolves once renamed (and, when durable, once
 * the file and its folder are on disk); the folder must exist. Writes to the same path from this process happen in
 * call order. A writer killed mid-write can leave its temp file (sweepTempFiles clears a tmpDir's).
 * @throws the file-system error (ENOENT for a missing folder, EACCES, ENOSPC, EISDIR...); the temp file is removed.
 */
export function writeFileAtomic(file: string, data: string | Uint8Array, opts: AtomicWriteOptions = {}): Promise<void> {
  const key = resolve(file);
  const mine = (queues.get(key) ?? Promise.resolve()).then(() => write(file, data, opts));
  const tail = mine.catch(() => undefined);
  queues.set(key, tail);
  void tail.then(() => {
    if (queues.get(key) === tail) queues.delete(key);
  });
  return mine;
}

async function write(file: string, data: string | Uint8Array, opts: AtomicWriteOptions): Promise<void> {
  const durable = opts.durable ?? true;
  const tmp = tempPath(file, opts.tmpDir);
  let fh: Awaited<ReturnType<typeof open>> | undefined;
  try {
    fh = await open(tmp, CREATE, 0o600);
    await fh.chmod(opts.mode ?? 0o600);
    await fh.writeFile(data);
    if (durable) await fh.sync();
    await fh.close();
    fh = undefined;
    await rename(tmp, file);
  } catch (e) {
    await fh?.close().catch(() => undefined);
    await unlink(tmp).catch(() => undefined);
    throw e;
  }
  if (durable) await syncDir(dirname(file));
}

/** fsync a folder, so a rename in it survives a power loss; some file systems refuse it (the rename still holds). */
async function syncDir(dir: string): Promise<void> {
  const d = await open(dir, 'r');
  try {
    await d.sync();
  } catch {
    /* refused by the file system: nothing more to do */
  } finally {
    await d.close();
  }
}

/**
 * writeFileAtomic for a caller that cannot wait (an exit path): the same steps, synchronously. Nothing queues (a sync
 * write finishes before the next statement).
 * @throws as writeFileAtomic
 */
export function writeFileAtomicSync(file: string, data: string | Uint8Array, opts: AtomicWriteOptions = {}): void {
  const durable = opts.durable ?? true;
  const tmp = tempPath(file, opts.tmpDir);
  let fd: number | undefined;
  try {
    fd = openSync(tmp, CREATE, 0o600);
    fchmodSync(fd, opts.mode ?? 0o600);
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at);
    if (durable) fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(tmp, file);
  } catch (e) {
    if (fd !== undefined) closeSync(fd);
    try {
      unlinkSync(tmp);
    } catch {
      /* never created, or already renamed */
    }
    throw e;
  }
  if (durable) {
    const d = openSync(dirname(file), 'r');
    try {
      fsyncSync(d);
    } catch {
      /* refused by the file system */
    } finally {
      closeSync(d);
    }
  }
}

/** Whether process `pid` exists (EPERM: it does, under another user). */
function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: unknown }).code !== 'ESRCH';
  }
}

/** Remove the temp files in `tmpDir` (a tmpDir of writeFileAtomic) whose writer process is gone. Never throws. */
export async function sweepTempFiles(tmpDir: string): Promise<void> {
  for (const n of await readdir(tmpDir).catch(() => [] as string[])) {
    const pid = Number(n.split('.')[0]);
    if (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && !pidAlive(pid))
      await unlink(join(tmpDir, n)).catch(() => undefined);
  }
}
