// The PostgreSQL store's schema as numbered migrations, applied in order under an advisory lock; Node host, trusted
// side.
import { TyError } from '../../../core/errors.js';
import type { PgQueryable } from './pool.js';

/** One schema step: applied once, in a transaction of its own, recorded in `tycli_schema`. */
export interface Migration {
  /** 1, 2, 3, ...: applied in this order, never renumbered or edited once released. */
  id: number;
  name: string;
  sql: string;
}

/** The key pattern of core/store/contract.ts KEY_RE, checked by the database too (no path tricks either way). */
const KEY_CHECK = (col: string): string => `${col} ~ '^[A-Za-z0-9._@:-]{1,200}$' AND left(${col}, 1) <> '.'`;

/**
 * Namespaces whose changes every instance hears at once (LISTEN tycli_changes): the tool list (bindings), tokens
 * (revocation), pauses and permanent decisions. Other writes notify nobody (a NOTIFY serializes commits).
 */
export const NOTIFIED_NAMESPACES = ['bindings', 'tokens', 'pause', 'decisions', 'mcp-definitions'] as const;

/** The channel of change notifications: payload `NS/KEY`. */
export const CHANGES_CHANNEL = 'tycli_changes';
/** The channel of question events: payload `asked:ID`, `answered:ID` or `gone:ID`. */
export const QUESTIONS_CHANNEL = 'tycli_questions';

export const MIGRATIONS: readonly Migration[] = [
  {
    id: 1,
    name: 'entries, append-only log, secrets, questions, instances',
    sql: `
CREATE TABLE tycli_entries (
  ns text NOT NULL CHECK (${KEY_CHECK('ns')}),
  key text NOT NULL CHECK (${KEY_CHECK('key')}),
  value bytea NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (ns, key)
);

CREATE TABLE tycli_log (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  log text NOT NULL CHECK (${KEY_CHECK('log')}),
  line text NOT NULL CHECK (strpos(line, E'\\n') = 0 AND strpos(line, E'\\r') = 0),
  at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tycli_log_by_name ON tycli_log (log, seq);

-- The audit is append-only: no row of tycli_log is ever changed or removed, whoever asks.
CREATE FUNCTION tycli_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'tycli_log is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER tycli_log_no_change BEFORE UPDATE OR DELETE ON tycli_log
  FOR EACH ROW EXECUTE FUNCTION tycli_log_append_only();
CREATE TRIGGER tycli_log_no_truncate BEFORE TRUNCATE ON tycli_log
  FOR EACH STATEMENT EXECUTE FUNCTION tycli_log_append_only();

CREATE FUNCTION tycli_entries_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
  IF r.ns IN (${NOTIFIED_NAMESPACES.map((n) => `'${n}'`).join(', ')}) THEN
    PERFORM pg_notify('${CHANGES_CHANNEL}', r.ns || '/' || r.key);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER tycli_entries_notify AFTER INSERT OR UPDATE OR DELETE ON tycli_entries
  FOR EACH ROW EXECUTE FUNCTION tycli_entries_changed();

-- Secret values, sealed with AES-256-GCM by the instances (the key never enters the database).
CREATE TABLE tycli_secrets (
  name text PRIMARY KEY,
  key_id text NOT NULL,
  nonce bytea NOT NULL CHECK (length(nonce) = 12),
  sealed bytea NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Processes using the store; one is alive while its session holds the advisory lock (${'`'}instances.ts${'`'}).
CREATE TABLE tycli_instances (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  host text NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tycli_instances_by_host ON tycli_instances (host);

-- Waiting questions and their answers: the first answer is final (one row per question id).
CREATE TABLE tycli_questions (
  id text PRIMARY KEY CHECK (id ~ '^[a-z2-7]{24}$'),
  instance bigint NOT NULL,
  doc text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE tycli_answers (
  id text PRIMARY KEY REFERENCES tycli_questions (id) ON DELETE CASCADE,
  doc text NOT NULL,
  answered_at timestamptz NOT NULL DEFAULT now()
);
`,
  },
];

/** The advisory lock taken while migrating (two instances starting at once migrate one after the other). */
const MIGRATE_LOCK = 0x7479_6d67; // 'tymg'

export interface MigrationReport {
  /** Migrations applied by this call, in order. */
  applied: { id: number; name: string }[];
  /** The schema version now (the highest applied id). */
  version: number;
}

/**
 * The schema version of the database: the highest applied migration id, 0 for an empty database.
 * @throws TyError E_STORE when the database cannot be read.
 */
export async function schemaVersion(db: PgQueryable): Promise<number> {
  const t = await db.query<{ exists: boolean }>("SELECT to_regclass('tycli_schema') IS NOT NULL AS exists");
  if (!t.rows[0]?.exists) return 0;
  const r = await db.query<{ v: number | null }>('SELECT max(id)::int AS v FROM tycli_schema');
  return r.rows[0]?.v ?? 0;
}

/**
 * Apply every migration not yet applied, each in its own transaction, under an advisory lock so that instances
 * starting together do not race. Idempotent.
 * @throws TyError E_STORE when the database holds a newer schema than this tycli knows (`data.version`,
 *   `data.known`), or a migration fails (nothing of it is applied).
 */
export async function migrate(
  db: PgQueryable,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<MigrationReport> {
  const known = migrations.reduce((m, x) => Math.max(m, x.id), 0);
  const applied: { id: number; name: string }[] = [];
  await db.query('SELECT pg_advisory_lock($1)', [MIGRATE_LOCK]);
  try {
    await db.query(
      `CREATE TABLE IF NOT EXISTS tycli_schema (id int PRIMARY KEY, name text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const version = await schemaVersion(db);
    if (version > known)
      throw new TyError(
        'E_STORE',
        `the database schema is version ${version}, newer than this tycli knows (${known}); upgrade tycli`,
        { reason: 'schema-newer', version, known },
      );
    for (const m of [...migrations].sort((a, b) => a.id - b.id)) {
      if (m.id <= version) continue;
      await db.query('BEGIN');
      try {
        await db.query(m.sql);
        await db.query('INSERT INTO tycli_schema (id, name) VALUES ($1, $2)', [m.id, m.name]);
        await db.query('COMMIT');
      } catch (e) {
        await db.query('ROLLBACK').catch(() => undefined);
        throw new TyError('E_STORE', `migration ${m.id} (${m.name}) failed: ${(e as Error).message}`, {
          reason: 'migration-failed',
          migration: m.id,
        });
      }
      applied.push({ id: m.id, name: m.name });
    }
    return { applied, version: Math.max(version, ...applied.map((a) => a.id)) };
  } finally {
    await db.query('SELECT pg_advisory_unlock($1)', [MIGRATE_LOCK]).catch(() => undefined);
  }
}

/**
 * Refuse to use a database whose schema is not exactly the one this tycli knows.
 * @throws TyError E_STORE (`data.reason` `schema-missing`, `schema-old` or `schema-newer`) with the command to run.
 */
export async function checkSchema(db: PgQueryable, migrations: readonly Migration[] = MIGRATIONS): Promise<void> {
  const known = migrations.reduce((m, x) => Math.max(m, x.id), 0);
  const version = await schemaVersion(db);
  if (version === known) return;
  if (version > known)
    throw new TyError(
      'E_STORE',
      `the database schema is version ${version}, newer than this tycli knows (${known}); upgrade tycli`,
      { reason: 'schema-newer', version, known },
    );
  throw new TyError(
    'E_STORE',
    version === 0
      ? 'the database has no tycli schema yet; run: tycli store migrate'
      : `the database schema is version ${version}, this tycli needs ${known}; run: tycli store migrate`,
    { reason: version === 0 ? 'schema-missing' : 'schema-old', version, known },
  );
}
