// Appending whole lines to a log file so that a torn tail never merges with the next record; Node host, trusted side.
import { closeSync, constants as FS, fstatSync, fsync, openSync, readSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { TyError } from '../core/errors.js';

const NL = 0x0a;

/**
 * Append `line` (one record, without its newline) to the file at `path` (created 0600), each record on a line of
 * its own even after a torn write: when the file does not end with a newline (a write cut short by a full disk,
 * a crash mid-write), the record is preceded by one, so the fragment stays a line of its own (readers count it
 * as corrupt) and this record parses. One `write` on an O_APPEND descriptor, then fsync when `sync` (default).
 * Two appenders racing a third one's torn write may both add the newline: an empty line, which readers skip.
 * @throws TyError E_STORE on a short write (the torn tail is repaired by the next append) or any I/O error.
 */
export async function appendLine(path: string, line: string, opts: { sync?: boolean } = {}): Promise<void> {
  const fh = await open(path, FS.O_RDWR | FS.O_APPEND | FS.O_CREAT, 0o600);
  try {
    const { size } = await fh.stat();
    let torn = false;
    if (size > 0) {
      const last = Buffer.alloc(1);
      const { bytesRead } = await fh.read(last, 0, 1, size - 1);
      torn = bytesRead === 1 && last[0] !== NL;
    }
    const bytes = Buffer.from(`${torn ? '\n' : ''}${line}\n`, 'utf8');
    const { bytesWritten } = await fh.write(bytes, 0, bytes.length);
    if (bytesWritten !== bytes.length) throw new TyError('E_STORE', `short write to ${path.split('/').pop() ?? 'log'} (disk full?)`);
    if (opts.sync !== false) await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Largest single write of a group commit: whole lines only, at most Linux PIPE_BUF, like one appendLine. */
const CHUNK_BYTES = 4096;

interface Pending {
  bytes: Buffer;
  resolve: () => void;
  reject: (e: unknown) => void;
}

/**
 * Group commit for one log file: records appended while an fsync is in flight are written together and made
 * durable by the next single fsync, so N concurrent appends cost one fsync instead of N. Each caller's promise
 * settles only after an fsync that began after its line was written (durable before it resolves), and in the
 * order lines were handed in. Lines are written whole, in writes of at most 4096 bytes (several lines each,
 * never a line split across writes), on an O_APPEND descriptor opened per batch (so a log removed meanwhile is
 * re-created, never written to an unlinked file). The torn-tail repair of appendLine applies before every write.
 * A write that fails (full disk) rejects the records it did not write whole with E_STORE; the records of the same
 * batch written whole before it are still synced and resolved.
 * The cheap steps (open, fstat, 1-byte read, write, close) run synchronously on the calling thread; only fsync
 * goes to the thread pool. At most one descriptor per log is open at a time.
 */
export class GroupAppender {
  #queue: Pending[] = [];
  #running = false;
  /** Batches committed (one fsync each) and records they held, since creation. */
  readonly stats = { batches: 0, records: 0 };
  constructor(readonly path: string) {}

  /** Append one record (`line` without its newline); resolves once it is written and fsync'd. @throws TyError E_STORE */
  append(line: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ bytes: Buffer.from(`${line}\n`, 'utf8'), resolve, reject });
      if (!this.#running) {
        this.#running = true;
        // Let the appends of this turn of the event loop join the first batch.
        queueMicrotask(() => void this.#drain());
      }
    });
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue;
        this.#queue = [];
        await this.#commit(batch);
      }
    } finally {
      this.#running = false;
    }
  }

  async #commit(batch: Pending[]): Promise<void> {
    let fd: number;
    try {
      fd = openSync(this.path, FS.O_RDWR | FS.O_APPEND | FS.O_CREAT, 0o600);
    } catch (e) {
      for (const p of batch) p.reject(storeError(this.path, e));
      return;
    }
    let written = 0; // records of `batch` written whole
    let failure: unknown;
    try {
      let i = 0;
      while (i < batch.length) {
        // one write: as many whole lines as fit in CHUNK_BYTES (at least one)
        let j = i;
        let size = 0;
        while (j < batch.length && (j === i || size + batch[j]!.bytes.length <= CHUNK_BYTES - 1)) size += batch[j++]!.bytes.length;
        const torn = tornTail(fd);
        const buf = Buffer.concat([...(torn ? [Buffer.from('\n')] : []), ...batch.slice(i, j).map((p) => p.bytes)]);
        const n = writeSync(fd, buf, 0, buf.length);
        if (n !== buf.length) {
          // count the records that made it whole; the rest fail (their torn tail is repaired by the next write)
          let end = torn ? 1 : 0;
          for (let k = i; k < j && end + batch[k]!.bytes.length <= n; k++) (end += batch[k]!.bytes.length), written++;
          throw new TyError('E_STORE', `short write to ${this.path.split('/').pop() ?? 'log'} (disk full?)`);
        }
        written = j;
        i = j;
      }
    } catch (e) {
      failure = e;
    }
    try {
      if (written > 0) {
        await new Promise<void>((res, rej) => fsync(fd, (err) => (err ? rej(err) : res())));
        this.stats.batches++;
        this.stats.records += written;
      }
    } catch (e) {
      failure ??= e;
      written = 0;
    } finally {
      try {
        closeSync(fd);
      } catch {
        /* the records are synced; a close error changes nothing for them */
      }
    }
    for (let k = 0; k < batch.length; k++) {
      if (k < written) batch[k]!.resolve();
      else batch[k]!.reject(storeError(this.path, failure));
    }
  }
}

/** True when the file behind `fd` is not empty and does not end with a newline. */
function tornTail(fd: number): boolean {
  const { size } = fstatSync(fd);
  if (size === 0) return false;
  const last = Buffer.alloc(1);
  return readSync(fd, last, 0, 1, size - 1) === 1 && last[0] !== NL;
}

function storeError(path: string, e: unknown): TyError {
  if (e instanceof TyError) return e;
  return new TyError('E_STORE', `cannot append to log ${path.split('/').pop() ?? 'log'}: ${e instanceof Error ? e.message : String(e)}`);
}
