// Waiting-question store: questions as 0600 files in the user's state folder, answered by `tycli answer`; Node host,
// trusted side.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { constants as fsc, watch, type FSWatcher } from 'node:fs';
import { chmod, link, lstat, mkdir, open, readdir, unlink } from 'node:fs/promises';
import { createConnection, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { TyError } from '../../core/errors.js';
import type { Question } from '../../core/exec/runtime.js';
import { tycliPaths } from '../store/paths.js';
import {
  alreadyAnswered,
  answerDoc,
  questionDoc,
  type AnswerOutcome,
  type GivenAnswer,
  type WaitingQuestions,
  type WatchLock,
} from './waiting.js';
import { QUESTION_ID_RE, newQuestionId } from './question-id.js';
import type { StoredAnswer, StoredQuestion } from './schemas.js';
import { writeFileAtomic } from '../store/atomic.js';

const WATCH_SOCKET_RE = /^watch-[0-9a-f]{24}\.sock$/;
/** Reply prefix of a watcher: `tysandbox-questions-watch/1 HMAC-SHA256(key, nonce) hex`. */
const GREETING = 'tysandbox-questions-watch/1 ';
const KEY_FILE = '.watch-key';
/** Longest Unix socket path we bind, bytes (sun_path is 108 on Linux, 104 on macOS, with a NUL). */
const MAX_SOCKET_PATH = 103;
/** Largest question or answer file read, bytes. */
const MAX_FILE_BYTES = 1024 * 1024;

/** The store's folder under the home folder: `HOME/state/questions` (node/store/paths.ts), never inside a sandbox. */
export function questionsDir(home: string): string {
  return tycliPaths(home).questions;
}

export type { StoredAnswer, StoredQuestion } from './schemas.js';
/** The stored-file schemas (zod): loaded by the first question stored or read, not by every host that might ask. */
const schemas = () => import('./schemas.js');

function isCode(e: unknown, ...codes: string[]): boolean {
  return typeof e === 'object' && e !== null && codes.includes((e as { code?: unknown }).code as string);
}

function checkId(id: string): void {
  if (typeof id !== 'string' || !QUESTION_ID_RE.test(id))
    throw new TyError('E_USAGE', 'a question id is 24 characters of a-z and 2-7 (as `tycli questions` shows it)');
}

/** Read a small regular file without following a symlink; undefined when absent. */
async function readPlain(path: string): Promise<string | undefined> {
  let fh;
  try {
    fh = await open(path, fsc.O_RDONLY | fsc.O_NOFOLLOW);
  } catch (e) {
    if (isCode(e, 'ENOENT', 'ELOOP')) return undefined;
    throw new TyError('E_STORE', `cannot read the question store (${(e as { code?: string }).code ?? 'error'})`);
  }
  try {
    const st = await fh.stat();
    if (!st.isFile() || st.size > MAX_FILE_BYTES) return undefined;
    return await fh.readFile('utf8');
  } finally {
    await fh.close();
  }
}

/** Whether process `pid` exists (kill(pid, 0)); EPERM means it exists under another user. */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return isCode(e, 'EPERM');
  }
}

/** The liveness lock of a file store: a listening Unix socket. */
export interface SocketWatchLock extends WatchLock {
  /** The socket path the lock listens on. */
  readonly path: string;
}

/**
 * The waiting-question store, a folder of the user's alone (0700, not a symlink, owned by this uid):
 * `ID.json` (0600) holds a waiting question, `ID.answer` (0600) its answer. The first answer is final:
 * it is written whole to a private temp file, then hard-linked to `ID.answer`, which fails with EEXIST
 * when an answer exists (link(2) never replaces, like O_EXCL). Questions are written atomically (node/store/atomic.ts).
 *
 * Liveness lock: an answering surface (`tycli questions --watch`) listens on a Unix socket
 * `watch-<random>.sock` (0600) in the folder and answers each connection's random nonce with
 * HMAC-SHA256 under the store key `.watch-key` (0600). The store is live while one such socket answers
 * correctly; a watcher that dies (even by SIGKILL) stops accepting at once, since the kernel closes its
 * listening socket, and its leftover socket file is removed by the next check (ECONNREFUSED).
 */
export class QuestionStore implements WaitingQuestions {
  constructor(readonly dir: string) {}

  /** File events in the folder (fs.watch), with the question id when the file names one. */
  onChange(fn: (id?: string) => void): () => void {
    let w: FSWatcher | undefined;
    try {
      w = watch(this.dir, { persistent: false }, (_e, file) => {
        const m = file === null ? null : /^([a-z2-7]{24})\./.exec(String(file));
        fn(m ? m[1] : undefined);
      });
      w.on('error', () => undefined);
    } catch {
      /* no events (the folder is not there yet): callers poll */
    }
    return () => w?.close();
  }

  /**
   * Create the folder (0700) or check it. @throws TyError E_STORE when it is a symlink, not ours, or open to others.
   */
  async ensureDir(): Promise<void> {
    try {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
    } catch (e) {
      throw new TyError('E_STORE', `cannot create the question folder (${(e as { code?: string }).code ?? 'error'})`);
    }
    const st = await lstat(this.dir);
    if (!st.isDirectory())
      throw new TyError('E_STORE', 'the question folder is not a plain folder (a symlink or file is in its place)');
    if (typeof process.getuid === 'function' && st.uid !== process.getuid())
      throw new TyError('E_STORE', 'the question folder belongs to another user');
    if ((st.mode & 0o077) !== 0) await chmod(this.dir, 0o700);
  }

  private path(id: string, ext: 'json' | 'answer'): string {
    return join(this.dir, `${id}.${ext}`);
  }

  /** Write `text` to a fresh 0600 temp file in the folder (O_EXCL); returns its path. */
  private async writeTemp(text: string): Promise<string> {
    const tmp = join(this.dir, `.tmp-${randomBytes(12).toString('hex')}`);
    const fh = await open(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
    try {
      await fh.writeFile(text, 'utf8');
      await fh.sync();
    } finally {
      await fh.close();
    }
    return tmp;
  }

  /** Store a question as waiting; returns its new random id. */
  async put(q: Question): Promise<string> {
    await this.ensureDir();
    const id = newQuestionId();
    const doc = await questionDoc(q, id, process.pid);
    try {
      await writeFileAtomic(this.path(id, 'json'), JSON.stringify(doc), { mode: 0o600 });
    } catch (e) {
      throw new TyError('E_STORE', `cannot store the question (${(e as { code?: string }).code ?? 'error'})`);
    }
    return id;
  }

  /** A waiting question, or undefined (absent, malformed, or not a plain file). @throws E_USAGE for a malformed id. */
  async get(id: string): Promise<StoredQuestion | undefined> {
    checkId(id);
    const text = await readPlain(this.path(id, 'json'));
    if (text === undefined) return undefined;
    try {
      const parsed = (await schemas()).StoredQuestionSchema.safeParse(JSON.parse(text));
      return parsed.success && parsed.data.id === id ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  /** The answer to a question, if any. */
  async readAnswer(id: string): Promise<StoredAnswer | undefined> {
    checkId(id);
    const text = await readPlain(this.path(id, 'answer'));
    if (text === undefined) return undefined;
    try {
      const parsed = (await schemas()).StoredAnswerSchema.safeParse(JSON.parse(text));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Waiting questions (unanswered, asker alive), oldest first. Questions of a dead asker and answers
   * without a question are removed. Malformed files are skipped.
   */
  async list(): Promise<StoredQuestion[]> {
    await this.ensureDir();
    const names = await readdir(this.dir);
    const out: StoredQuestion[] = [];
    for (const name of names) {
      const m = /^([a-z2-7]{24})\.(json|answer)$/.exec(name);
      if (!m) continue;
      const id = m[1] as string;
      if (m[2] === 'answer') {
        if (!names.includes(`${id}.json`)) await unlink(join(this.dir, name)).catch(() => undefined);
        continue;
      }
      const q = await this.get(id);
      if (!q) continue;
      if (!processAlive(q.pid)) {
        await this.remove(id);
        continue;
      }
      if (names.includes(`${id}.answer`)) continue;
      out.push(q);
    }
    return out.sort((a, b) => a.createdAt - b.createdAt);
  }

  /**
   * Answer a waiting question. The first answer is final.
   * Returns `{ok:false}` with E_USAGE when the question is not waiting (unknown, withdrawn) or already answered.
   * @throws TyError E_USAGE for a malformed id, E_STORE when the folder cannot be written.
   */
  async answer(id: string, a: GivenAnswer): Promise<AnswerOutcome> {
    checkId(id);
    await this.ensureDir();
    const made = answerDoc(id, await this.get(id), a);
    if (!made.ok) return made;
    const doc = made.doc;
    const tmp = await this.writeTemp(JSON.stringify(doc));
    try {
      await link(tmp, this.path(id, 'answer'));
    } catch (e) {
      if (isCode(e, 'EEXIST')) return alreadyAnswered(id);
      throw new TyError('E_STORE', `cannot write the answer (${(e as { code?: string }).code ?? 'error'})`);
    } finally {
      await unlink(tmp).catch(() => undefined);
    }
    return { ok: true };
  }

  /** Remove a question and its answer (withdrawn or done). Absent is fine. */
  async remove(id: string): Promise<void> {
    checkId(id);
    await unlink(this.path(id, 'json')).catch(() => undefined);
    await unlink(this.path(id, 'answer')).catch(() => undefined);
  }

  /**
   * Hold the store's liveness lock: listen on a fresh `watch-<random>.sock` (0600) until released or
   * this process ends. @throws TyError E_STORE when the socket path is too long (use a shorter --home).
   */
  async holdWatchLock(): Promise<SocketWatchLock> {
    await this.ensureDir();
    const path = join(this.dir, `watch-${randomBytes(12).toString('hex')}.sock`);
    if (Buffer.byteLength(path) > MAX_SOCKET_PATH) {
      throw new TyError(
        'E_STORE',
        `the state folder path is too long for the watcher socket (${MAX_SOCKET_PATH} bytes at most); use a shorter --home`,
      );
    }
    const key = await this.watchKey();
    const server: Server = createServer((sock) => {
      sock.on('error', () => undefined);
      sock.setEncoding('utf8');
      let got = '';
      sock.setTimeout(2000, () => sock.destroy());
      sock.on('data', (d: string) => {
        got += d;
        const nl = got.indexOf('\n');
        if (nl < 0) {
          if (got.length > 128) sock.destroy();
          return;
        }
        const nonce = got.slice(0, nl);
        if (!/^[0-9a-f]{32}$/.test(nonce)) return void sock.destroy();
        sock.end(`${GREETING}${proof(key, nonce)}\n`);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e) =>
        reject(new TyError('E_STORE', `cannot hold the watcher lock (${(e as { code?: string }).code ?? 'error'})`)),
      );
      server.listen(path, () => resolve());
    });
    await chmod(path, 0o600).catch(() => undefined);
    let released = false;
    return {
      path,
      release: async () => {
        if (released) return;
        released = true;
        await new Promise<void>((r) => server.close(() => r()));
        await unlink(path).catch(() => undefined);
      },
    };
  }

  /**
   * The store's watcher key (32 random bytes, hex, in `.watch-key`, 0600, created once with O_EXCL).
   * Only a process that can read the user's state folder can prove it holds the lock with it.
   */
  private async watchKey(): Promise<Buffer> {
    const path = join(this.dir, KEY_FILE);
    for (let attempt = 0; attempt < 2; attempt++) {
      const text = await readPlain(path);
      if (text !== undefined && /^[0-9a-f]{64}$/.test(text.trim())) return Buffer.from(text.trim(), 'hex');
      if (text !== undefined)
        throw new TyError('E_STORE', `the question store key ${KEY_FILE} is malformed; delete it to make a new one`);
      try {
        const fh = await open(path, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
        try {
          await fh.writeFile(randomBytes(32).toString('hex'), 'utf8');
          await fh.sync();
        } finally {
          await fh.close();
        }
      } catch (e) {
        if (!isCode(e, 'EEXIST'))
          throw new TyError(
            'E_STORE',
            `cannot create the question store key (${(e as { code?: string }).code ?? 'error'})`,
          );
      }
    }
    throw new TyError('E_STORE', 'cannot read the question store key');
  }

  /**
   * Whether an answering surface holds the lock now: some `watch-*.sock` accepts a connection and, within
   * `timeoutMs` (default 1000), answers a random nonce with HMAC-SHA256(store key, nonce). A process that
   * cannot read the state folder (a sandbox) cannot fake a watcher. Sockets refusing connections (dead
   * watchers) are removed.
   */
  async isWatched(timeoutMs = 1000): Promise<boolean> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return false;
    }
    if (!names.some((n) => WATCH_SOCKET_RE.test(n))) return false;
    let key: Buffer;
    try {
      key = await this.watchKey();
    } catch {
      return false;
    }
    for (const name of names) {
      if (!WATCH_SOCKET_RE.test(name)) continue;
      const path = join(this.dir, name);
      const r = await probeSocket(path, key, timeoutMs);
      if (r === 'live') return true;
      if (r === 'dead') await unlink(path).catch(() => undefined);
    }
    return false;
  }
}

function proof(key: Buffer, nonce: string): string {
  return createHmac('sha256', key).update(`tysandbox-questions-watch/1:${nonce}`).digest('hex');
}

function probeSocket(path: string, key: Buffer, timeoutMs: number): Promise<'live' | 'dead' | 'unknown'> {
  const nonce = randomBytes(16).toString('hex');
  const want = Buffer.from(`${GREETING}${proof(key, nonce)}\n`);
  return new Promise((resolve) => {
    let got = '';
    let done = false;
    const sock = createConnection({ path });
    const finish = (r: 'live' | 'dead' | 'unknown'): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => finish('unknown'), timeoutMs);
    const matches = (): boolean => {
      const b = Buffer.from(got);
      return b.length === want.length && timingSafeEqual(b, want);
    };
    sock.setEncoding('utf8');
    sock.on('connect', () => sock.write(`${nonce}\n`));
    sock.on('data', (d: string) => {
      got += d;
      if (got.length >= want.length) finish(matches() ? 'live' : 'unknown');
    });
    sock.on('end', () => finish(matches() ? 'live' : 'unknown'));
    sock.on('error', (e) => finish(isCode(e, 'ECONNREFUSED', 'ENOENT') ? 'dead' : 'unknown'));
  });
}
