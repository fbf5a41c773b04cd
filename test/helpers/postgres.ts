// A private PostgreSQL cluster for one test file (initdb in a temporary folder, a loopback port, stopped afterwards);
// test side.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';

/** A running cluster: its superuser URL, a way to make databases, and stop(). */
export interface TestPostgres {
  /** `postgres://USER@127.0.0.1:PORT/postgres` (trust authentication on loopback only). */
  readonly url: string;
  readonly port: number;
  /** The cluster's data folder. */
  readonly dir: string;
  /** A fresh empty database; returns its URL. */
  createDatabase(name?: string): Promise<string>;
  /** Run SQL as the superuser through psql (its unaligned output); throws on the first error (ON_ERROR_STOP). */
  psql(sql: string, db?: string): string;
  /** Fast shutdown; idempotent. */
  stop(): Promise<void>;
}

/** The newest Debian server binaries (/usr/lib/postgresql/N/bin), or undefined when PostgreSQL is not installed. */
export function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => /^\d+$/.test(v) && existsSync(join(root, v, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

/** A free loopback TCP port (bound then released; the caller binds it at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** The uid/gid the cluster runs as: the current user, or Debian's `postgres` user when the tests run as root. */
function clusterUser(): { uid: number; gid: number; name: string } {
  const uid = process.getuid?.() ?? 0;
  if (uid !== 0) return { uid, gid: process.getgid?.() ?? 0, name: execFileSync('id', ['-un']).toString().trim() };
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres']).toString().trim());
  return { uid: id('-u'), gid: id('-g'), name: 'postgres' };
}

/**
 * Start a private cluster: initdb (trust on loopback), then the postmaster as a child of this process on
 * 127.0.0.1:PORT, its socket in the cluster folder, killed with this process (setpriv --pdeathsig) so a crashed test
 * leaves no postmaster behind. `synchronous_commit` and `fsync` keep their defaults (on).
 * @throws when PostgreSQL is not installed (.ci/system-deps installs it) or the server does not start in 60 s.
 */
export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBin();
  if (!bin) throw new Error('PostgreSQL is not installed (run bash .ci/system-deps, as root)');
  const user = clusterUser();
  const dir = mkdtempSync(join(tmpdir(), 'ty-pg-'));
  chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  const asUser = (cmd: string, args: string[]): [string, string[]] =>
    process.getuid?.() === 0
      ? ['setpriv', ['--reuid', String(user.uid), '--regid', String(user.gid), '--clear-groups', cmd, ...args]]
      : [cmd, args];
  const [initCmd, initArgs] = asUser(join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    user.name,
    '--auth=trust',
    '--encoding=UTF8',
    '--locale=C',
    '--no-sync',
  ]);
  execFileSync(initCmd, initArgs, { stdio: ['ignore', 'ignore', 'pipe'], cwd: dir });
  // loopback only: trust on 127.0.0.1, nothing else
  writeFileSync(join(data, 'pg_hba.conf'), 'local all all trust\nhost all all 127.0.0.1/32 trust\n');
  let child: ChildProcess | undefined;
  let port = 0;
  for (let attempt = 0; attempt < 5 && !child; attempt++) {
    port = await freePort();
    const [cmd, args] = asUser('setpriv', [
      '--pdeathsig',
      'SIGQUIT',
      join(bin, 'postgres'),
      '-D',
      data,
      '-k',
      dir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'max_connections=300',
      '-c',
      'shared_buffers=32MB',
    ]);
    const c = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], cwd: dir });
    let log = '';
    c.stderr?.on('data', (d) => (log += String(d)));
    const ready = await waitReady(bin, dir, port, c);
    if (ready) child = c;
    else {
      c.kill('SIGKILL');
      if (!/could not bind|Address already in use/.test(log)) throw new Error(`postgres did not start:\n${log}`);
    }
  }
  if (!child) throw new Error('postgres did not start: no free port');
  const running = child;
  let stopped: Promise<void> | undefined;
  const url = `postgres://${user.name}@127.0.0.1:${port}/postgres`;
  let dbs = 0;
  const psql = (sql: string, db = 'postgres'): string =>
    execFileSync(
      'psql',
      [
        '-X',
        '-A',
        '-t',
        '-q',
        '-v',
        'ON_ERROR_STOP=1',
        '-h',
        '127.0.0.1',
        '-p',
        String(port),
        '-U',
        user.name,
        '-d',
        db,
      ],
      {
        input: sql,
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    )
      .toString()
      .trim();
  return {
    url,
    port,
    dir,
    psql,
    async createDatabase(name?: string) {
      const db = name ?? `t${process.pid}_${dbs++}`;
      psql(`CREATE DATABASE "${db}"`);
      return `postgres://${user.name}@127.0.0.1:${port}/${db}`;
    },
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        const done = () => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        };
        if (running.exitCode !== null || running.signalCode !== null) return done();
        running.once('exit', done);
        // SIGINT: PostgreSQL's fast shutdown (open sessions are ended)
        running.kill('SIGINT');
        setTimeout(() => running.kill('SIGKILL'), 20_000).unref();
      });
      return stopped;
    },
  };
}

async function waitReady(bin: string, dir: string, port: number, child: ChildProcess): Promise<boolean> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) return false;
    try {
      execFileSync(join(bin, 'pg_isready'), ['-q', '-h', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
      return true;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return false;
}

/**
 * Register beforeAll/afterAll hooks for one cluster shared by a test file's tests. The returned object is valid
 * inside tests (after beforeAll).
 */
export function usePostgres(): { readonly pg: TestPostgres } {
  let pg: TestPostgres | undefined;
  beforeAll(async () => {
    pg = await startPostgres();
  }, 120_000);
  afterAll(async () => {
    await pg?.stop();
  }, 60_000);
  return {
    get pg() {
      if (!pg) throw new Error('the test cluster is not started');
      return pg;
    },
  };
}
