// File-system StoreBackend for the CLI: atomic files, append-only logs, cross-process locks; Node host, trusted side.
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { readFile, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { TyError } from '../../core/errors.js';
import { UNGENERATED_NAMESPACES, checkKey, type StoreBackend } from '../../core/store/contract.js';
import { GroupAppender, appendLine } from './append.js';
import { sweepTempFiles, writeFileAtomic } from './atomic.js';
import { makeDurableDir } from './dirs.js';
import { StoreGeneration } from './generation.js';
import { DirLocks } from './lock.js';

/**
 * Longest line appended without taking the log's lock: Linux PIPE_BUF. O_APPEND writes of this size never interleave.
 */
const ATOMIC_APPEND_BYTES = 4096;

/** One generation counter per store root in this process, shared by every backend over it. */
const generations = new Map<string, StoreGeneration>();
function generationOf(root: string): StoreGeneration {
  let g = generations.get(root);
  if (!g) generations.set(root, (g = new StoreGeneration(root)));
  return g;
}

/** One group-commit appender per log file in this process, shared by every backend over the same root. */
const appenders = new Map<string, GroupAppender>();
function appenderFor(path: string): GroupAppender {
  let a = appenders.get(path);
  if (!a) appenders.set(path, (a = new GroupAppender(path)));
  return a;
}

export interface FileStoreOptions {
  /** Give up waiting for a lock after this long, ms (default 30 000) -> E_BUSY. */
  lockTimeoutMs?: number;
  /**
   * A lock of another machine, or whose owner's start time is unknown (no /proc), is taken over after this long,
   * ms (default 600 000). On Linux a same-machine owner is judged by pid plus process start time (node/store/lock.ts).
   */
  lockStaleMs?: number;
  /**
   * Most store operations holding file descriptors at once (default DEFAULT_MAX_OPEN_FILES); the rest wait their
   * turn in order. Bounds the store's descriptors however many calls are in flight.
   */
  maxOpenFiles?: number;
}

/** Default bound on the store's concurrent file operations (FileStoreOptions.maxOpenFiles). */
export const DEFAULT_MAX_OPEN_FILES = 64;

/** A counting semaphore: at most `max` holders, the rest queued first come, first served. */
class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];
  constructor(max: number) {
    this.#free = max;
  }
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((r) => this.#waiting.push(r));
    try {
      return await fn();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#free++;
    }
  }
}

/** Records up to this size are read synchronously (open, fstat, read, close on the calling thread). */
const SYNC_READ_BYTES = 64 * 1024;
/** An entry changed this recently (ms) is not vouched for by its stamp (FileStoreBackend.stamp). */
const RACY_MS = 2000;

/**
 * The bytes of a small file read synchronously, or undefined when it is larger than SYNC_READ_BYTES (the caller
 * then reads it through the thread pool). Store records (bindings, decisions, pause state, small manifests) are
 * read on every call; from the page cache one synchronous read costs about a tenth of the four thread-pool round
 * trips of fs/promises readFile. Holds one descriptor, closed before returning. @throws the fs error (ENOENT, ...)
 */
function readSmallSync(path: string): Uint8Array | undefined {
  const fd = openSync(path, 'r');
  try {
    const { size } = fstatSync(fd);
    if (size > SYNC_READ_BYTES) return undefined;
    // one byte more than the size: a file that grew meanwhile is read whole by the async path instead
    const buf = new Uint8Array(size + 1);
    let n = 0;
    for (let r; n < buf.length && (r = readSync(fd, buf, n, buf.length - n, null)) > 0; ) n += r;
    return n <= size ? buf.subarray(0, n) : undefined;
  } finally {
    closeSync(fd);
  }
}

function isErrno(e: unknown, code: string): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === code;
}

/**
 * The CLI's store: `<root>/<ns>/<key>` files (0600) in folders (0700).
 * - put: node/store/atomic.ts writeFileAtomic with its temp file in `<root>/.tmp` (named `<pid>.<random>`): fsync,
 *   rename over the target, fsync the folder (readers see the old bytes or the new ones). Temp files of dead writers
 *   are swept on a process's first write. A put or delete of a record (not objects, tasks or tool storage) then moves
 *   the store's generation (`<root>/.generation`, node/store/generation.ts), so every process's readers see it.
 * - append: lines up to PIPE_BUF are group-committed (node/store/append.ts GroupAppender): the lines appended while
 *   an fsync is in flight go out in whole-line `write`s of at most PIPE_BUF bytes on an O_APPEND descriptor
 *   and share the next fsync; each append resolves only once its line is durable. Longer lines take the log's
 *   lock and are written alone. A torn tail (a write cut short by a full disk) never merges with the next
 *   line: node/store/append.ts appendLine starts the record on a fresh line. Logs live in `<root>/.logs/<name>`.
 * - withLock: a lock folder `<root>/.locks/<name>` holding `owner.json` {pid, start, host, token, at}, made whole
 *   before it appears (node/store/lock.ts DirLocks): a lock whose owner is no longer the process that took it (pid gone
 *   or reused, told by its start time) is recovered within a second. Also serialized within the process. Not
 *   reentrant: do not take the same name inside `fn`.
 * - every file-system step holds one of `maxOpenFiles` slots, so the store's descriptors stay bounded (no EMFILE
 *   however many calls are in flight); a group-committed log holds one descriptor of its own while it commits.
 */
export class FileStoreBackend implements StoreBackend {
  readonly #local = new Map<string, Promise<unknown>>();
  readonly #slots: Slots;
  readonly #locks: DirLocks;
  /** Run one file-system step within the store's bound on open files. */
  readonly #io = <T>(fn: () => Promise<T>): Promise<T> => this.#slots.run(fn);
  #made = new Set<string>();
  #swept = false;

  constructor(
    readonly root: string,
    opts: FileStoreOptions = {},
  ) {
    const max = opts.maxOpenFiles ?? DEFAULT_MAX_OPEN_FILES;
    if (!Number.isSafeInteger(max) || max < 1) throw new TyError('E_USAGE', 'maxOpenFiles must be a positive integer');
    this.#slots = new Slots(max);
    this.#locks = new DirLocks(join(root, '.locks'), {
      timeoutMs: opts.lockTimeoutMs ?? 30_000,
      staleMs: opts.lockStaleMs ?? 600_000,
      io: this.#io,
    });
  }

  /** `root/ns/key` of entries read on every call (stamp), joined once; bounded. */
  readonly #paths = new Map<string, string>();
  #path(ns: string, key: string): string {
    const k = `${ns}/${key}`;
    let p = this.#paths.get(k);
    if (p === undefined) {
      if (this.#paths.size >= 4096) this.#paths.clear();
      p = join(this.root, ns, key);
      this.#paths.set(k, p);
    }
    return p;
  }

  async #dir(...parts: string[]): Promise<string> {
    const d = parts.length === 1 ? this.#path(parts[0]!, '') : join(this.root, ...parts);
    if (!this.#made.has(d)) {
      // a folder made now survives a power loss with what is written into it (its parents fsync'd)
      await this.#io(() => makeDurableDir(d, 0o700));
      this.#made.add(d);
    }
    return d;
  }

  async get(ns: string, key: string): Promise<Uint8Array | undefined> {
    checkKey(ns, key);
    try {
      const path = join(this.root, ns, key);
      return readSmallSync(path) ?? new Uint8Array(await this.#io(() => readFile(path)));
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return undefined;
      throw new TyError('E_STORE', `cannot read store entry ${ns}/${key}: ${(e as Error).message}`);
    }
  }

  /**
   * See StoreBackend.stamp: `dev:ino:size:mtime:ctime` (ms, fractional) of the entry's file, `absent` when there is
   * none; undefined
   * for a file changed within the last RACY_MS (its timestamps are coarser than writes can follow each other, so a
   * rewrite of the same size could keep the stamp: such an entry is read, as git treats racily clean files).
   * Every write replaces the file (rename: a new inode) or removes it, so any change moves the stamp.
   */
  stamp(ns: string, key: string): string | undefined {
    checkKey(ns, key);
    let st;
    try {
      // a plain stat (half the cost of a bigint one): every write replaces the file (a new inode), which the stamp
      // carries
      st = statSync(this.#path(ns, key), { throwIfNoEntry: false });
    } catch {
      return undefined;
    }
    if (st === undefined) return 'absent';
    if (!st.isFile()) return undefined;
    const now = Date.now();
    if (now - st.mtimeMs < RACY_MS || now - st.ctimeMs < RACY_MS) return undefined;
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  }

  async put(ns: string, key: string, bytes: Uint8Array): Promise<void> {
    checkKey(ns, key);
    const dir = await this.#dir(ns);
    const tmpDir = await this.#dir('.tmp');
    await this.#io(() => this.#atomicWrite(dir, tmpDir, key, bytes));
    this.#changed(ns);
  }

  /**
   * See StoreBackend.generation: `<root>/.generation`'s stamp (node/store/generation.ts), one statx at most per
   * GENERATION_REUSE_MS; every put and delete outside UNGENERATED_NAMESPACES moves it, by any process.
   */
  generation(): string | undefined {
    return generationOf(this.root).current();
  }

  /** A record of `ns` was written or deleted: move the generation (after the change, so readers then see it). */
  #changed(ns: string): void {
    if (!UNGENERATED_NAMESPACES.has(ns)) generationOf(this.root).bump();
  }

  /** Runs inside one #io slot (it holds at most one descriptor at a time). */
  async #atomicWrite(dir: string, tmpDir: string, name: string, bytes: Uint8Array): Promise<void> {
    // Once per process: remove temp files left by writers that died mid-write (their pid is gone).
    if (!this.#swept) {
      this.#swept = true;
      await sweepTempFiles(tmpDir);
    }
    try {
      await writeFileAtomic(join(dir, name), bytes, { tmpDir });
    } catch (e) {
      throw new TyError('E_STORE', `cannot write store entry ${name}: ${(e as Error).message}`);
    }
  }

  async delete(ns: string, key: string): Promise<void> {
    checkKey(ns, key);
    await this.#io(() => rm(join(this.root, ns, key), { force: true }));
    this.#changed(ns);
  }

  async list(ns: string): Promise<string[]> {
    checkKey(ns);
    try {
      const names = await this.#io(() => readdir(join(this.root, ns)));
      return names.filter((n) => !n.startsWith('.')).sort();
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return [];
      throw new TyError('E_STORE', `cannot list store namespace ${ns}: ${(e as Error).message}`);
    }
  }

  /** The group-commit appender of a log (its folder made on first use), kept per log name. */
  readonly #appenders = new Map<string, GroupAppender>();
  async #appenderOf(log: string): Promise<GroupAppender> {
    let a = this.#appenders.get(log);
    if (!a) this.#appenders.set(log, (a = appenderFor(join(await this.#dir('.logs'), log))));
    return a;
  }

  async append(log: string, line: string): Promise<void> {
    checkKey(log);
    if (/[\n\r]/.test(line)) throw new TyError('E_STORE', 'a log line must not contain a line break');
    // Short lines: group commit (one fsync for the appends in flight together; each durable before it resolves).
    if (Buffer.byteLength(line, 'utf8') < ATOMIC_APPEND_BYTES - 1)
      return (this.#appenders.get(log) ?? (await this.#appenderOf(log))).append(line);
    const dir = await this.#dir('.logs');
    await this.withLock(`log.${log}`, async () => {
      try {
        await this.#io(() => appendLine(join(dir, log), line));
      } catch (e) {
        throw e instanceof TyError ? e : new TyError('E_STORE', `cannot append to log ${log}: ${(e as Error).message}`);
      }
    });
  }

  /**
   * See StoreBackend.appendStaged: short lines are written at once and fsync'd by the group commit; longer ones in one
   * step.
   */
  async appendStaged(log: string, line: string): Promise<{ durable: Promise<void> }> {
    checkKey(log);
    if (/[\n\r]/.test(line)) throw new TyError('E_STORE', 'a log line must not contain a line break');
    if (Buffer.byteLength(line, 'utf8') < ATOMIC_APPEND_BYTES - 1)
      return (this.#appenders.get(log) ?? (await this.#appenderOf(log))).stage(line);
    await this.append(log, line);
    return { durable: Promise.resolve() };
  }

  /** See StoreBackend.syncLog: one fsync (group-committed) that begins after every line written to `log` so far. */
  async syncLog(log: string): Promise<void> {
    checkKey(log);
    await (this.#appenders.get(log) ?? (await this.#appenderOf(log))).sync();
  }

  async readLog(log: string): Promise<string[]> {
    checkKey(log);
    let text: string;
    try {
      text = await this.#io(() => readFile(join(this.root, '.logs', log), 'utf8'));
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return [];
      throw new TyError('E_STORE', `cannot read log ${log}: ${(e as Error).message}`);
    }
    const lines = text.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    return lines;
  }

  async withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    checkKey(name);
    // In-process queue first, so this process never polls against itself.
    const prev = this.#local.get(name) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const chained = prev.then(() => mine);
    this.#local.set(name, chained);
    await prev.catch(() => {});
    try {
      const token = await this.#locks.acquire(name);
      try {
        return await fn();
      } finally {
        await this.#locks.release(name, token);
      }
    } finally {
      release();
      if (this.#local.get(name) === chained) this.#local.delete(name);
    }
  }
}
