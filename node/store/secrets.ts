// Secret values in one 0600 JSON file under the tycli home (config/secrets.json), atomic writes; Node host, trusted
// side.
import { readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { TyError } from '../../core/errors.js';
import { checkSecretName, type SecretValues } from '../../core/capabilities/secrets.js';
import { writeFileAtomic } from './atomic.js';
import { ensurePrivateDir } from './paths.js';

interface SecretsDoc {
  v: 1;
  secrets: Record<string, string>;
}

/** Largest value accepted, bytes (UTF-8). */
export const MAX_SECRET_BYTES = 64 * 1024;

/**
 * SecretValues backed by a file: `{"v":1,"secrets":{NAME: VALUE}}`, mode 0600 in a 0700 folder, replaced
 * atomically (node/store/atomic.ts: temp file, fsync, rename, folder fsync). Reading refuses a file that group or
 * others may read, or that another user owns (E_STORE with the chmod to run). Values are never logged and never
 * appear in error messages. Not encrypted: protection is the file mode (see SECURITY.md).
 */
export class SecretsFile implements SecretValues {
  constructor(
    readonly path: string,
    /** Cross-process lock around read-modify-write (e.g. FileStoreBackend.withLock bound to a name). */
    readonly lock: <T>(fn: () => Promise<T>) => Promise<T> = (fn) => fn(),
  ) {}

  async #read(): Promise<SecretsDoc> {
    let st;
    try {
      st = await stat(this.path);
    } catch (e) {
      if ((e as { code?: string }).code === 'ENOENT') return { v: 1, secrets: {} };
      throw new TyError('E_STORE', 'the secrets file cannot be read');
    }
    if ((st.mode & 0o077) !== 0)
      throw new TyError(
        'E_STORE',
        `the secrets file ${this.path} is readable by other users; run: chmod 600 ${this.path}`,
      );
    if (typeof process.getuid === 'function' && st.uid !== process.getuid())
      throw new TyError('E_STORE', `the secrets file ${this.path} belongs to another user`);
    let doc: unknown;
    try {
      doc = JSON.parse(await readFile(this.path, 'utf8'));
    } catch {
      throw new TyError('E_STORE', `the secrets file ${this.path} is not valid JSON; fix or remove it`);
    }
    const d = doc as Partial<SecretsDoc>;
    if (d?.v !== 1 || typeof d.secrets !== 'object' || d.secrets === null)
      throw new TyError('E_STORE', `the secrets file ${this.path} has an unknown format`);
    const secrets: Record<string, string> = Object.create(null) as Record<string, string>;
    for (const [k, v] of Object.entries(d.secrets)) if (typeof v === 'string') secrets[k] = v;
    return { v: 1, secrets };
  }

  async #write(doc: SecretsDoc): Promise<void> {
    await ensurePrivateDir(dirname(this.path));
    await writeFileAtomic(this.path, `${JSON.stringify(doc)}\n`, { mode: 0o600 });
  }

  async get(name: string): Promise<string | undefined> {
    const doc = await this.#read();
    return Object.prototype.hasOwnProperty.call(doc.secrets, name) ? doc.secrets[name] : undefined;
  }

  /** @throws TyError E_USAGE (bad name, empty or oversized value, NUL), E_STORE */
  async set(name: string, value: string): Promise<void> {
    checkSecretName(name);
    if (typeof value !== 'string' || value.length === 0)
      throw new TyError('E_USAGE', 'a secret value must not be empty');
    if (Buffer.byteLength(value) > MAX_SECRET_BYTES)
      throw new TyError('E_USAGE', `a secret value must be at most ${MAX_SECRET_BYTES} bytes`);
    if (value.includes('\0')) throw new TyError('E_USAGE', 'a secret value must not contain NUL');
    await this.lock(async () => {
      const doc = await this.#read();
      doc.secrets[name] = value;
      await this.#write(doc);
    });
  }

  async delete(name: string): Promise<boolean> {
    checkSecretName(name);
    return this.lock(async () => {
      const doc = await this.#read();
      if (!Object.prototype.hasOwnProperty.call(doc.secrets, name)) return false;
      delete doc.secrets[name];
      await this.#write(doc);
      return true;
    });
  }

  async names(): Promise<string[]> {
    return Object.keys((await this.#read()).secrets).sort();
  }
}
