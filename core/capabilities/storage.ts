// Per-revision key-value storage capability with a quota (ctx.storage); core, trusted side.
import { TyError } from '../errors.js';
import type { Store } from '../store/contract.js';
import type { CallerIdentity } from './fetch/mediated.js';
import { canonicalJson } from '../revisions/canonical.js';
import { AUDIT_LOG } from '../audit/trail.js';

/** Default quota when the manifest requests storage without `quotaBytes`, bytes. */
export const DEFAULT_STORAGE_QUOTA = 1024 * 1024;
/** Host maximum (the manifest schema's limit), bytes. */
export const MAX_STORAGE_QUOTA = 64 * 1024 * 1024;
const KEY_MAX = 256;
const NS = 'tool-storage';

interface StorageRecord {
  revision: string;
  entries: Record<string, unknown>;
}

const enc = new TextEncoder();
const sizeOf = (entries: Record<string, unknown>): number => enc.encode(JSON.stringify(entries)).byteLength;

/**
 * `ctx.storage`: get / set / delete / list of JSON values, persisted in the store.
 *
 * Scope: per exact revision (record `tool-storage/REVISION`), like secrets and decisions: a new revision
 * under the same name starts empty and cannot read what an earlier revision stored. Quota: the manifest's
 * `capabilities.storage.quotaBytes` (default 1 MiB, at most 64 MiB), measured as the UTF-8 bytes of the
 * JSON of all entries. A tool whose manifest does not request `storage` is refused (E_CAPABILITY_DENIED).
 * Retained sandbox memory is not storage.
 */
export class ToolStorage {
  constructor(readonly store: Store) {}

  #quota(identity: CallerIdentity): number {
    const s = identity.manifest.capabilities?.storage;
    if (!s)
      throw new TyError(
        'E_CAPABILITY_DENIED',
        `${identity.name} does not request storage in its manifest (capabilities.storage)`,
      );
    return Math.min(s.quotaBytes ?? DEFAULT_STORAGE_QUOTA, MAX_STORAGE_QUOTA);
  }

  #key(key: unknown): string {
    if (typeof key !== 'string' || key.length === 0 || key.length > KEY_MAX)
      throw new TyError('E_INVALID_ARGS', `storage keys are strings of 1-${KEY_MAX} characters`);
    return key;
  }

  /**
   * Write-ahead: the audit records written before this write (the calling tool's intent record, which may still
   * wait for its fsync, node/store/append.ts stage) are on disk before the write is, so no crash leaves a stored change
   * without the record of the call that made it.
   */
  #writeAhead(): Promise<void> {
    return this.store.syncLog(AUDIT_LOG);
  }

  #read(identity: CallerIdentity): Promise<StorageRecord | undefined> {
    return this.store.getJson<StorageRecord>(NS, identity.revision);
  }

  /** @returns the stored JSON value, or undefined. @throws E_CAPABILITY_DENIED, E_INVALID_ARGS */
  async get(identity: CallerIdentity, key: unknown): Promise<unknown> {
    this.#quota(identity);
    const k = this.#key(key);
    const rec = await this.#read(identity);
    return rec && Object.prototype.hasOwnProperty.call(rec.entries, k) ? rec.entries[k] : undefined;
  }

  /**
   * Store a plain JSON value (finite numbers, no cycles, no class instances). Nothing is written when the
   * quota would be exceeded.
   * @throws TyError E_STORAGE_QUOTA, E_CAPABILITY_DENIED, E_INVALID_ARGS
   */
  async set(identity: CallerIdentity, key: unknown, value: unknown): Promise<void> {
    const quota = this.#quota(identity);
    const k = this.#key(key);
    if (value === undefined)
      throw new TyError('E_INVALID_ARGS', 'storage values must be JSON (use delete to remove a key)');
    const json = canonicalJson(value, 'E_INVALID_ARGS');
    const plain: unknown = JSON.parse(json);
    await this.#writeAhead();
    await this.store.update<StorageRecord>(NS, identity.revision, (rec) => {
      const entries: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
      Object.assign(entries, rec?.entries ?? {});
      entries[k] = plain;
      const size = sizeOf(entries);
      if (size > quota)
        throw new TyError(
          'E_STORAGE_QUOTA',
          `storage for ${identity.name} would use ${size} bytes, over its quota of ${quota} bytes; delete keys or request a larger capabilities.storage.quotaBytes`,
        );
      return { revision: identity.revision, entries };
    });
  }

  /** @returns true when the key existed. @throws E_CAPABILITY_DENIED, E_INVALID_ARGS */
  async delete(identity: CallerIdentity, key: unknown): Promise<boolean> {
    this.#quota(identity);
    const k = this.#key(key);
    let existed = false;
    await this.#writeAhead();
    await this.store.update<StorageRecord>(NS, identity.revision, (rec) => {
      if (!rec) return undefined;
      existed = Object.prototype.hasOwnProperty.call(rec.entries, k);
      const entries = { ...rec.entries };
      delete entries[k];
      return Object.keys(entries).length ? { revision: identity.revision, entries } : undefined;
    });
    return existed;
  }

  /** Keys, sorted; with `prefix`, only those starting with it. @throws E_CAPABILITY_DENIED */
  async list(identity: CallerIdentity, prefix?: unknown): Promise<string[]> {
    this.#quota(identity);
    if (prefix !== undefined && typeof prefix !== 'string')
      throw new TyError('E_INVALID_ARGS', 'the list prefix must be a string');
    const rec = await this.#read(identity);
    return Object.keys(rec?.entries ?? {})
      .filter((k) => prefix === undefined || k.startsWith(prefix))
      .sort();
  }

  /** Bytes used by a revision (for host listings). */
  async usage(revision: string): Promise<number> {
    const rec = await this.store.getJson<StorageRecord>(NS, revision);
    return rec ? sizeOf(rec.entries) : 0;
  }
}
