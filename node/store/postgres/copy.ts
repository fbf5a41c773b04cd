// `tycli store copy --to postgres://...`: a file store moved into PostgreSQL in one transaction, every object and
// record verified; Node host, trusted side.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { TyError } from '../../../core/errors.js';
import { cidOfBytes, isContentId } from '../../../core/revisions/cid.js';
import { KEY_RE } from '../../../core/store/contract.js';
import type { SecretValues } from '../../../core/capabilities/secrets.js';
import { FileStoreBackend } from '../file-store.js';
import { migrate } from './migrations.js';
import { checkout, openPool, redactUrl, storeError } from './pool.js';
import { PgSecrets, type StoreKey } from './secrets.js';

export interface CopyOptions {
  /** The file store's folder (`<home>/store`). */
  from: string;
  /** The PostgreSQL URL. */
  to: string;
  /** The file store's secrets (`config/secrets.json`); their values are sealed with `key` on the way. */
  secrets?: SecretValues;
  /** The store key (TYCLI_STORE_KEY_FILE); required when there are secrets to copy. */
  key?: StoreKey;
  /** Told of progress: one line per namespace and log. */
  onProgress?: (line: string) => void;
}

export interface CopyReport {
  to: string;
  /** Entries per namespace. */
  namespaces: Record<string, number>;
  /** Content-addressed objects among them, each re-hashed before and after the copy. */
  objects: number;
  /** Lines per log, in order. */
  logs: Record<string, number>;
  secrets: number;
}

const NOT_EMPTY = `SELECT (SELECT count(*) FROM tycli_entries) + (SELECT count(*) FROM tycli_log)
  + (SELECT count(*) FROM tycli_secrets) AS n`;

/**
 * Copy a file store into a PostgreSQL database: migrate the schema, then in ONE transaction every entry of every
 * namespace, every line of every log (in order) and every secret (sealed with the store key), then read everything
 * back inside the transaction and compare byte for byte (objects also re-hashed against their content id) before
 * COMMIT. Any difference, a source object that does not match its id, or a target that already holds data rolls it
 * all back: the database is left as it was (never half-copied). The file store is only read.
 * @throws TyError E_USAGE (target not empty; secrets but no key), E_INTEGRITY (a source object altered: `data.objects`
 *   lists them), E_STORE (database, or verification failed: `data.mismatch`).
 */
export async function copyFileStore(opts: CopyOptions): Promise<CopyReport> {
  const source = new FileStoreBackend(opts.from);
  const namespaces = (await readdir(opts.from, { withFileTypes: true }).catch(() => []))
    .filter((d) => d.isDirectory() && !d.name.startsWith('.') && KEY_RE.test(d.name))
    .map((d) => d.name)
    .sort();
  const logs = (await readdir(join(opts.from, '.logs'), { withFileTypes: true }).catch(() => []))
    .filter((d) => d.isFile() && KEY_RE.test(d.name) && !d.name.startsWith('.'))
    .map((d) => d.name)
    .sort();
  const secretNames = opts.secrets ? await opts.secrets.names() : [];
  if (secretNames.length > 0 && !opts.key)
    throw new TyError(
      'E_USAGE',
      `the file store has ${secretNames.length} secret(s); set TYCLI_STORE_KEY_FILE to the store key so they are sealed in the database`,
    );

  // the source checked first: an object that no longer matches its id is not carried over silently
  const bad: string[] = [];
  for (const key of namespaces.includes('objects') ? await source.list('objects') : []) {
    const bytes = await source.get('objects', key);
    if (!isContentId(key) || bytes === undefined || (await cidOfBytes(bytes)) !== key) bad.push(key);
  }
  if (bad.length > 0)
    throw new TyError(
      'E_INTEGRITY',
      `${bad.length} stored object(s) do not match their content id; repair them (install the same manifests again) or remove them before copying`,
      { objects: bad.slice(0, 50) },
    );

  const pool = await openPool(opts.to, { max: 2, applicationName: 'tycli-copy' });
  const report: CopyReport = { to: redactUrl(opts.to), namespaces: {}, objects: 0, logs: {}, secrets: 0 };
  try {
    const held = await checkout(pool);
    const c = held.client;
    try {
      await migrate(c);
      await c.query('BEGIN');
      // no other writer while copying: a concurrent instance would make the emptiness check meaningless
      await c.query('LOCK TABLE tycli_entries, tycli_log, tycli_secrets IN EXCLUSIVE MODE');
      const n = Number((await c.query<{ n: string }>(NOT_EMPTY)).rows[0]?.n ?? 0);
      if (n > 0)
        throw new TyError(
          'E_USAGE',
          `the database at ${redactUrl(opts.to)} already holds a store (${n} rows); copy into an empty database`,
        );
      for (const ns of namespaces) {
        const keys = await source.list(ns);
        for (const key of keys) {
          const bytes = await source.get(ns, key);
          if (bytes === undefined) continue;
          await c.query('INSERT INTO tycli_entries (ns, key, value) VALUES ($1, $2, $3)', [
            ns,
            key,
            Buffer.from(bytes),
          ]);
          report.namespaces[ns] = (report.namespaces[ns] ?? 0) + 1;
        }
        opts.onProgress?.(`${ns}: ${report.namespaces[ns] ?? 0} entries`);
      }
      for (const log of logs) {
        const lines = (await source.readLog(log)).filter((l) => l.length > 0 && !/[\r\n]/.test(l));
        // in order, in batches (one statement per 500 lines)
        for (let i = 0; i < lines.length; i += 500) {
          const batch = lines.slice(i, i + 500);
          await c.query(
            'INSERT INTO tycli_log (log, line) SELECT $1, l FROM unnest($2::text[]) WITH ORDINALITY AS t(l, o) ORDER BY o',
            [log, batch],
          );
        }
        report.logs[log] = lines.length;
        opts.onProgress?.(`log ${log}: ${lines.length} lines`);
      }
      const sealedSecrets = new PgSecrets(c, opts.key);
      for (const name of secretNames) {
        const value = await opts.secrets!.get(name);
        if (value === undefined) continue;
        await sealedSecrets.set(name, value);
        report.secrets++;
      }
      await verify(c, source, namespaces, logs, report, sealedSecrets, opts.secrets);
      report.objects = report.namespaces.objects ?? 0;
      await c.query('COMMIT');
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      held.release();
    }
  } catch (e) {
    throw storeError(e, `cannot copy the store to ${redactUrl(opts.to)}`, opts.to);
  } finally {
    await pool.end().catch(() => undefined);
  }
  return report;
}

/** Read everything back inside the copy's transaction and compare it with the source. @throws TyError E_STORE */
async function verify(
  c: import('pg').PoolClient,
  source: FileStoreBackend,
  namespaces: string[],
  logs: string[],
  report: CopyReport,
  secrets: PgSecrets,
  from: SecretValues | undefined,
): Promise<void> {
  const mismatch = (what: string): never => {
    throw new TyError('E_STORE', `verification failed after copying: ${what}; nothing was copied`, { mismatch: what });
  };
  for (const ns of namespaces) {
    const rows = await c.query<{ key: string; value: Buffer }>(
      'SELECT key, value FROM tycli_entries WHERE ns = $1 ORDER BY key COLLATE "C"',
      [ns],
    );
    if (rows.rows.length !== (report.namespaces[ns] ?? 0)) mismatch(`namespace ${ns} has ${rows.rows.length} entries`);
    for (const r of rows.rows) {
      const src = await source.get(ns, r.key);
      if (!src || Buffer.compare(Buffer.from(src), r.value) !== 0) mismatch(`${ns}/${r.key} differs`);
      if (ns === 'objects' && (await cidOfBytes(new Uint8Array(r.value))) !== r.key)
        mismatch(`object ${r.key} does not hash to its id`);
    }
  }
  for (const log of logs) {
    const got = await c.query<{ line: string }>('SELECT line FROM tycli_log WHERE log = $1 ORDER BY seq', [log]);
    const want = (await source.readLog(log)).filter((l) => l.length > 0 && !/[\r\n]/.test(l));
    if (got.rows.length !== want.length) mismatch(`log ${log} has ${got.rows.length} lines, not ${want.length}`);
    got.rows.forEach((r, i) => {
      if (r.line !== want[i]) mismatch(`log ${log} line ${i + 1} differs`);
    });
  }
  if (from)
    for (const name of await secrets.names())
      if ((await secrets.get(name)) !== (await from.get(name))) mismatch(`secret ${name} does not unseal to its value`);
}
