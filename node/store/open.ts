// Which store a tycli process uses: the file store under its home (the embedded default) or PostgreSQL
// (TYCLI_STORE=postgres://... or the setting store.url), with its secrets and instance liveness; Node host, trusted
// side.
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { TyError } from '../../core/errors.js';
import type { SecretValues } from '../../core/capabilities/secrets.js';
import type { StoreBackend } from '../../core/store/contract.js';
import { hostIdentity, hostIdentityAlive } from '../process/identity.js';
import { FileStoreBackend } from './file-store.js';
import { ensurePrivateDir, tycliPaths } from './paths.js';
import { checkStoreUrl, isPostgresUrl, redactUrl } from './postgres/pool.js';
import { SecretsFile } from './secrets.js';
import type { WaitingQuestions } from '../ask/waiting.js';

/** The environment variable naming the store (`postgres://...`; empty or unset: the file store). */
export const STORE_ENV = 'TYCLI_STORE';

/**
 * The store URL in force: TYCLI_STORE when set and not empty, else the setting `store.url`; undefined means the file
 * store. @throws TyError E_USAGE for a value that is not a postgres:// URL.
 */
export function storeUrlFrom(env: NodeJS.ProcessEnv, settingsUrl?: string): string | undefined {
  const v = env[STORE_ENV]?.trim() || settingsUrl?.trim() || undefined;
  if (v === undefined) return undefined;
  if (!isPostgresUrl(v))
    throw new TyError(
      'E_USAGE',
      `${env[STORE_ENV]?.trim() ? STORE_ENV : 'the setting store.url'} must be a postgres:// URL (unset it for the file store)`,
    );
  checkStoreUrl(v);
  return v;
}

/**
 * `store.url` of the user settings file, read only when the file mentions a store (so a host without one never loads
 * the settings schema for it); checked by node/settings/load.ts readSettingsFile like any settings read (owner, mode,
 * schema). @throws TyError E_INVALID_SETTINGS
 */
export async function userStoreUrl(home: string): Promise<string | undefined> {
  const p = tycliPaths(home);
  for (const file of [p.settingsFile, p.legacySettingsFile]) {
    if (file === undefined) continue;
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      continue;
    }
    if (!text.includes('"store"')) return undefined;
    const { readSettingsFile } = await import('../settings/load.js');
    return (await readSettingsFile(file))?.store?.url;
  }
  return undefined;
}

export interface OpenedStore {
  kind: 'file' | 'postgres';
  backend: StoreBackend;
  /** Secret values: `config/secrets.json` (0600) for the file store, sealed rows for PostgreSQL. */
  secrets: SecretValues;
  /** Where the store is, for messages: the folder, or the URL with its password redacted. */
  where: string;
  /**
   * PostgreSQL: this process's instance session (registered, holding its liveness lock, listening), started on first
   * use and closed with the store; the file store has none.
   */
  session(): Promise<import('./postgres/session.js').PgSession | undefined>;
  /**
   * Whether the host that wrote a `started` audit record still runs: on PostgreSQL an instance holding its lock (any
   * machine) or a live process of this machine; on the file store this machine's processes (node/process/identity.ts).
   */
  hostAlive(): Promise<(host: string) => boolean>;
  /**
   * The waiting-question store: the files under the home, or PostgreSQL's shared tables (with `events`, or once the
   * session is started, it hears every instance's question events).
   */
  questions(opts?: { events?: boolean }): Promise<WaitingQuestions>;
  close(): Promise<void>;
}

export interface OpenStoreOptions {
  home: string;
  env?: NodeJS.ProcessEnv;
  /** The setting `store.url` (default: read from the user settings file when TYCLI_STORE is not set). */
  settingsUrl?: string;
  /** Apply pending migrations instead of refusing an old schema (`tycli store migrate`). */
  migrate?: boolean;
  /** PostgreSQL pool size (default 10). */
  maxConnections?: number;
}

/**
 * Open the store a process uses (storeUrlFrom). The file store creates `<home>/store` (0700); PostgreSQL connects and
 * checks the schema, and reads the store key named by TYCLI_STORE_KEY_FILE when set (without it, secret values are
 * refused with E_STORE, names still listed).
 * @throws TyError E_USAGE (bad URL), E_STORE (unreachable database, schema to migrate, unreadable key file).
 */
export async function openTycliStore(o: OpenStoreOptions): Promise<OpenedStore> {
  const env = o.env ?? process.env;
  const url = storeUrlFrom(env, o.settingsUrl ?? (env[STORE_ENV]?.trim() ? undefined : await userStoreUrl(o.home)));
  const paths = tycliPaths(o.home);
  if (url === undefined) {
    await ensurePrivateDir(paths.home);
    await ensurePrivateDir(paths.store);
    const backend = new FileStoreBackend(paths.store);
    return {
      kind: 'file',
      backend,
      secrets: new SecretsFile(paths.secretsFile, (fn) => backend.withLock('secrets-file', fn)),
      where: paths.store,
      session: async () => undefined,
      hostAlive: async () => hostIdentityAlive,
      questions: async () => {
        const { QuestionStore, questionsDir } = await import('../ask/store.js');
        return new QuestionStore(questionsDir(o.home));
      },
      close: async () => undefined,
    };
  }
  const [{ PgStoreBackend }, { PgSecrets, STORE_KEY_ENV, loadStoreKey }] = await Promise.all([
    import('./postgres/backend.js'),
    import('./postgres/secrets.js'),
  ]);
  const keyFile = env[STORE_KEY_ENV]?.trim();
  const key = keyFile ? await loadStoreKey(keyFile) : undefined;
  const backend = await PgStoreBackend.open(url, {
    ...(o.migrate ? { migrate: true } : {}),
    ...(o.maxConnections ? { maxConnections: o.maxConnections } : {}),
  });
  let session: Promise<import('./postgres/session.js').PgSession> | undefined;
  const startSession = (): Promise<import('./postgres/session.js').PgSession> => {
    session ??= import('./postgres/session.js').then(({ PgSession }) => PgSession.start(url, { host: hostIdentity() }));
    return session;
  };
  const me = hostname();
  return {
    kind: 'postgres',
    backend,
    secrets: new PgSecrets(backend.pool, key),
    where: redactUrl(url),
    session: startSession,
    async questions(q = {}) {
      const { PgQuestionStore } = await import('./postgres/questions.js');
      const s = q.events || session ? await startSession() : undefined;
      return new PgQuestionStore(backend.pool, s, url);
    },
    async hostAlive() {
      const { liveHosts } = await import('./postgres/session.js');
      const live = await liveHosts(backend.pool);
      return (host) => live.has(host) || (host.startsWith(`${me}:`) && hostIdentityAlive(host));
    },
    async close() {
      const s = await session?.catch(() => undefined);
      await s?.close();
      await backend.close();
    },
  };
}
