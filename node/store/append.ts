// Appending whole lines to a log file so that a torn tail never merges with the next record; Node host, trusted side.
import {
  closeSync,
  constants as FS,
  fdatasync,
  fdatasyncSync,
  fstatSync,
  openSync,
  readSync,
  statSync,
  writeSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { TyError } from '../../core/errors.js';
import { syncDir, syncDirSync } from './dirs.js';

const NL = 0x0a;

/**
 * Append `line` (one record, without its newline) to the file at `path` (created 0600), each record on a line of
 * its own even after a torn write: when the file does not end with a newline (a write cut short by a full disk,
 * a crash mid-write), the record is preceded by one, so the fragment stays a line of its own (readers count it
 * as corrupt) and this record parses. One `write` on an O_APPEND descriptor, then fsync when `sync` (default), and
 * the folder's fsync when this append created the file.
 * Two appenders racing a third one's torn write may both add the newline: an empty line, which readers skip.
 * @throws TyError E_STORE on a short write (the torn tail is repaired by the next append) or any I/O error.
 */
export async function appendLine(path: string, line: string, opts: { sync?: boolean } = {}): Promise<void> {
  const { fh, created } = await openLog(path);
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
    if (bytesWritten !== bytes.length)
      throw new TyError('E_STORE', `short write to ${path.split('/').pop() ?? 'log'} (disk full?)`);
    if (opts.sync !== false) {
      await fh.sync();
      // a log this append created is durable only once its folder's entry is
      if (created) await syncDir(dirname(path));
    }
  } finally {
    await fh.close();
  }
}

/** Open a log for appending; `created`: this open made the file (its folder then needs an fsync). */
async function openLog(path: string): Promise<{ fh: Awaited<ReturnType<typeof open>>; created: boolean }> {
  try {
    return { fh: await open(path, FS.O_RDWR | FS.O_APPEND), created: false };
  } catch (e) {
    if ((e as { code?: unknown }).code !== 'ENOENT') throw e;
    return { fh: await open(path, FS.O_RDWR | FS.O_APPEND | FS.O_CREAT, 0o600), created: true };
  }
}

/** openLog, synchronously, as a descriptor. */
function openLogSync(path: string): { fd: number; created: boolean } {
  try {
    return { fd: openSync(path, FS.O_RDWR | FS.O_APPEND), created: false };
  } catch (e) {
    if ((e as { code?: unknown }).code !== 'ENOENT') throw e;
    return { fd: openSync(path, FS.O_RDWR | FS.O_APPEND | FS.O_CREAT, 0o600), created: true };
  }
}

/** Largest single write of a group commit: whole lines only, at most Linux PIPE_BUF, like one appendLine. */
const CHUNK_BYTES = 4096;
/**
 * Longest a staged line waits for an append whose fsync it can share before it gets its own, ms. The line is in the
 * kernel from the start (a killed host process cannot lose it); the wait bounds only how long a power loss could.
 * Long enough for a 1 MB call on a loaded machine (10-20 ms) to share one fsync with its completion.
 */
export const STAGED_SYNC_MS = 50;

interface Pending {
  bytes: Buffer;
  resolve: () => void;
  reject: (e: unknown) => void;
  /** Told once the line is written (in the kernel: a host killed now cannot lose it), before it is durable. */
  onWritten?: () => void;
}

/** Lines written through one descriptor, waiting for an fsync that began after they were written. */
interface Written {
  fd: number;
  records: Pending[];
  /** This descriptor's open created the file: its folder is fsync'd after the file, before the records resolve. */
  created: boolean;
}

/**
 * Group commit for one log file. Lines appended in one turn of the event loop are written at once, in
 * whole-line writes of at most 4096 bytes (never a line split across writes), on an O_APPEND descriptor opened
 * for that flush (so a log removed meanwhile is re-created, never written to an unlinked file); the torn-tail
 * repair of appendLine applies before every write. Written lines wait for the next fsync: one runs at a time,
 * and every line written while it runs shares the one after it, so N concurrent appends cost a few fsyncs, not
 * N. Each append settles only after an fsync that began after its line was written (durable before it resolves).
 * A staged line (`stage`: written now, durable later) does not start an fsync by itself: it shares the fsync of
 * the next `append` (a call's completion record), or its own at most STAGED_SYNC_MS after it was written, so a
 * short call costs one fsync for its two records instead of two in a row.
 * A log file this appender creates has its folder fsync'd after its first fsync, before those records resolve: a power
 * loss cannot take the whole file (node/store/dirs.ts).
 * A write that fails (full disk) rejects the records it did not write whole with E_STORE; the records written
 * whole before it are still synced and resolved. An fsync that fails rejects the records it covered.
 * The cheap steps (open, fstat, 1-byte read, write, close) run synchronously on the calling thread; only fsync
 * (fdatasync: the data and the size that makes it readable) goes to the thread pool, handed over once the current
 * turn's continuations ran (setImmediate); a round of at most two records while no other staged line waits for its
 * append (a sequential caller) is fsync'd on the calling thread instead (same durability, one thread hand-over
 * less), so concurrent callers do not block the thread on an fsync.
 */
export class GroupAppender {
  #queue: Pending[] = [];
  #flushing = false;
  #unsynced: Written[] = [];
  #syncing = false;
  /** Written lines all staged: the sync waits for an append or this timer (STAGED_SYNC_MS). */
  #stagedTimer: ReturnType<typeof setTimeout> | undefined;
  /**
   * Staged lines not yet followed by an append (each call stages its intent record, then appends its completion):
   * about the calls in flight. Zero while a caller works sequentially.
   */
  #open = 0;
  /** fsyncs done, records they made durable, and fsyncs run on the calling thread, since creation. */
  readonly stats = { batches: 0, records: 0, inline: 0 };
  constructor(readonly path: string) {}

  /**
   * Append one record (`line` without its newline); resolves once it is written and fsync'd. @throws TyError E_STORE
   */
  append(line: string): Promise<void> {
    if (this.#open > 0) this.#open--;
    return new Promise<void>((resolve, reject) =>
      this.#push({ bytes: Buffer.from(`${line}\n`, 'utf8'), resolve, reject }),
    );
  }

  /**
   * Append one record in two steps: resolves once the line is written (the OS holds it: a host process killed
   * from now on cannot lose it), with `durable`, which settles once it is fsync'd (rejecting with E_STORE if it
   * cannot be). @throws TyError E_STORE when the line cannot be written
   */
  stage(line: string): Promise<{ durable: Promise<void> }> {
    this.#open++;
    return new Promise((written, failed) => {
      const durable = new Promise<void>((resolve, reject) => {
        this.#push({
          bytes: Buffer.from(`${line}\n`, 'utf8'),
          resolve,
          reject: (e) => {
            reject(e);
            failed(e);
          },
          onWritten: () => written({ durable }),
        });
      });
      durable.catch(() => {});
    });
  }

  /**
   * Resolves after an fsync that began after every line written so far through this appender (staged ones
   * included) and, since fsync flushes the file whoever wrote it, through any other descriptor of the file: a
   * write-ahead point for an effect that must not be on disk before the records that precede it.
   * @throws TyError E_STORE when the fsync fails
   */
  sync(): Promise<void> {
    // an empty record: written (nothing) now, so the next fsync must begin after this point
    return new Promise<void>((resolve, reject) => this.#push({ bytes: Buffer.alloc(0), resolve, reject }));
  }

  #push(p: Pending): void {
    this.#queue.push(p);
    if (!this.#flushing) {
      this.#flushing = true;
      // the appends of this turn of the event loop go out in the same writes
      queueMicrotask(() => this.#flush());
    }
  }

  #flush(): void {
    this.#flushing = false;
    const batch = this.#queue;
    this.#queue = [];
    // Lines waiting for the next fsync share its descriptor (at most two are open: one syncing, one filling),
    // while the path still names the same file.
    let open = this.#unsynced[this.#unsynced.length - 1];
    if (open && !namesFile(this.path, open.fd)) open = undefined;
    let fd: number;
    let created = false;
    if (open) fd = open.fd;
    else {
      try {
        ({ fd, created } = openLogSync(this.path));
      } catch (e) {
        for (const p of batch) p.reject(storeError(this.path, e));
        return;
      }
    }
    let written = 0; // records of `batch` written whole
    let failure: unknown;
    try {
      let i = 0;
      while (i < batch.length) {
        // one write: as many whole lines as fit in CHUNK_BYTES (at least one)
        let j = i;
        let size = 0;
        while (j < batch.length && (j === i || size + batch[j]!.bytes.length <= CHUNK_BYTES - 1))
          size += batch[j++]!.bytes.length;
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
    for (let k = written; k < batch.length; k++) batch[k]!.reject(storeError(this.path, failure));
    if (written === 0) {
      if (!open) closeQuietly(fd);
      return;
    }
    const records = written === batch.length ? batch : batch.slice(0, written);
    if (open) for (const p of records) open.records.push(p);
    else this.#unsynced.push({ fd, records, created });
    let wanted = false; // an append waits for this fsync (staged lines only: they may wait for company)
    for (const p of records) {
      if (p.onWritten) p.onWritten();
      else wanted = true;
    }
    if (this.#syncing) return;
    if (wanted) {
      this.#startSync();
      return;
    }
    if (this.#stagedTimer === undefined) {
      this.#stagedTimer = setTimeout(() => {
        this.#stagedTimer = undefined;
        if (!this.#syncing && this.#unsynced.length > 0) void this.#sync();
      }, STAGED_SYNC_MS);
    }
  }

  #startSync(): void {
    if (this.#stagedTimer !== undefined) {
      clearTimeout(this.#stagedTimer);
      this.#stagedTimer = undefined;
    }
    void this.#sync();
  }

  /**
   * fsync what was written so far (one fsync per file behind the descriptors); repeat while more was written meanwhile.
   */
  async #sync(): Promise<void> {
    this.#syncing = true;
    try {
      let first = true;
      while (this.#unsynced.length > 0) {
        let count = 0;
        for (const w of this.#unsynced) count += w.records.length;
        // a small round with no other call in flight (a sequential caller: nothing else to do until this record is
        // durable): fsync on this thread, sparing the thread pool's hand-over and the wake-up back; otherwise
        // (concurrent callers) the fsync goes to the pool, keeping this thread free for the other calls meanwhile
        const inline = first && count <= 2 && this.#open === 0;
        first = false;
        // handing the fsync to the thread pool costs a thread wake-up: let this turn's continuations (a gated call
        // forwarding its request while its intent record syncs) run first; records written meanwhile join
        if (!inline) await new Promise<void>((r) => setImmediate(r));
        const group = this.#unsynced;
        this.#unsynced = [];
        let failure: unknown;
        const seen = new Set<string>();
        for (const w of group) {
          if (failure !== undefined) break;
          try {
            // fsync flushes the file, whichever descriptor wrote to it: one per file (one descriptor: nothing to
            // compare)
            if (group.length > 1) {
              const st = fstatSync(w.fd);
              const id = `${st.dev}:${st.ino}`;
              if (seen.has(id)) continue;
              seen.add(id);
            }
            // fdatasync: the appended bytes and the size that makes them readable, without an mtime-only journal write
            if (inline) fdatasyncSync(w.fd);
            else await new Promise<void>((res, rej) => fdatasync(w.fd, (err) => (err ? rej(err) : res())));
          } catch (e) {
            failure = e;
          }
        }
        // a log created by this appender: its folder's entry, so that a power loss cannot take the whole file
        if (failure === undefined && group.some((w) => w.created)) {
          if (inline) syncDirSync(dirname(this.path));
          else await syncDir(dirname(this.path));
        }
        if (inline) this.stats.inline++;
        let n = 0;
        for (const w of group) {
          closeQuietly(w.fd);
          for (const p of w.records) {
            if (failure === undefined) p.resolve(), n++;
            else p.reject(storeError(this.path, failure));
          }
        }
        if (failure === undefined) {
          this.stats.batches++;
          this.stats.records += n;
        }
      }
    } finally {
      this.#syncing = false;
    }
  }
}

/** True when `path` is the file open on `fd` (not removed or replaced since). */
function namesFile(path: string, fd: number): boolean {
  try {
    const a = fstatSync(fd);
    const b = statSync(path);
    return a.ino === b.ino && a.dev === b.dev;
  } catch {
    return false;
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    /* nothing to do: the records are written (and synced, or failed) */
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
  return new TyError(
    'E_STORE',
    `cannot append to log ${path.split('/').pop() ?? 'log'}: ${e instanceof Error ? e.message : String(e)}`,
  );
}
