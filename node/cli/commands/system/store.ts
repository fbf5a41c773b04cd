// tycli store migrate | copy --to postgres://... | where: the PostgreSQL store's schema, moving a file store into it;
// Node host, trusted side.
import type { CliCommand, CliContext } from '../../types.js';
import { note, out, outJson, usage } from '../../output.js';

const migrate: CliCommand = {
  path: ['store', 'migrate'],
  summary: 'apply the PostgreSQL store schema migrations (numbered, each once, under an advisory lock)',
  usage: `Usage: tycli store migrate

Brings the database named by TYCLI_STORE (or the user setting store.url) to the schema this tycli needs:
numbered migrations, each applied once in its own transaction, under an advisory lock (instances starting
together wait for one another). Run it before instances of a new version start: an instance refuses a
database whose schema is not the one it knows. A database newer than this tycli is refused (E_STORE).
With --json: {"ok":true,"store":"postgres://user:***@...","applied":[{"id":1,"name":"..."}],"version":N}.`,
  allowPositionals: false,
  async run(ctx: CliContext) {
    const { storeUrlFrom, userStoreUrl } = await import('../../../store/open.js');
    const url = storeUrlFrom(ctx.env, await userStoreUrl(ctx.globals.home));
    if (url === undefined)
      usage('no PostgreSQL store is configured: set TYCLI_STORE=postgres://... (or store.url in your user settings)');
    const [{ openPool, redactUrl, withClient, storeError }, { migrate: apply }] = await Promise.all([
      import('../../../store/postgres/pool.js'),
      import('../../../store/postgres/migrations.js'),
    ]);
    const pool = await openPool(url, { max: 1, applicationName: 'tycli-migrate' });
    try {
      const r = await withClient(pool, (c) => apply(c)).catch((e: unknown) => {
        throw storeError(e, `cannot migrate the store at ${redactUrl(url)}`, url);
      });
      if (ctx.globals.json) outJson(ctx, { ok: true, store: redactUrl(url), ...r });
      else if (r.applied.length === 0) out(ctx, `${redactUrl(url)}: schema version ${r.version}, up to date`);
      else {
        for (const m of r.applied) note(ctx, `applied migration ${m.id}: ${m.name}`);
        out(ctx, `${redactUrl(url)}: schema version ${r.version}`);
      }
      return 0;
    } finally {
      await pool.end();
    }
  },
};

const copy: CliCommand = {
  path: ['store', 'copy'],
  summary: "copy this machine's file store into a PostgreSQL database, verifying every object and record",
  usage: `Usage: tycli store copy --to postgres://USER@HOST/DB

Copies the file store under the home (--home, TYCLI_HOME or the per-user data folder) into the database:
migrates its schema, then in one transaction every namespace (revisions, bindings, grants, decisions,
settings revisions, tool storage, pauses, tokens), every log line in order (the audit) and every secret,
sealed with AES-256-GCM under the key in TYCLI_STORE_KEY_FILE (required when there are secrets). Everything is
read back and compared byte for byte (revision objects re-hashed against their content ids) before the
transaction commits: a difference, an altered object in the file store or a database that already holds a
store changes nothing. The file store is only read. Then point the instances at the database with
TYCLI_STORE. With --json: {"ok":true,"to":"...","namespaces":{...},"objects":N,"logs":{...},"secrets":N}.`,
  options: { to: { type: 'string' } },
  allowPositionals: false,
  async run(ctx: CliContext, v) {
    const to = v.to;
    if (typeof to !== 'string' || to === '') usage('give the target: tycli store copy --to postgres://...');
    const [{ copyFileStore }, { checkStoreUrl }, { loadStoreKey, STORE_KEY_ENV }, { tycliPaths }, { SecretsFile }] =
      await Promise.all([
        import('../../../store/postgres/copy.js'),
        import('../../../store/postgres/pool.js'),
        import('../../../store/postgres/secrets.js'),
        import('../../../store/paths.js'),
        import('../../../store/secrets.js'),
      ]);
    checkStoreUrl(to);
    const paths = tycliPaths(ctx.globals.home);
    const keyFile = ctx.env[STORE_KEY_ENV]?.trim();
    const report = await copyFileStore({
      from: paths.store,
      to,
      secrets: new SecretsFile(paths.secretsFile),
      ...(keyFile ? { key: await loadStoreKey(keyFile) } : {}),
      onProgress: (line) => note(ctx, line),
    });
    if (ctx.globals.json) outJson(ctx, { ok: true, ...report });
    else {
      const entries = Object.values(report.namespaces).reduce((a, b) => a + b, 0);
      const lines = Object.values(report.logs).reduce((a, b) => a + b, 0);
      out(
        ctx,
        `copied to ${report.to} and verified: ${entries} entries (${report.objects} revision objects), ` +
          `${lines} log lines, ${report.secrets} secret(s)`,
      );
    }
    return 0;
  },
};

const where: CliCommand = {
  path: ['store', 'where'],
  summary: 'say which store this tycli uses: the file store folder, or the PostgreSQL URL (password hidden)',
  usage: `Usage: tycli store where

Prints the store in force: TYCLI_STORE, else the user setting store.url, else the file store under the home.
With --json: {"ok":true,"kind":"file"|"postgres","where":"..."}.`,
  allowPositionals: false,
  async run(ctx: CliContext) {
    const { openTycliStore } = await import('../../../store/open.js');
    const opened = await openTycliStore({ home: ctx.globals.home, env: ctx.env });
    try {
      if (ctx.globals.json) outJson(ctx, { ok: true, kind: opened.kind, where: opened.where });
      else out(ctx, `${opened.kind} store: ${opened.where}`);
      return 0;
    } finally {
      await opened.close();
    }
  },
};

export const storeCommands: CliCommand[] = [migrate, copy, where];
