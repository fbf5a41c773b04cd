// Secrets at rest in the PostgreSQL store: AES-256-GCM under a key file, only ciphertext in the database; test side.
import { afterAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { usePostgres } from '../../../test/helpers/postgres.js';
import { PgStoreBackend } from './backend.js';
import { PgSecrets, loadStoreKey, seal, unseal } from './secrets.js';

const cluster = usePostgres();
const tmp = mkdtempSync(join(tmpdir(), 'ty-pgkey-'));
const opened: PgStoreBackend[] = [];
afterAll(async () => {
  await Promise.all(opened.map((b) => b.close()));
  rmSync(tmp, { recursive: true, force: true });
});
let n = 0;
function keyFile(content: Buffer | string, mode = 0o600): string {
  const p = join(tmp, `k${n++}`);
  writeFileSync(p, content);
  chmodSync(p, mode);
  return p;
}

describe('store key file', () => {
  it('accepts 32 raw bytes, 64 hex characters or base64, and gives each key a stable public id', async () => {
    const raw = randomBytes(32);
    const a = await loadStoreKey(keyFile(raw));
    const b = await loadStoreKey(keyFile(`${raw.toString('hex')}\n`));
    const c = await loadStoreKey(keyFile(raw.toString('base64')));
    expect(a.id).toMatch(/^[0-9a-f]{16}$/);
    expect([b.id, c.id]).toEqual([a.id, a.id]);
    expect(a.id).not.toContain(raw.toString('hex').slice(0, 16));
  });
  it('refuses a key others may read, a short key and a missing file, without showing the content', async () => {
    const raw = randomBytes(32);
    await expect(loadStoreKey(keyFile(raw, 0o644))).rejects.toMatchObject({
      code: 'E_STORE',
      message: expect.stringContaining('chmod 600'),
    });
    const short = keyFile('abc123');
    const err = await loadStoreKey(short).catch((e: Error) => e);
    expect(err).toMatchObject({ code: 'E_STORE' });
    expect((err as Error).message).not.toContain('abc123');
    await expect(loadStoreKey(join(tmp, 'absent'))).rejects.toMatchObject({ code: 'E_STORE' });
  });
  it('a sealed value opens only under its key and its name (AES-256-GCM with the name as additional data)', async () => {
    const k1 = await loadStoreKey(keyFile(randomBytes(32)));
    const k2 = await loadStoreKey(keyFile(randomBytes(32)));
    const s = seal(k1, 'TOKEN', 'value-1');
    expect(unseal(k1, 'TOKEN', s.nonce, s.sealed)).toBe('value-1');
    expect(() => unseal(k2, 'TOKEN', s.nonce, s.sealed)).toThrow(/does not authenticate/);
    expect(() => unseal(k1, 'OTHER', s.nonce, s.sealed)).toThrow(/does not authenticate/);
    const flipped = Buffer.from(s.sealed);
    flipped[0] = (flipped[0] ?? 0) ^ 1;
    expect(() => unseal(k1, 'TOKEN', s.nonce, flipped)).toThrow(/does not authenticate/);
    // a fresh nonce every time: the same value never seals to the same bytes
    expect(seal(k1, 'TOKEN', 'value-1').sealed.equals(s.sealed)).toBe(false);
  });
});

describe('PgSecrets', () => {
  it('stores only ciphertext: the value is in no column of the database, and comes back under the key', async () => {
    const url = await cluster.pg.createDatabase();
    const b = await PgStoreBackend.open(url, { migrate: true });
    opened.push(b);
    const key = await loadStoreKey(keyFile(randomBytes(32)));
    const secrets = new PgSecrets(b.pool, key);
    const value = `sk-live-${randomBytes(12).toString('hex')}`;
    await secrets.set('API_TOKEN', value);
    expect(await secrets.get('API_TOKEN')).toBe(value);
    expect(await secrets.names()).toEqual(['API_TOKEN']);
    const dump = cluster.pg.psql(
      "SELECT name, key_id, encode(nonce, 'escape'), encode(sealed, 'escape') FROM tycli_secrets",
      new URL(url).pathname.slice(1),
    );
    expect(dump).toContain('API_TOKEN');
    expect(dump).not.toContain(value);
    expect(dump).not.toContain(key.bytes.toString('hex'));
    // the whole database, as pg_dump would write it (backups hold only ciphertext)
    const all = cluster.pg.psql(
      "SELECT string_agg(encode(value, 'escape'), '') FROM tycli_entries",
      new URL(url).pathname.slice(1),
    );
    expect(all).not.toContain(value);
  });
  it('without a key, values are refused (names still listed); under another key they are refused naming both ids', async () => {
    const url = await cluster.pg.createDatabase();
    const b = await PgStoreBackend.open(url, { migrate: true });
    opened.push(b);
    const k1 = await loadStoreKey(keyFile(randomBytes(32)));
    const k2 = await loadStoreKey(keyFile(randomBytes(32)));
    await new PgSecrets(b.pool, k1).set('A', 'one');
    const none = new PgSecrets(b.pool, undefined);
    expect(await none.names()).toEqual(['A']);
    await expect(none.get('A')).rejects.toMatchObject({ code: 'E_STORE', data: { reason: 'no-store-key' } });
    await expect(none.set('B', 'x')).rejects.toMatchObject({ code: 'E_STORE' });
    await expect(new PgSecrets(b.pool, k2).get('A')).rejects.toMatchObject({
      code: 'E_STORE',
      data: { reason: 'other-store-key', sealedWith: k1.id, configured: k2.id },
    });
    expect(await new PgSecrets(b.pool, k1).delete('A')).toBe(true);
    expect(await new PgSecrets(b.pool, k1).delete('A')).toBe(false);
  });
  it('a row moved under another name does not open (the name is authenticated)', async () => {
    const url = await cluster.pg.createDatabase();
    const b = await PgStoreBackend.open(url, { migrate: true });
    opened.push(b);
    const key = await loadStoreKey(keyFile(randomBytes(32)));
    const s = new PgSecrets(b.pool, key);
    await s.set('PROD_TOKEN', 'prod-value');
    await s.set('TEST_TOKEN', 'test-value');
    cluster.pg.psql(
      `UPDATE tycli_secrets SET nonce = p.nonce, sealed = p.sealed FROM tycli_secrets p
        WHERE tycli_secrets.name = 'TEST_TOKEN' AND p.name = 'PROD_TOKEN'`,
      new URL(url).pathname.slice(1),
    );
    await expect(s.get('TEST_TOKEN')).rejects.toMatchObject({ code: 'E_STORE' });
  });
});
