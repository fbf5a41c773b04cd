// File-system StoreBackend for the CLI: atomic files, append-only logs, cross-process locks; Node host, trusted side.
import { randomBytes } from 'node:crypto';
import { constants as FS } from 'node:fs';
import { mkdir, open, readFile, readdir, rename, rm, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { TyError } from '../core/errors.js';
import { checkKey, type StoreBackend } from '../core/store.js';
import { appendLine } from './append.js';

/** Longest line appended without taking the log's lock: Linux PIPE_BUF. O_APPEND writes of this size never interleave. */
const ATOMIC_APPEND_BYTES = 4096;

export interface FileStoreOptions {
  /** Give up waiting for a lock after this long, ms (default 30 000) -> E_BUSY. */
  lockTimeoutMs?: number;
  /** A lock older than this is taken over even if its owner seems alive (pid reuse guard), ms (default 600 000). */
  lockStaleMs?: number;
}

interface LockOwner {
  pid: number;
  host: string;
  token: string;
  at: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function isErrno(e: unknown, code: string): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === code;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return !isErrno(e, 'ESRCH');
  }
}

/**
 * The CLI's store: `<root>/<ns>/<key>` files (0600) in folders (0700).
 * - put: write a temp file in `<root>/.tmp` (named `<pid>.<random>`), fsync, rename over the target, fsync
 *   the folder (POSIX rename is atomic: readers see the old bytes or the new ones). Temp files of dead
 *   writers are swept on a process's first write.
 * - append: one `write` on an O_APPEND descriptor per line (atomic for lines up to PIPE_BUF); longer
 *   lines take the log's lock. A torn tail (a write cut short by a full disk) never merges with the next
 *   line: node/append.ts appendLine starts the record on a fresh line. Logs live in `<root>/.logs/<name>`.
 * - withLock: a `mkdir` lock folder `<root>/.locks/<name>` holding `owner.json` {pid, host, token, at};
 *   a lock whose owner process is gone (same host), whose owner file never appeared within 10 s, or
 *   older than `lockStaleMs` is taken over under a second "steal" lock so two waiters never both take it.
 *   Also serialized within the process. Not reentrant: do not take the same name inside `fn`.
 */
export class FileStoreBackend implements StoreBackend {
  readonly #timeout: number;
  readonly #stale: number;
  readonly #local = new Map<string, Promise<unknown>>();
  #made = new Set<string>();
  #swept = false;

  constructor(readonly root: string, opts: FileStoreOptions = {}) {
    this.#timeout = opts.lockTimeoutMs ?? 30_000;
    this.#stale = opts.lockStaleMs ?? 600_000;
  }

  async #dir(...parts: string[]): Promise<string> {
    const d = join(this.root, ...parts);
    if (!this.#made.has(d)) {
      await mkdir(d, { recursive: true, mode: 0o700 });
      this.#made.add(d);
    }
    return d;
  }

  async get(ns: string, key: string): Promise<Uint8Array | undefined> {
    checkKey(ns, key);
    try {
      return new Uint8Array(await readFile(join(this.root, ns, key)));
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return undefined;
      throw new TyError('E_STORE', `cannot read store entry ${ns}/${key}: ${(e as Error).message}`);
    }
  }

  async put(ns: string, key: string, bytes: Uint8Array): Promise<void> {
    checkKey(ns, key);
    const dir = await this.#dir(ns);
    await this.#atomicWrite(dir, key, bytes);
  }

  /** Once per process: remove temp files left by writers that died mid-write (their pid is gone). */
  async #sweepTmp(tmpDir: string): Promise<void> {
    if (this.#swept) return;
    this.#swept = true;
    for (const n of await readdir(tmpDir).catch(() => [] as string[])) {
      const pid = Number(n.split('.')[0]);
      if (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && !pidAlive(pid)) await unlink(join(tmpDir, n)).catch(() => {});
    }
  }

  async #atomicWrite(dir: string, name: string, bytes: Uint8Array): Promise<void> {
    const tmpDir = await this.#dir('.tmp');
    await this.#sweepTmp(tmpDir);
    const tmp = join(tmpDir, `${process.pid}.${randomBytes(8).toString('hex')}`);
    let fh;
    try {
      fh = await open(tmp, FS.O_WRONLY | FS.O_CREAT | FS.O_EXCL, 0o600);
      await fh.writeFile(bytes);
      await fh.sync();
      await fh.close();
      fh = undefined;
      await rename(tmp, join(dir, name));
      await this.#syncDir(dir);
    } catch (e) {
      await fh?.close().catch(() => {});
      await unlink(tmp).catch(() => {});
      throw new TyError('E_STORE', `cannot write store entry ${name}: ${(e as Error).message}`);
    }
  }

  async #syncDir(dir: string): Promise<void> {
    const d = await open(dir, 'r');
    try {
      await d.sync();
    } catch {
      /* some file systems refuse fsync on folders; the rename is still atomic */
    } finally {
      await d.close();
    }
  }

  async delete(ns: string, key: string): Promise<void> {
    checkKey(ns, key);
    await rm(join(this.root, ns, key), { force: true });
  }

  async list(ns: string): Promise<string[]> {
    checkKey(ns);
    try {
      const names = await readdir(join(this.root, ns));
      return names.filter((n) => !n.startsWith('.')).sort();
    } catch (e) {
      if (isErrno(e, 'ENOENT')) return [];
      throw new TyError('E_STORE', `cannot list store namespace ${ns}: ${(e as Error).message}`);
    }
  }

  async append(log: string, line: string): Promise<void> {
    checkKey(log);
    if (/[\n\r]/.test(line)) throw new TyError('E_STORE', 'a log line must not contain a line break');
    const write = async () => {
      const dir = await this.#dir('.logs');
      try {
        await appendLine(join(dir, log), line);
      } catch (e) {
        throw e instanceof TyError ? e : new TyError('E_STORE', `cannot append to log ${log}: ${(e as Error).message}`);
      }
    };
    if (Buffer.byteLength(line, 'utf8') < ATOMIC_APPEND_BYTES - 1) await write();
    else await this.withLock(`log.${log}`, write);
  }

  async readLog(log: string): Promise<string[]> {
    checkKey(log);
    let text: string;
    try {
      text = await readFile(join(this.root, '.logs', log), 'utf8');
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
      const token = await this.#acquire(name);
      try {
        return await fn();
      } finally {
        await this.#release(name, token);
      }
    } finally {
      release();
      if (this.#local.get(name) === chained) this.#local.delete(name);
    }
  }

  async #acquire(name: string): Promise<string> {
    const locks = await this.#dir('.locks');
    const dir = join(locks, name);
    const token = randomBytes(12).toString('hex');
    const deadline = Date.now() + this.#timeout;
    let wait = 2;
    for (;;) {
      try {
        await mkdir(dir, { mode: 0o700 });
        const owner: LockOwner = { pid: process.pid, host: hostname(), token, at: Date.now() };
        await writeFile(join(dir, 'owner.json'), JSON.stringify(owner), { mode: 0o600 });
        return token;
      } catch (e) {
        if (!isErrno(e, 'EEXIST')) throw new TyError('E_STORE', `cannot take store lock ${name}: ${(e as Error).message}`);
      }
      if (await this.#isStale(dir)) await this.#steal(locks, name);
      if (Date.now() > deadline) {
        const o = await this.#owner(dir);
        throw new TyError('E_BUSY', `store lock "${name}" is still held${o ? ` by process ${o.pid}` : ''} after ${this.#timeout} ms; retry, or remove ${dir} if no tycli is running`);
      }
      await sleep(wait + Math.random() * wait);
      wait = Math.min(wait * 2, 50);
    }
  }

  async #owner(dir: string): Promise<LockOwner | undefined> {
    try {
      const o = JSON.parse(await readFile(join(dir, 'owner.json'), 'utf8')) as LockOwner;
      return typeof o.pid === 'number' && typeof o.token === 'string' ? o : undefined;
    } catch {
      return undefined;
    }
  }

  async #isStale(dir: string): Promise<boolean> {
    const o = await this.#owner(dir);
    if (o) {
      if (o.host === hostname() && !pidAlive(o.pid)) return true;
      return Date.now() - o.at > this.#stale;
    }
    try {
      return Date.now() - (await stat(dir)).mtimeMs > 10_000;
    } catch {
      return false; // gone already
    }
  }

  /** Take over a stale lock: under the guard `<root>/.steal/<name>` (itself recovered after 10 s), re-check, then remove. */
  async #steal(locks: string, name: string): Promise<void> {
    const guard = join(await this.#dir('.steal'), name);
    try {
      await mkdir(guard, { mode: 0o700 });
    } catch (e) {
      if (!isErrno(e, 'EEXIST')) return;
      try {
        if (Date.now() - (await stat(guard)).mtimeMs > 10_000) await rmdir(guard);
      } catch {
        /* someone else cleaned it */
      }
      return;
    }
    try {
      const dir = join(locks, name);
      if (await this.#isStale(dir)) await rm(dir, { recursive: true, force: true });
    } finally {
      await rmdir(guard).catch(() => {});
    }
  }

  async #release(name: string, token: string): Promise<void> {
    const dir = join(this.root, '.locks', name);
    const o = await this.#owner(dir);
    if (o?.token !== token) return; // taken over as stale; never remove someone else's lock
    await rm(dir, { recursive: true, force: true });
  }
}
