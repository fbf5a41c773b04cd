// Cross-process folder locks whose staleness is decided by owner pid plus process start time; Node host, trusted side.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { TyError } from '../../core/errors.js';
import { processAlive, processStartTime } from '../process/identity.js';

/** What `owner.json` of a lock folder holds. */
export interface LockOwner {
  pid: number;
  /** processStartTime(pid) of the owner, when known (Linux). */
  start?: string;
  host: string;
  token: string;
  /** ms since the epoch */
  at: number;
}

export interface DirLocksOptions {
  /** Give up waiting after this long, ms -> E_BUSY. */
  timeoutMs: number;
  /**
   * A lock of another machine, or of an owner whose start time is unknown (no /proc), is taken over after this
   * long, ms. A same-machine owner with a known start time is judged by pid and start time only.
   */
  staleMs: number;
  /** Runs each file-system step: the store's bound on open files (node/store/file-store.ts). */
  io?: <T>(fn: () => Promise<T>) => Promise<T>;
}

/**
 * A lock folder without a readable owner file this old (ms) is stale: a writer that died before the owner file was
 * written.
 */
export const OWNERLESS_STALE_MS = 500;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const errno = (e: unknown): string | undefined =>
  typeof e === 'object' && e !== null ? ((e as { code?: unknown }).code as string | undefined) : undefined;

/**
 * Locks as folders `<dir>/<name>`, each made whole before it appears: a private folder `.new-<token>` gets its
 * `owner.json` {pid, start, host, token, at}, then is renamed to `<name>` (rename(2) fails when `<name>` exists
 * and is not empty, so exactly one taker wins, and a held lock always has its owner file; an empty `<name>` folder,
 * left by a process killed while releasing, is replaced and so is free). A lock is stale when its owner, on this
 * machine, is no longer the process that took it (the pid is gone, or reused: another start time), when it has no
 * readable owner file after OWNERLESS_STALE_MS, or (other machine / no start time) after `staleMs`. A stale lock is
 * taken over under a guard lock `<dir>/.steal-<name>` of the same kind, so two waiters never both take it over.
 * Waiters poll with backoff up to 50 ms, so a dead owner's lock is recovered well within a second.
 *
 * Removing a lock (release, take-over) happens inside its own folder and never moves the folder: the owner file is
 * renamed to `.gone-<random>` beside it (atomic: of two removers one gets ENOENT), its token checked (another
 * holder's file is put back), then unlinked, and the empty folder removed with rmdir(2), which never removes a folder a
 * taker has filled meanwhile. A process killed at any step leaves at most that lock's own folder, empty or holding
 * only `.gone-*` (ownerless): the next taker of that name replaces or removes it, and the once-per-process sweep
 * removes leftovers of any name. No `.dead-*` folder is ever made.
 */
export class DirLocks {
  readonly #io: <T>(fn: () => Promise<T>) => Promise<T>;
  #swept = false;
  constructor(
    readonly dir: string,
    readonly opts: DirLocksOptions,
  ) {
    this.#io = opts.io ?? ((fn) => fn());
  }

  /** Take `name`, waiting up to `timeoutMs`. Returns the token release needs. @throws TyError E_BUSY, E_STORE */
  async acquire(name: string): Promise<string> {
    await this.#io(() => mkdir(this.dir, { recursive: true, mode: 0o700 }));
    await this.#sweep();
    const token = randomBytes(12).toString('hex');
    const deadline = Date.now() + this.opts.timeoutMs;
    let wait = 2;
    for (;;) {
      if (await this.#tryTake(name, token)) return token;
      if (await this.#isStale(name)) {
        await this.#stealStale(name);
        continue;
      }
      if (Date.now() > deadline) {
        const o = await this.owner(name);
        throw new TyError(
          'E_BUSY',
          `store lock "${name}" is still held${o ? ` by process ${o.pid}` : ''} after ${this.opts.timeoutMs} ms; retry, or remove ${join(this.dir, name)} if no tycli is running`,
        );
      }
      await sleep(wait + Math.random() * wait);
      wait = Math.min(wait * 2, 50);
    }
  }

  /** Release `name` if `token` still owns it (a lock taken over as stale is never removed by its old owner). */
  async release(name: string, token: string): Promise<void> {
    await this.#removeOwned(name, token);
  }

  /** The owner file of `name`, or undefined when absent or unreadable. */
  async owner(name: string): Promise<LockOwner | undefined> {
    return readOwner(join(this.dir, name), this.#io);
  }

  async #tryTake(name: string, token: string): Promise<boolean> {
    const tmp = join(this.dir, `.new-${token}`);
    const owner: LockOwner = { pid: process.pid, host: hostname(), token, at: Date.now() };
    const start = processStartTime(process.pid);
    if (start !== undefined) owner.start = start;
    try {
      await this.#io(() => mkdir(tmp, { mode: 0o700 }));
      await this.#io(() => writeFile(join(tmp, 'owner.json'), JSON.stringify(owner), { mode: 0o600 }));
    } catch (e) {
      await this.#io(() => rm(tmp, { recursive: true, force: true })).catch(() => {});
      throw new TyError('E_STORE', `cannot take store lock ${name}: ${(e as Error).message}`);
    }
    try {
      await this.#io(() => rename(tmp, join(this.dir, name)));
      return true;
    } catch (e) {
      await this.#io(() => rm(tmp, { recursive: true, force: true })).catch(() => {});
      const code = errno(e);
      if (code === 'EEXIST' || code === 'ENOTEMPTY' || code === 'ENOTDIR') return false;
      throw new TyError('E_STORE', `cannot take store lock ${name}: ${(e as Error).message}`);
    }
  }

  /** Whether the lock folder `name` (if any) is stale; false when it is gone. */
  async #isStale(name: string): Promise<boolean> {
    const o = await this.owner(name);
    if (o) return ownerStale(o, this.opts.staleMs);
    return this.#ownerlessOld(name);
  }

  /** True when `name` exists without a readable owner file and has not changed for OWNERLESS_STALE_MS. */
  async #ownerlessOld(name: string): Promise<boolean> {
    try {
      return Date.now() - (await this.#io(() => stat(join(this.dir, name)))).mtimeMs > OWNERLESS_STALE_MS;
    } catch {
      return false;
    }
  }

  /** Under the guard `.steal-<name>` (itself a lock of this kind), re-check and remove the stale lock. */
  async #stealStale(name: string): Promise<void> {
    const guard = `.steal-${name}`;
    const token = randomBytes(12).toString('hex');
    if (!(await this.#tryTake(guard, token))) {
      if (await this.#isStale(guard)) await this.#removeStale(guard);
      else await sleep(2);
      return;
    }
    try {
      if (await this.#isStale(name)) await this.#removeStale(name);
    } finally {
      await this.#removeOwned(guard, token);
    }
  }

  /** Remove the stale lock `name`: the owner judged stale (its token checked), or an ownerless folder. */
  async #removeStale(name: string): Promise<void> {
    const o = await this.owner(name);
    if (o) {
      if (ownerStale(o, this.opts.staleMs)) await this.#removeOwned(name, o.token);
    } else if (await this.#ownerlessOld(name)) await this.#removeOwnerless(name);
  }

  /**
   * Remove lock `name` if its owner file carries `token`: rename the owner file to `.gone-<random>` in the folder
   * (atomic), check the token (another holder's file is put back at once), unlink it, rmdir the folder. Returns whether
   * it removed the lock. A remover that finds no owner file while another remover holds one aside (a `.gone-*` entry)
   * waits for it to be put back or removed, so a release never misses its own lock.
   */
  async #removeOwned(name: string, token: string): Promise<boolean> {
    const folder = join(this.dir, name);
    const gone = join(folder, `.gone-${randomBytes(8).toString('hex')}`);
    for (let tries = 0; ; tries++) {
      try {
        await this.#io(() => rename(join(folder, 'owner.json'), gone));
        break;
      } catch (e) {
        if (errno(e) !== 'ENOENT' && errno(e) !== 'ENOTDIR') return false;
        const aside = await this.#io(() => readdir(folder)).then(
          (names) => names.some((n) => n.startsWith('.gone-')),
          () => false,
        );
        if (!aside || tries >= 50) return false;
        await sleep(2);
      }
    }
    const o = await readOwnerFile(gone, this.#io);
    if (o?.token !== token) {
      await this.#io(() => rename(gone, join(folder, 'owner.json'))).catch(() => {});
      return false;
    }
    await this.#io(() => unlink(gone)).catch(() => {});
    await this.#io(() => rmdir(folder)).catch(() => {}); // ENOTEMPTY: a taker filled it meanwhile, and holds it
    return true;
  }

  /**
   * Remove a lock folder without an owner file (its remover or taker died): nothing can enter it (a taker's rename
   * needs it empty, and there is no owner file to set aside), so its entries are removed and then the folder.
   */
  async #removeOwnerless(name: string): Promise<void> {
    const folder = join(this.dir, name);
    let names: string[];
    try {
      names = await this.#io(() => readdir(folder));
    } catch {
      return;
    }
    if (names.includes('owner.json')) return;
    for (const n of names) await this.#io(() => rm(join(folder, n), { recursive: true, force: true })).catch(() => {});
    await this.#io(() => rmdir(folder)).catch(() => {});
  }

  /**
   * Once per process: remove half-made `.new-*` folders of dead takers, `.dead-*` folders of older versions, and
   * lock and guard folders whose owner is stale or which have stayed ownerless (left by a process killed mid-way).
   */
  async #sweep(): Promise<void> {
    if (this.#swept) return;
    this.#swept = true;
    let names: string[];
    try {
      names = await this.#io(() => readdir(this.dir));
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(this.dir, n);
      if (n.startsWith('.dead-')) {
        await this.#io(() => rm(p, { recursive: true, force: true })).catch(() => {});
        continue;
      }
      if (n.startsWith('.new-')) {
        const o = await readOwner(p, this.#io);
        if (o ? !ownerStale(o, this.opts.staleMs) : !(await this.#ownerlessOld(n))) continue;
        await this.#io(() => rm(p, { recursive: true, force: true })).catch(() => {});
        continue;
      }
      // a guard, or a lock nobody holds any more: removed as a take-over would (checked, in place)
      if (n.startsWith('.steal-') || !n.startsWith('.')) await this.#removeStale(n);
    }
  }
}

/** The owner file of the lock folder `dir`, or undefined when absent or unreadable. */
function readOwner(dir: string, io: <T>(fn: () => Promise<T>) => Promise<T>): Promise<LockOwner | undefined> {
  return readOwnerFile(join(dir, 'owner.json'), io);
}

async function readOwnerFile(
  file: string,
  io: <T>(fn: () => Promise<T>) => Promise<T>,
): Promise<LockOwner | undefined> {
  try {
    const o = JSON.parse(await io(() => readFile(file, 'utf8'))) as LockOwner;
    return typeof o.pid === 'number' && typeof o.token === 'string' && typeof o.host === 'string' ? o : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Stale: same machine and the owner process is gone (pid absent, or reused with another start time); else older than
 * `staleMs`.
 */
export function ownerStale(o: LockOwner, staleMs: number): boolean {
  if (o.host === hostname()) {
    if (!processAlive(o.pid, o.start)) return true;
    if (o.start !== undefined) return false;
  }
  return Date.now() - o.at > staleMs;
}
