// Secret values in the PostgreSQL store, sealed with AES-256-GCM under a key read from TYCLI_STORE_KEY_FILE (never
// stored in the database); Node host, trusted side.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { TyError } from '../../../core/errors.js';
import { checkSecretName, type SecretValues } from '../../../core/capabilities/secrets.js';
import { MAX_SECRET_BYTES } from '../secrets.js';
import { storeError, type PgQueryable } from './pool.js';

/** The environment variable naming the store key file. */
export const STORE_KEY_ENV = 'TYCLI_STORE_KEY_FILE';

/** A loaded store key: the 32 key bytes and a public id (derived one-way, so it names the key without revealing it). */
export interface StoreKey {
  readonly bytes: Buffer;
  /** 16 hex characters of SHA-256 over a domain and the key. */
  readonly id: string;
}

/**
 * Read the store key: a file of exactly 32 bytes, or 64 hexadecimal characters, or the base64 of 32 bytes (a final
 * newline allowed). Refused when others may read it, the group may write it, the group may read it and root does not
 * own it, or another user (not root) owns it.
 * Make one with `head -c 32 /dev/urandom > store.key && chmod 600 store.key`.
 * @throws TyError E_STORE naming the problem (never the key's content).
 */
export async function loadStoreKey(path: string): Promise<StoreKey> {
  let st;
  try {
    st = await stat(path);
  } catch (e) {
    throw new TyError(
      'E_STORE',
      `the store key file ${path} cannot be read (${(e as { code?: string }).code ?? 'error'})`,
    );
  }
  if (!st.isFile()) throw new TyError('E_STORE', `the store key file ${path} is not a file`);
  // no access for others, no writing by the group; group read only on a root-owned file (a Kubernetes Secret volume
  // mounts keys 0440 root:fsGroup)
  const uid = typeof process.getuid === 'function' ? process.getuid() : undefined;
  if ((st.mode & 0o027) !== 0 || ((st.mode & 0o040) !== 0 && st.uid !== 0))
    throw new TyError('E_STORE', `the store key file ${path} is readable by other users; run: chmod 600 ${path}`);
  if (uid !== undefined && st.uid !== uid && st.uid !== 0 && uid !== 0)
    throw new TyError('E_STORE', `the store key file ${path} belongs to another user`);
  const raw = await readFile(path);
  const text = raw.toString('latin1').replace(/\r?\n$/, '');
  let bytes: Buffer | undefined;
  if (raw.length === 32) bytes = Buffer.from(raw);
  else if (/^[0-9a-fA-F]{64}$/.test(text)) bytes = Buffer.from(text, 'hex');
  else if (/^[A-Za-z0-9+/]{43}=$/.test(text)) bytes = Buffer.from(text, 'base64');
  if (bytes?.length !== 32)
    throw new TyError(
      'E_STORE',
      `the store key file ${path} must hold 32 bytes (raw, 64 hex characters or base64); make one with: head -c 32 /dev/urandom > ${path}`,
    );
  const id = createHash('sha256').update('tysandbox-store-key/1\0').update(bytes).digest('hex').slice(0, 16);
  return { bytes, id };
}

/** Additional authenticated data of a sealed value: binds it to its name (a row copied under another name fails). */
const aad = (name: string): Buffer => Buffer.from(`tysandbox-secret/1\0${name}`, 'utf8');

/** Seal `value` under `key` (AES-256-GCM, a fresh random 96-bit nonce, NIST SP 800-38D): ciphertext then the tag. */
export function seal(key: StoreKey, name: string, value: string): { nonce: Buffer; sealed: Buffer } {
  const nonce = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key.bytes, nonce);
  c.setAAD(aad(name));
  const body = Buffer.concat([c.update(value, 'utf8'), c.final()]);
  return { nonce, sealed: Buffer.concat([body, c.getAuthTag()]) };
}

/** Open a sealed value. @throws TyError E_STORE when it does not authenticate (altered, another name or key). */
export function unseal(key: StoreKey, name: string, nonce: Buffer, sealed: Buffer): string {
  if (sealed.length < 16) throw new TyError('E_STORE', `the stored secret ${name} is damaged`);
  try {
    const d = createDecipheriv('aes-256-gcm', key.bytes, nonce);
    d.setAAD(aad(name));
    d.setAuthTag(sealed.subarray(sealed.length - 16));
    return Buffer.concat([d.update(sealed.subarray(0, sealed.length - 16)), d.final()]).toString('utf8');
  } catch {
    throw new TyError(
      'E_STORE',
      `the stored secret ${name} does not authenticate (altered, or sealed for another name)`,
    );
  }
}

/**
 * SecretValues in `tycli_secrets`: each value sealed with AES-256-GCM under the store key (its name as additional
 * data), so the database, its backups and its logs hold only ciphertext; the key stays on the instances (a file named
 * by TYCLI_STORE_KEY_FILE; a Kubernetes Secret in docs/deploy). Names are not secret and need no key. Values of
 * another key are refused with E_STORE naming both key ids.
 */
export class PgSecrets implements SecretValues {
  constructor(
    readonly db: PgQueryable,
    /** The key, or undefined when none is configured: reading or setting a value is then refused with E_STORE. */
    readonly key: StoreKey | undefined,
  ) {}

  #needKey(): StoreKey {
    if (!this.key)
      throw new TyError(
        'E_STORE',
        `secrets in a PostgreSQL store are encrypted: set ${STORE_KEY_ENV} to a file holding the store key`,
        { reason: 'no-store-key' },
      );
    return this.key;
  }

  async get(name: string): Promise<string | undefined> {
    checkSecretName(name);
    const key = this.#needKey();
    let row;
    try {
      row = (
        await this.db.query<{ key_id: string; nonce: Buffer; sealed: Buffer }>(
          'SELECT key_id, nonce, sealed FROM tycli_secrets WHERE name = $1',
          [name],
        )
      ).rows[0];
    } catch (e) {
      throw storeError(e, `cannot read secret ${name}`);
    }
    if (!row) return undefined;
    if (row.key_id !== key.id)
      throw new TyError(
        'E_STORE',
        `secret ${name} was sealed with store key ${row.key_id}, not the configured key ${key.id}`,
        { reason: 'other-store-key', sealedWith: row.key_id, configured: key.id },
      );
    return unseal(key, name, row.nonce, row.sealed);
  }

  /** @throws TyError E_USAGE (bad name, empty or oversized value, NUL), E_STORE (no key, database) */
  async set(name: string, value: string): Promise<void> {
    checkSecretName(name);
    if (typeof value !== 'string' || value.length === 0)
      throw new TyError('E_USAGE', 'a secret value must not be empty');
    if (Buffer.byteLength(value) > MAX_SECRET_BYTES)
      throw new TyError('E_USAGE', `a secret value must be at most ${MAX_SECRET_BYTES} bytes`);
    if (value.includes('\0')) throw new TyError('E_USAGE', 'a secret value must not contain NUL');
    const key = this.#needKey();
    const { nonce, sealed } = seal(key, name, value);
    try {
      await this.db.query(
        `INSERT INTO tycli_secrets (name, key_id, nonce, sealed) VALUES ($1, $2, $3, $4)
         ON CONFLICT (name) DO UPDATE SET key_id = EXCLUDED.key_id, nonce = EXCLUDED.nonce, sealed = EXCLUDED.sealed,
           updated_at = now()`,
        [name, key.id, nonce, sealed],
      );
    } catch (e) {
      throw storeError(e, `cannot store secret ${name}`);
    }
  }

  async delete(name: string): Promise<boolean> {
    checkSecretName(name);
    try {
      return ((await this.db.query('DELETE FROM tycli_secrets WHERE name = $1', [name])).rowCount ?? 0) > 0;
    } catch (e) {
      throw storeError(e, `cannot delete secret ${name}`);
    }
  }

  async names(): Promise<string[]> {
    try {
      const r = await this.db.query<{ name: string }>('SELECT name FROM tycli_secrets ORDER BY name COLLATE "C"');
      return r.rows.map((x) => x.name);
    } catch (e) {
      throw storeError(e, 'cannot list secrets');
    }
  }
}
