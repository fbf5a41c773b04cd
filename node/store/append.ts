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
 * Longest a written line nobody waits for (a staged line not yet begun, a call's completion record) waits for an
 * fsync it can share before it gets its own, ms. The line is in the kernel from the start (a killed host process
 * cannot lose it); the wait bounds only how long a power loss could.
 */
export const STAGED_SYNC_MS = 50;
/** The held descriptor is closed after this long without a write, ms (a quiet process holds no log open). */
export const IDLE_CLOSE_MS = 5000;

interface Pending {
  bytes: Buffer;
  resolve: () => void;
  reject: (e: unknown) => void;
  /** Told once the line is written (in the kernel: a host killed now cannot lose it), before it is durable. */
  onWritten?: () => void;
  /** Someone waits for this record's fsync now (an append, a sync point, a staged line whose fsync was begun). */
  awaited: boolean;
  /** Begun by a caller with no other call in flight (StagedLine.begin); appends and sync points count as alone. */
  alone: boolean;
  /** Settled (durable or failed). */
  done: boolean;
}

/** Lines written through one descriptor, waiting for an fsync that began after they were written. */
interface Written {
  fd: number;
  /** `dev:ino` of the file behind `fd`: one fsync per file. */
  file: string;
  records: Pending[];
  /** When its first record was written (performance.now(), ms): the STAGED_SYNC_MS bound runs from here. */
  at: number;
}

/** What a staged append returns: `durable` settles once the line is on disk; `begin()` asks for that fsync now. */
export interface StagedLine {
  durable: Promise<void>;
  /**
   * Start the fsync that makes this line durable now instead of waiting for company (an append, or STAGED_SYNC_MS).
   * `alone`: the caller has no other call in flight (a sequential caller, whose call runs in its sandbox meanwhile):
   * the fsync runs on this thread when no other record is pending but one; otherwise through the thread pool, shared
   * with the records written by then. Idempotent.
   */
  begin(alone?: boolean): void;
}

/**
 * Group commit for one log file, on one O_APPEND descriptor held open by this appender (the one descriptor of this
 * process for the file; reopened when the path names another file, i.e. the log was removed, rotated or replaced:
 * one statx of the path per write, never a write to an unlinked file; closed after IDLE_CLOSE_MS without writes).
 * Lines appended in one turn of the event loop are written at once, in whole-line writes of at most 4096 bytes
 * (never a line split across writes). A torn tail (a write cut short by a full disk, a crash mid-write: the file does
 * not end with a newline) never merges with the next record: the file's last byte is read, and a newline written
 * first, when the file is new to this descriptor or its size is not where this appender's last write ended (another
 * process wrote, or a write of ours was cut short).
 * Written lines wait for the next fsync (fdatasync: the data and the size that makes it readable): one runs at a
 * time, and every line written while it runs shares the one after it, so N concurrent appends cost a few fsyncs, not
 * N. Each `append` and `sync` settles only after an fsync that began after its line was written.
 * A staged line (`stage`: written now, durable later) starts no fsync by itself: `begin()` starts it (a call's intent
 * record, once its arguments are on their way to the sandbox: the fsync overlaps the tool's run), else it shares the
 * next commit, or gets its own STAGED_SYNC_MS after it was written (a call's completion record, which no answer
 * waits for, is never begun: it joins the next commit).
 * An fsync whose records someone waits for runs on the calling thread when no other record is pending but one and its
 * caller says it has no other call in flight (a sequential caller has nothing else to do meanwhile: one thread
 * hand-over less), else on the thread pool, handed
 * over once the current turn's continuations ran (setImmediate), so concurrent callers never block on it.
 * A log file this appender creates has its folder fsync'd with the next fsync, before those records resolve: a power
 * loss cannot take the whole file (node/store/dirs.ts).
 * A write that fails (full disk) rejects the records it did not write whole with E_STORE; the records written whole
 * before it are still synced and resolved. An fsync that fails rejects the records it covered.
 */
export class GroupAppender {
  #queue: Pending[] = [];
  #flushing = false;
  #unsynced: Written[] = [];
  #syncing = false;
  /** Written lines nobody waits for yet: their fsync waits for company or this timer (STAGED_SYNC_MS). */
  #stagedTimer: ReturnType<typeof setTimeout> | undefined;
  /** The held descriptor, its file's `dev:ino`, and the file size where our last whole write ended (or unknown). */
  #fd: number | undefined;
  /** This appender created the log file and its folder has not been fsync'd since (the next sync does it). */
  #dirUnsynced = false;
  #file = '';
  #end: number | undefined;
  /** Descriptors no longer held (the path names another file now), closed once their records are synced. */
  #retired = new Set<number>();
  #lastWrite = 0;
  #idleTimer: ReturnType<typeof setTimeout> | undefined;
  /** Records awaited (append, sync, begun stage) and not yet settled, written or still queued. */
  #awaited = 0;
  /**
   * fsyncs done, records they made durable, fsyncs run on the calling thread, writes, descriptors opened, last-byte
   * reads (torn-tail checks) and fsyncs run as the process exited, since creation.
   */
  readonly stats = { batches: 0, records: 0, inline: 0, writes: 0, opens: 0, tailReads: 0, atExit: 0 };
  constructor(readonly path: string) {}

  /**
   * Append one record (`line` without its newline); resolves once it is written and fsync'd. @throws TyError E_STORE
   */
  append(line: string): Promise<void> {
    return new Promise<void>((resolve, reject) =>
      this.#push(this.#pending(Buffer.from(`${line}\n`, 'utf8'), resolve, reject, true)),
    );
  }

  /**
   * Append one record in two steps: resolves once the line is written (the OS holds it: a host process killed
   * from now on cannot lose it), with `durable`, which settles once it is fsync'd (rejecting with E_STORE if it
   * cannot be), and `begin()`, which starts that fsync now; a line never begun (a call's completion record, which no
   * answer waits for) joins the next commit. @throws TyError E_STORE when the line cannot be written
   */
  stage(line: string): Promise<StagedLine> {
    return new Promise((written, failed) => {
      let p!: Pending;
      const durable = new Promise<void>((resolve, reject) => {
        p = this.#pending(
          Buffer.from(`${line}\n`, 'utf8'),
          resolve,
          (e) => {
            reject(e);
            failed(e);
          },
          false,
        );
        p.onWritten = () => written({ durable, begin: (alone?: boolean) => this.#begin(p, alone === true) });
      });
      durable.catch(() => {});
      this.#push(p);
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
    return new Promise<void>((resolve, reject) => this.#push(this.#pending(Buffer.alloc(0), resolve, reject, true)));
  }

  /**
   * Make the lines written and not yet durable durable now (one fsync), or nothing when there are none: what a
   * closing host does for its last calls' completion records. @throws TyError E_STORE when the fsync fails
   */
  async settle(): Promise<void> {
    if (this.#queue.length === 0 && this.#unsynced.length === 0 && !this.#syncing) return;
    await this.sync();
  }

  /** Make every line written so far durable (sync), then close the held descriptor. Idempotent. */
  async close(): Promise<void> {
    await this.sync().catch(() => {});
    this.#closeHeld();
  }

  #pending(bytes: Buffer, resolve: () => void, reject: (e: unknown) => void, awaited: boolean): Pending {
    if (awaited) this.#awaited++;
    const p: Pending = {
      bytes,
      resolve: () => {
        if (p.done) return;
        p.done = true;
        if (p.awaited) this.#awaited--;
        resolve();
      },
      reject: (e) => {
        if (p.done) return;
        p.done = true;
        if (p.awaited) this.#awaited--;
        reject(e);
      },
      awaited,
      alone: true,
      done: false,
    };
    return p;
  }

  #begin(p: Pending, alone: boolean): void {
    if (p.done || p.awaited) return;
    p.awaited = true;
    p.alone = alone;
    this.#awaited++;
    this.#startSync();
  }

  #push(p: Pending): void {
    this.#queue.push(p);
    if (!this.#flushing) {
      this.#flushing = true;
      // the appends of this turn of the event loop go out in the same writes
      queueMicrotask(() => this.#flush());
    }
  }

  /**
   * The held descriptor, (re)opened when the path names another file than the one it holds, and whether the file's
   * tail must be checked before writing (a new descriptor, or the size is not where our last write ended).
   * @throws the fs error of open
   */
  #descriptor(): { fd: number; size: number; check: boolean } {
    const st = statSync(this.path, { throwIfNoEntry: false });
    if (this.#fd !== undefined && st !== undefined && `${st.dev}:${st.ino}` === this.#file)
      return { fd: this.#fd, size: st.size, check: st.size !== this.#end };
    const { fd, created } = openLogSync(this.path);
    if (created) this.#dirUnsynced = true;
    this.stats.opens++;
    let now;
    try {
      now = fstatSync(fd);
    } catch (e) {
      closeQuietly(fd);
      throw e;
    }
    this.#retireHeld();
    this.#fd = fd;
    this.#file = `${now.dev}:${now.ino}`;
    this.#end = undefined;
    return { fd, size: now.size, check: true };
  }

  /** Stop holding the descriptor: closed now, or once the records written through it are synced. */
  #retireHeld(): void {
    const fd = this.#fd;
    if (fd === undefined) return;
    this.#fd = undefined;
    this.#end = undefined;
    if (this.#unsynced.some((w) => w.fd === fd) || this.#syncing) this.#retired.add(fd);
    else closeQuietly(fd);
  }

  #closeHeld(): void {
    if (this.#idleTimer !== undefined) clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
    if (this.#queue.length > 0 || this.#unsynced.length > 0 || this.#syncing) return;
    this.#retireHeld();
  }

  /** Close the held descriptor after IDLE_CLOSE_MS without writes (checked when the unreferenced timer fires). */
  #armIdleClose(): void {
    this.#lastWrite = Date.now();
    if (this.#idleTimer !== undefined) return;
    const fire = (): void => {
      const left = this.#lastWrite + IDLE_CLOSE_MS - Date.now();
      if (left > 0) {
        this.#idleTimer = setTimeout(fire, left);
        (this.#idleTimer as { unref?: () => void }).unref?.();
        return;
      }
      this.#idleTimer = undefined;
      this.#closeHeld();
    };
    this.#idleTimer = setTimeout(fire, IDLE_CLOSE_MS);
    (this.#idleTimer as { unref?: () => void }).unref?.();
  }

  #flush(): void {
    this.#flushing = false;
    const batch = this.#queue;
    this.#queue = [];
    let d: { fd: number; size: number; check: boolean };
    try {
      d = this.#descriptor();
    } catch (e) {
      for (const p of batch) p.reject(storeError(this.path, e));
      return;
    }
    const { fd } = d;
    let written = 0; // records of `batch` written whole
    let total = 0; // bytes written
    let failure: unknown;
    try {
      let i = 0;
      let torn = d.check && tornTail(fd, d.size, this.stats);
      while (i < batch.length) {
        // one write: as many whole lines as fit in CHUNK_BYTES (at least one)
        let j = i;
        let size = 0;
        while (j < batch.length && (j === i || size + batch[j]!.bytes.length <= CHUNK_BYTES - 1))
          size += batch[j++]!.bytes.length;
        if (size === 0 && !torn) {
          written = i = j; // sync points only: nothing to write
          continue;
        }
        const parts = batch.slice(i, j).map((p) => p.bytes);
        const buf = torn ? Buffer.concat([NEWLINE, ...parts]) : parts.length === 1 ? parts[0]! : Buffer.concat(parts);
        const n = writeSync(fd, buf, 0, buf.length);
        this.stats.writes++;
        total += n;
        if (n !== buf.length) {
          // count the records that made it whole; the rest fail (the torn tail is repaired before the next write)
          let end = torn ? 1 : 0;
          for (let k = i; k < j && end + batch[k]!.bytes.length <= n; k++) (end += batch[k]!.bytes.length), written++;
          throw new TyError('E_STORE', `short write to ${this.path.split('/').pop() ?? 'log'} (disk full?)`);
        }
        torn = false;
        written = i = j;
      }
      this.#end = d.size + total;
    } catch (e) {
      failure = e;
      this.#end = undefined; // the tail is unknown: checked before the next write
    }
    for (let k = written; k < batch.length; k++) batch[k]!.reject(storeError(this.path, failure));
    if (written === 0) return;
    this.#armIdleClose();
    const records = written === batch.length ? batch : batch.slice(0, written);
    const last = this.#unsynced[this.#unsynced.length - 1];
    if (last !== undefined && last.fd === fd) for (const p of records) last.records.push(p);
    else this.#unsynced.push({ fd, file: this.#file, records, at: performance.now() });
    let wanted = false; // someone waits for this fsync (not only lines that may wait for company)
    for (const p of records) {
      if (p.onWritten) p.onWritten();
      if (p.awaited) wanted = true;
    }
    if (wanted) this.#startSync();
    else if (this.#stagedTimer === undefined) {
      // One timer at a time, never cleared (no timer work per call): it syncs what is still unsynced once the oldest
      // line has waited STAGED_SYNC_MS. Unreferenced: a process may end meanwhile, and syncs what is left as it exits
      // (syncAtExit).
      this.#armStaged(STAGED_SYNC_MS);
      syncAtExit(this);
    }
  }

  /**
   * The STAGED_SYNC_MS timer: when it fires, the oldest line still unsynced decides: written STAGED_SYNC_MS ago, it
   * gets its fsync now (with whatever else is unsynced); else the timer waits for the rest of its time.
   */
  #armStaged(ms: number): void {
    this.#stagedTimer = setTimeout(() => {
      this.#stagedTimer = undefined;
      if (this.#syncing) return; // a round is running: it re-arms for what it leaves (#sync)
      const left = this.#stagedLeft();
      if (left === undefined) return;
      if (left > 1) this.#armStaged(left);
      else void this.#sync(true);
    }, ms);
    (this.#stagedTimer as { unref?: () => void }).unref?.();
  }

  /** ms until the oldest unsynced line has waited STAGED_SYNC_MS (undefined when none is unsynced). */
  #stagedLeft(): number | undefined {
    if (this.#unsynced.length === 0) return undefined;
    let oldest = Infinity;
    for (const w of this.#unsynced) oldest = Math.min(oldest, w.at);
    return oldest + STAGED_SYNC_MS - performance.now();
  }

  /**
   * fsync, on this thread, every file with records written and not yet synced (the process is exiting: no promise
   * will be answered any more; what matters is that the records are on disk before it is gone). Never throws.
   */
  syncNow(): void {
    const seen = new Set<string>();
    for (const w of this.#unsynced) {
      if (seen.has(w.file)) continue;
      seen.add(w.file);
      try {
        fdatasyncSync(w.fd);
        this.stats.atExit++;
      } catch {
        /* nothing more can be done while exiting */
      }
    }
  }

  #startSync(): void {
    if (this.#syncing) return; // the running round loops for what was written meanwhile
    if (!this.#unsynced.some((w) => w.records.some((p) => p.awaited))) return; // awaited ones not written yet
    void this.#sync();
  }

  /**
   * fsync what was written so far (one fsync per file behind the descriptors); repeat while more was written meanwhile.
   */
  async #sync(timed = false): Promise<void> {
    this.#syncing = true;
    try {
      let first = true;
      // rounds go on while someone waits: lines nobody waits for (completion records) ride along with the next
      // awaited commit, or the STAGED_SYNC_MS timer's, never an fsync of their own in between
      while ((timed && this.#unsynced.length > 0) || this.#unsynced.some((w) => w.records.some((p) => p.awaited))) {
        const awaitedRound = !timed;
        timed = false;
        // one awaited record and at most one other record not yet durable (a sequential caller: its intent record and
        // the previous call's completion; nothing else to do until it is durable, its call running in its sandbox
        // meanwhile): fsync on this thread, sparing the thread pool's hand-over and the wake-up back; otherwise
        // (concurrent callers: other calls' intent records written or on their way) the fsync goes to the pool,
        // keeping this thread free for the other calls meanwhile
        const inline = first && awaitedRound && this.#awaited <= 1 && this.#idleRecords() <= 1 && this.#awaitedAlone();
        first = false;
        // handing the fsync to the thread pool costs a thread wake-up: let this turn's continuations (calls sending
        // their arguments while their intent records sync) run first; records written meanwhile join
        if (!inline) await new Promise<void>((r) => setImmediate(r));
        const group = this.#unsynced;
        this.#unsynced = [];
        let failure: unknown;
        const seen = new Set<string>();
        for (const w of group) {
          if (failure !== undefined) break;
          // fsync flushes the file, whichever descriptor wrote to it: one per file
          if (seen.has(w.file)) continue;
          seen.add(w.file);
          try {
            // fdatasync: the appended bytes and the size that makes them readable, without an mtime-only journal write
            if (inline) fdatasyncSync(w.fd);
            else await new Promise<void>((res, rej) => fdatasync(w.fd, (err) => (err ? rej(err) : res())));
          } catch (e) {
            failure = e;
          }
        }
        // a log this appender created: its folder's entry too, so that a power loss cannot take the whole file
        if (failure === undefined && this.#dirUnsynced) {
          try {
            if (inline) syncDirSync(dirname(this.path));
            else await syncDir(dirname(this.path));
            this.#dirUnsynced = false;
          } catch (e) {
            failure = e;
          }
        }
        if (inline) this.stats.inline++;
        let n = 0;
        for (const w of group) {
          for (const p of w.records) {
            if (failure === undefined) p.resolve(), n++;
            else p.reject(storeError(this.path, failure));
          }
        }
        if (failure === undefined) {
          this.stats.batches++;
          this.stats.records += n;
        }
        this.#closeRetired();
      }
    } finally {
      this.#syncing = false;
      // lines nobody waited for, left unsynced by this round: their STAGED_SYNC_MS bound still holds
      const left = this.#stagedLeft();
      if (left !== undefined && this.#stagedTimer === undefined) this.#armStaged(Math.max(1, left));
    }
  }

  /** True when every awaited record written so far was begun by a caller with no other call in flight. */
  #awaitedAlone(): boolean {
    for (const w of this.#unsynced) for (const p of w.records) if (p.awaited && !p.alone) return false;
    return true;
  }

  /** Records written or queued, not yet durable, that nobody waits for yet (staged lines not begun). */
  #idleRecords(): number {
    let n = 0;
    for (const p of this.#queue) if (!p.awaited) n++;
    for (const w of this.#unsynced) for (const p of w.records) if (!p.awaited) n++;
    return n;
  }

  /** Close retired descriptors no unsynced record was written through. */
  #closeRetired(): void {
    for (const fd of this.#retired) {
      if (this.#unsynced.some((w) => w.fd === fd)) continue;
      this.#retired.delete(fd);
      closeQuietly(fd);
    }
  }
}

const NEWLINE = Buffer.from('\n');

/** Appenders that may hold written, unsynced records when the process exits. */
const atExit = new Set<GroupAppender>();

/**
 * Settle every appender of this process that may hold lines nobody waited for (GroupAppender.settle): a host's close()
 * makes its last completion records durable without waiting for their group commit. Never throws.
 */
export async function settleAppenders(): Promise<void> {
  await Promise.allSettled([...atExit].map((a) => a.settle()));
}
/**
 * Make `a`'s unsynced records durable when the process exits (process.exit included): a call's completion record,
 * whose fsync waits for the next group commit, is on disk before a one-shot command's process is gone.
 */
function syncAtExit(a: GroupAppender): void {
  if (atExit.size === 0)
    process.once('exit', () => {
      for (const x of atExit) x.syncNow();
      atExit.clear();
    });
  atExit.add(a);
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    /* nothing to do: the records are written (and synced, or failed) */
  }
}

/** True when the file behind `fd` (of `size` bytes) is not empty and does not end with a newline (one pread). */
function tornTail(fd: number, size: number, stats: { tailReads: number }): boolean {
  if (size === 0) return false;
  stats.tailReads++;
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
