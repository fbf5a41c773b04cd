// The file store's generation counter: one file every record writer of any process moves after its change, one statx
// tells readers whether anything changed; Node host, trusted side.
import { closeSync, constants as FS, openSync, renameSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** The counter file in the store's root. */
export const GENERATION_FILE = '.generation';
/** A generation read less than this long ago is answered again without a statx, ms (one statx per call at most). */
export const GENERATION_REUSE_MS = 1;
/** Past this size the counter file is replaced by a fresh one (a new inode also moves the generation), bytes. */
const ROTATE_BYTES = 64 * 1024;

/**
 * The generation of one file store (core/store/contract.ts StoreBackend.generation): `dev:ino:size` of
 * `<root>/.generation`, `absent` before any writer made it. A writer calls bump() after each record it wrote or
 * deleted: one O_APPEND write of one byte (the size grows, so the stamp moves whatever the file system's time
 * granularity; every process's bump lands), the file replaced by a fresh one past 64 KiB (the inode moves).
 * current() takes one statx of the file, reused for GENERATION_REUSE_MS so that the records one call reads share it;
 * a bump by this process forgets it at once.
 * What it vouches for is bounded by core/store/contract.ts GENERATION_VOUCH_MS: a writer killed between its change and
 * its bump leaves the change unseen at most that long (the entry's own stamp is checked then).
 */
export class StoreGeneration {
  readonly path: string;
  #last: string | undefined;
  #at = -Infinity;

  constructor(root: string) {
    this.path = join(root, GENERATION_FILE);
  }

  /** The generation now (`dev:ino:size`, or `absent`); undefined when the file cannot be examined. */
  current(): string | undefined {
    const now = performance.now();
    if (this.#last !== undefined && now - this.#at < GENERATION_REUSE_MS) return this.#last;
    let st;
    try {
      st = statSync(this.path, { throwIfNoEntry: false });
    } catch {
      this.#last = undefined;
      return undefined;
    }
    this.#last = st === undefined ? 'absent' : `${st.dev}:${st.ino}:${st.size}`;
    this.#at = now;
    return this.#last;
  }

  /**
   * Move the generation (after a record was written or deleted). Never throws: a store whose counter cannot be
   * written still works, its readers checking each record's own stamp once GENERATION_VOUCH_MS has passed.
   */
  bump(): void {
    this.#last = undefined;
    try {
      const fd = openSync(this.path, FS.O_WRONLY | FS.O_APPEND | FS.O_CREAT, 0o600);
      try {
        writeSync(fd, 'g');
      } finally {
        closeSync(fd);
      }
      const st = statSync(this.path, { throwIfNoEntry: false });
      if (st !== undefined && st.size >= ROTATE_BYTES) {
        const tmp = `${this.path}.${process.pid}.${Math.random().toString(36).slice(2)}`;
        const fd2 = openSync(tmp, FS.O_WRONLY | FS.O_CREAT | FS.O_EXCL, 0o600);
        try {
          writeSync(fd2, 'g');
        } finally {
          closeSync(fd2);
        }
        renameSync(tmp, this.path);
      }
    } catch {
      /* readers fall back to each record's stamp (GENERATION_VOUCH_MS) */
    }
  }
}
