// Cross-process folder locks whose staleness is decided by owner pid plus process start time; Node host, trusted side.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
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
 * and is not empty, so exactly one taker wins, and a held lock always has its owner file). A lock is stale when its
 * owner, on this machine, is no longer the process that took it (the pid is gone, or reused: another start time),
 * when it has no readable owner file after OWNERLESS_STALE_MS, or (other machine / no start time) after `staleMs`.
 * A stale lock is moved away under a guard lock `<dir>/.steal-<name>` of the same kind, so two waiters never both
 * take it over, and the moved folder's token is checked: a lock taken meanwhile is put back. Waiters poll with
 * backoff up to 50 ms, so a dead owner's lock is recovered well within a second.
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
    const o = await this.owner(name);
    if (o?.token !== token) return;
    const moved = await this.#moveAway(name);
    if (moved) await this.#io(() => rm(moved, { recursive: true, force: true })).catch(() => {});
  }

  /** The owner file of `name`, or undefined when absent or unreadable. */
  async owner(name: string): Promise<LockOwner | undefined> {
    try {
      const o = JSON.parse(await this.#io(() => readFile(join(this.dir, name, 'owner.json'), 'utf8'))) as LockOwner;
      return typeof o.pid === 'number' && typeof o.token === 'string' && typeof o.host === 'string' ? o : undefined;
    } catch {
      return undefined;
    }
  }

  async #tryTake(name: string, token: string): Promise<boolean> {
    const tmp = join(this.dir, `.new-${token}`);
    const owner: LockOwner = { pid: process.pid, host: hostname(), token, at: Date.now() };
    const start = processStartTime(process.pid);
    if (start !== undefined) owner.start = start;
    try {
      await this.#io(async () => {
        await mkdir(tmp, { mode: 0o700 });
        await writeFile(join(tmp, 'owner.json'), JSON.stringify(owner), { mode: 0o600 });
      });
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
    try {
      return Date.now() - (await this.#io(() => stat(join(this.dir, name)))).mtimeMs > OWNERLESS_STALE_MS;
    } catch {
      return false;
    }
  }

  /** Under the guard `.steal-<name>` (itself a lock of this kind), re-check and move the stale lock away. */
  async #stealStale(name: string): Promise<void> {
    const guard = `.steal-${name}`;
    const token = randomBytes(12).toString('hex');
    if (!(await this.#tryTake(guard, token))) {
      if (await this.#isStale(guard)) await this.#moveAway(guard);
      else await sleep(2);
      await this.#dropMoved();
      return;
    }
    try {
      const before = await this.owner(name);
      if (!(await this.#isStale(name))) return;
      const moved = await this.#moveAway(name);
      if (moved && before) {
        // The folder moved is not the one judged stale (it was released and taken meanwhile): put it back.
        const o = await readOwner(moved, this.#io);
        if (o && o.token !== before.token) await this.#io(() => rename(moved, join(this.dir, name))).catch(() => {});
      }
    } finally {
      const o = await this.owner(guard);
      if (o?.token === token) await this.#moveAway(guard);
      await this.#dropMoved();
    }
  }

  /** Rename `name` to a unique `.dead-*` folder (atomic), returning its path; undefined when it was gone. */
  async #moveAway(name: string): Promise<string | undefined> {
    const dead = join(this.dir, `.dead-${randomBytes(8).toString('hex')}`);
    try {
      await this.#io(() => rename(join(this.dir, name), dead));
    } catch {
      return undefined;
    }
    return dead;
  }

  /** Remove moved-away folders (their owners no longer hold anything). */
  async #dropMoved(): Promise<void> {
    let names: string[];
    try {
      names = await this.#io(() => readdir(this.dir));
    } catch {
      return;
    }
    for (const n of names)
      if (n.startsWith('.dead-'))
        await this.#io(() => rm(join(this.dir, n), { recursive: true, force: true })).catch(() => {});
  }

  /** Once per process: remove half-made `.new-*` folders of dead takers and leftover `.dead-*` folders. */
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
      if (!n.startsWith('.new-') && !n.startsWith('.dead-')) continue;
      const p = join(this.dir, n);
      const o = n.startsWith('.new-') ? await readOwner(p, this.#io) : undefined;
      if (o && !ownerStale(o, this.opts.staleMs)) continue;
      if (!o && n.startsWith('.new-')) {
        const age = await this.#io(() => stat(p)).then(
          (s) => Date.now() - s.mtimeMs,
          () => 0,
        );
        if (age < OWNERLESS_STALE_MS) continue;
      }
      await this.#io(() => rm(p, { recursive: true, force: true })).catch(() => {});
    }
  }
}

async function readOwner(dir: string, io: <T>(fn: () => Promise<T>) => Promise<T>): Promise<LockOwner | undefined> {
  try {
    const o = JSON.parse(await io(() => readFile(join(dir, 'owner.json'), 'utf8'))) as LockOwner;
    return typeof o.pid === 'number' && typeof o.token === 'string' ? o : undefined;
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
