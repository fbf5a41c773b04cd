// Per-sandbox host uid/gid leases from a reserved range, unique across processes on the machine; Node host, trusted
// side.
import { randomBytes, randomInt } from 'node:crypto';
import {
  chownSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rm,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { TyError } from '../../core/errors.js';
import { ownerStale, type LockOwner } from '../store/lock.js';
import { processStartTime } from '../process/identity.js';

/**
 * The reserved range: uids and gids SANDBOX_UID_BASE .. SANDBOX_UID_BASE + SANDBOX_UID_COUNT - 1
 * (2147221504-2147287039, 0x7FFC0000-0x7FFCFFFF). It lies above systemd's container range (524288-1879048191,
 * systemd's UIDS-GIDS.md), below its "foreign" range (0x7FFE0000-) and below 2^31 (no sign trouble in tools),
 * far above normal users (1000-60000), the subordinate ranges useradd gives (100000-), and nobody (65534).
 */
export const SANDBOX_UID_BASE = 0x7ffc0000;
export const SANDBOX_UID_COUNT = 0x10000;
/** Where a root CLI keeps one lease folder per uid in use (root-owned, 0700). */
export const DEFAULT_UID_LEASE_DIR = '/run/tysandbox/uids';

/** A uid (and the gid of the same number) held for one sandbox until `release()` (idempotent). */
export interface UidLease {
  uid: number;
  gid: number;
  release(): void;
}

export interface UidPoolOptions {
  /** Lease folder (default DEFAULT_UID_LEASE_DIR). Created 0700; must be a real folder owned by this process's uid. */
  dir?: string;
  base?: number;
  count?: number;
  /**
   * Whether any process runs as `uid` (default: a /proc scan). A lease whose owner died is reclaimed only when none
   * does.
   */
  uidBusy?: (uid: number) => boolean;
}

const errno = (e: unknown): string | undefined =>
  typeof e === 'object' && e !== null ? ((e as { code?: unknown }).code as string | undefined) : undefined;

/** Every real, effective, saved or filesystem uid some process runs as now (the Uid: lines of /proc/PID/status). */
export function uidsInProc(): Set<number> {
  const out = new Set<number>();
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const n of names) {
    if (!/^\d+$/.test(n)) continue;
    try {
      const m = /^Uid:\s+(.*)$/m.exec(readFileSync(`/proc/${n}/status`, 'utf8'));
      if (m) for (const x of (m[1] as string).trim().split(/\s+/)) out.add(Number(x));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

/** Whether some process runs as `uid` (uidsInProc). */
export function uidBusyInProc(uid: number): boolean {
  return uidsInProc().has(uid);
}

/**
 * Leases of distinct uids, each a folder `<dir>/<uid>` made whole before it appears (a private `.new-<token>` folder
 * gets `owner.json` {pid, start, host, token, at} and is renamed to `<uid>`; rename(2) fails on an existing non-empty
 * folder, so exactly one process wins a uid). Slots are tried from a random start, so a just-released uid is rarely
 * handed out again at once. A lease whose owner process is gone (pid absent, or reused: another start time; see
 * node/store/lock.ts ownerStale) and under whose uid no process runs any more is reclaimed; so is a folder without an
 * owner
 * file older than 1 s; the first lease of each pool sweeps every such lease away. Synchronous: it runs inside a
 * SpawnWrapper, which is synchronous.
 */
export class UidPool {
  readonly dir: string;
  readonly base: number;
  readonly count: number;
  readonly #busy: (uid: number) => boolean;
  #ready = false;
  constructor(opts: UidPoolOptions = {}) {
    this.dir = opts.dir ?? DEFAULT_UID_LEASE_DIR;
    this.base = opts.base ?? SANDBOX_UID_BASE;
    this.count = opts.count ?? SANDBOX_UID_COUNT;
    this.#busy = opts.uidBusy ?? uidBusyInProc;
    if (
      !Number.isSafeInteger(this.base) ||
      !Number.isSafeInteger(this.count) ||
      this.base <= 0 ||
      this.count <= 0 ||
      this.base + this.count > 2 ** 31
    ) {
      throw new RangeError('uid range must be positive and below 2^31');
    }
  }

  /** Take a free uid. @throws TyError E_SANDBOX_FAILED (lease folder unusable; every uid of the range in use) */
  acquire(): UidLease {
    this.#prepare();
    this.#sweep();
    const start = randomInt(this.count);
    for (let i = 0; i < this.count; i++) {
      const uid = this.base + ((start + i) % this.count);
      if (this.#tryTake(uid)) return this.#lease(uid);
      const judged = this.#reclaimable(uid);
      if (judged !== false && this.#reclaim(uid, judged) && this.#tryTake(uid)) return this.#lease(uid);
    }
    throw new TyError(
      'E_SANDBOX_FAILED',
      `all ${this.count} sandbox uids (${this.base}-${this.base + this.count - 1}) are in use; see ${this.dir}`,
    );
  }

  /** The owner of the lease on `uid`, or undefined. */
  owner(uid: number): LockOwner | undefined {
    try {
      const o = JSON.parse(readFileSync(join(this.dir, String(uid), 'owner.json'), 'utf8')) as LockOwner;
      return typeof o.pid === 'number' && typeof o.token === 'string' && typeof o.host === 'string' ? o : undefined;
    } catch {
      return undefined;
    }
  }

  #token = new Map<number, string>();

  #lease(uid: number): UidLease {
    const token = this.#token.get(uid) as string;
    let released = false;
    return {
      uid,
      gid: uid,
      release: () => {
        if (released) return;
        released = true;
        if (this.owner(uid)?.token !== token) return; // reclaimed meanwhile: not ours any more
        const dead = join(this.dir, `.dead-${randomBytes(8).toString('hex')}`);
        try {
          renameSync(join(this.dir, String(uid)), dead); // the uid is free from here on
        } catch {
          return; // gone already
        }
        // Removing the folder is the slow part (about 1-4 ms of synchronous rmdir/unlink on this machine's disk, at
        // every sandbox exit): done in the background. A `.dead-*` folder an exiting host leaves is swept by the next
        // pool.
        rm(dead, { recursive: true, force: true }, () => {});
      },
    };
  }

  #swept = false;
  /**
   * Once per pool: reclaim every stale lease (a host that died, or exited with sandboxes it never saw exit) and drop
   * leftover `.new-*` / `.dead-*` folders older than 1 s, so dead leases do not pile up.
   */
  #sweep(): void {
    if (this.#swept) return;
    this.#swept = true;
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return;
    }
    const stale: number[] = [];
    for (const n of names) {
      if (/^\d+$/.test(n)) {
        const uid = Number(n);
        const o = this.owner(uid);
        if (o ? ownerStale(o, 24 * 3600_000) : olderThan(join(this.dir, n), 1000)) stale.push(uid);
      } else if (
        (n.startsWith('.dead-') || (n.startsWith('.new-') && !this.#liveTaker(n))) &&
        olderThan(join(this.dir, n), 1000)
      ) {
        rmSync(join(this.dir, n), { recursive: true, force: true });
      }
    }
    if (stale.length === 0) return;
    const busy = this.#busy === uidBusyInProc ? uidsInProc() : undefined;
    for (const uid of stale) {
      if (busy ? busy.has(uid) : this.#busy(uid)) continue;
      const o = this.owner(uid);
      this.#reclaim(uid, o?.token ?? '');
    }
  }

  #liveTaker(name: string): boolean {
    try {
      const o = JSON.parse(readFileSync(join(this.dir, name, 'owner.json'), 'utf8')) as LockOwner;
      return !ownerStale(o, 24 * 3600_000);
    } catch {
      return false;
    }
  }

  #prepare(): void {
    if (this.#ready) return;
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      const st = lstatSync(this.dir);
      const me = typeof process.geteuid === 'function' ? process.geteuid() : st.uid;
      if (!st.isDirectory() || st.uid !== me || (st.mode & 0o022) !== 0)
        throw new Error('not a folder of this user that only it can write');
    } catch (e) {
      throw new TyError(
        'E_SANDBOX_FAILED',
        `the sandbox uid lease folder ${this.dir} is unusable: ${(e as Error).message}`,
      );
    }
    this.#ready = true;
  }

  #tryTake(uid: number): boolean {
    const token = randomBytes(12).toString('hex');
    const tmp = join(this.dir, `.new-${token}`);
    const owner: LockOwner = { pid: process.pid, host: hostname(), token, at: Date.now() };
    const start = processStartTime(process.pid);
    if (start !== undefined) owner.start = start;
    try {
      mkdirSync(tmp, { mode: 0o700 });
      writeFileSync(join(tmp, 'owner.json'), JSON.stringify(owner), { mode: 0o600 });
      renameSync(tmp, join(this.dir, String(uid)));
    } catch (e) {
      rmSync(tmp, { recursive: true, force: true });
      const code = errno(e);
      if (code === 'EEXIST' || code === 'ENOTEMPTY' || code === 'ENOTDIR') return false;
      throw new TyError('E_SANDBOX_FAILED', `cannot lease sandbox uid ${uid}: ${(e as Error).message}`);
    }
    this.#token.set(uid, token);
    return true;
  }

  /**
   * Stale: owner gone (or no owner file for over 1 s) and no process left running as the uid. Returns false when
   * not stale, else the stale owner's token ('' for an ownerless folder, null when the folder is gone).
   */
  #reclaimable(uid: number): string | null | false {
    const o = this.owner(uid);
    if (o) {
      if (!ownerStale(o, 24 * 3600_000)) return false;
    } else {
      try {
        if (Date.now() - lstatSync(join(this.dir, String(uid))).mtimeMs < 1000) return false;
      } catch {
        return null; // gone: free
      }
    }
    return this.#busy(uid) ? false : (o?.token ?? '');
  }

  /**
   * Move the stale lease away (atomic rename: of two reclaimers only one moves it) and drop it. A folder moved that is
   * not the one judged stale (released and taken again meanwhile) is put back, and the slot is skipped.
   */
  #reclaim(uid: number, judged: string | null): boolean {
    if (judged === null) return true;
    const slot = join(this.dir, String(uid));
    const dead = join(this.dir, `.dead-${randomBytes(8).toString('hex')}`);
    try {
      renameSync(slot, dead);
    } catch {
      return true; // someone else moved it: try to take it
    }
    let token = '';
    try {
      token = (JSON.parse(readFileSync(join(dead, 'owner.json'), 'utf8')) as LockOwner).token ?? '';
    } catch {
      /* ownerless */
    }
    if (token !== judged) {
      try {
        renameSync(dead, slot);
      } catch {
        /* the slot was taken again meanwhile: leave the moved folder (its owner's release finds nothing) */
      }
      return false;
    }
    rmSync(dead, { recursive: true, force: true });
    return true;
  }
}

/** Chown `paths` (not following symlinks' targets) to a lease, so the sandbox's uid owns its own work folder. */
export function chownToLease(paths: readonly string[], lease: { uid: number; gid: number }): void {
  for (const p of paths) chownSync(p, lease.uid, lease.gid);
}

function olderThan(path: string, ms: number): boolean {
  try {
    return Date.now() - lstatSync(path).mtimeMs > ms;
  } catch {
    return false;
  }
}

let shared: UidPool | undefined;
/** The machine-wide pool a root CLI uses (DEFAULT_UID_LEASE_DIR). */
export function defaultUidPool(): UidPool {
  shared ??= new UidPool();
  return shared;
}
