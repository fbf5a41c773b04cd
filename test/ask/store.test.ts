// Tests for the waiting-question store, its liveness lock and the questions/answer commands; test code, trusted side.
import { cliHint } from '../../node/cli/hints.js';
import { spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { createServer } from 'node:net';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { QuestionStore, questionsDir } from '../../node/ask/store.js';
import { QUESTION_ID_RE, newQuestionId } from '../../node/ask/question-id.js';
import { StoreAskChannel, createNodeAsker } from '../../node/ask/channels.js';
import { AskRouter, askRefusalError } from '../../core/ask/router.js';
import type { Answer, AskChannel, Question } from '../../core/exec/runtime.js';
import { TerminalAskChannel } from '../../node/ask/terminal.js';
import { main } from '../../node/cli/main.js';
import { watchQuestions } from '../../node/cli/commands/ask/questions.js';
import type { CliContext } from '../../node/cli/types.js';

const root = resolve(import.meta.dirname, '..', '..');
const base = mkdtempSync(join(tmpdir(), 'ty-askstore-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
let n = 0;
let home: string;
let store: QuestionStore;
beforeEach(() => {
  home = join(base, `h${n++}`);
  store = new QuestionStore(questionsDir(home));
});

const question = (extra: Partial<Question> = {}): Question => ({
  id: 'gate-id',
  title: 'Allow weather to use fetch https://api.example.com?',
  details: ['tool: weather', 'revision: bafyexample'],
  suggestedRule: 'fetch(read:https://api.example.com)',
  ...extra,
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (await cond()) return;
    await sleep(5);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Run a TypeScript snippet in a child node process (tsx), returning it. */
function child(code: string) {
  const file = join(base, `child-${n++}.mts`);
  writeFileSync(file, code);
  return spawn(process.execPath, ['--import', 'tsx', file], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
}
const storeImport = `import { QuestionStore } from ${JSON.stringify(join(root, 'node/ask/store.ts'))};`;

describe('question files', () => {
  it('the folder is 0700 and each question file 0600 with a random 120-bit id', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 50; i++) ids.add(await store.put(question()));
    expect(ids.size).toBe(50);
    for (const id of ids) {
      expect(id).toMatch(QUESTION_ID_RE);
      expect(statSync(join(store.dir, `${id}.json`)).mode & 0o777).toBe(0o600);
    }
    expect(statSync(store.dir).mode & 0o777).toBe(0o700);
    expect(store.dir).toBe(join(home, 'state', 'questions'));
    expect(newQuestionId()).toMatch(/^[a-z2-7]{24}$/);
    // No leftover temp files.
    expect(readdirSync(store.dir).filter((f) => f.startsWith('.tmp-'))).toEqual([]);
  });

  it("the id is the store's own, never the id the caller chose", async () => {
    const id = await store.put(question({ id: '../../etc/passwd' }));
    expect(id).toMatch(QUESTION_ID_RE);
    expect((await store.get(id))?.title).toBe(question().title);
  });

  it('a malformed id is E_USAGE, so no path can be reached through it', async () => {
    for (const bad of ['../x', 'ABCDEFGHIJKLMNOPQRSTUVWX', 'short', `${'a'.repeat(24)}/..`, '']) {
      await expect(store.answer(bad, { allow: true, by: 't' })).rejects.toMatchObject({ code: 'E_USAGE' });
    }
  });

  it('a folder open to others is narrowed to 0700; a symlink in its place is refused', async () => {
    mkdirSync(store.dir, { recursive: true, mode: 0o777 });
    chmodSync(store.dir, 0o777);
    await store.ensureDir();
    expect(statSync(store.dir).mode & 0o777).toBe(0o700);
    const other = join(base, `elsewhere-${n++}`);
    mkdirSync(other);
    const linked = new QuestionStore(join(base, `link-${n++}`));
    symlinkSync(other, linked.dir);
    await expect(linked.put(question())).rejects.toMatchObject({ code: 'E_STORE' });
  });

  it('a question whose asker is gone is dropped from the list', async () => {
    const id = await store.put(question());
    const file = join(store.dir, `${id}.json`);
    const doc = JSON.parse(readFileSync(file, 'utf8'));
    doc.pid = 2 ** 22 + 12345; // above pid_max's default: no such process
    writeFileSync(file, JSON.stringify(doc));
    expect(await store.list()).toEqual([]);
    expect(existsSync(file)).toBe(false);
  });
});

describe('answers: the first is final', () => {
  it('a second answer cannot overwrite the first', async () => {
    const id = await store.put(question());
    expect(await store.answer(id, { allow: false, by: 'first' })).toEqual({ ok: true });
    const second = await store.answer(id, { allow: true, by: 'second' });
    expect(second).toMatchObject({ ok: false, code: 'E_USAGE' });
    expect(await store.readAnswer(id)).toMatchObject({ allow: false, by: 'first' });
    expect(statSync(join(store.dir, `${id}.answer`)).mode & 0o777).toBe(0o600);
  });

  it('a race of answerers in one process: exactly one wins and its answer is the one stored', async () => {
    const id = await store.put(question());
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, i) => store.answer(id, { allow: i % 2 === 0, by: `answerer-${i}` })),
    );
    const winners = results.map((r, i) => (r.ok ? i : -1)).filter((i) => i >= 0);
    expect(winners).toHaveLength(1);
    const stored = await store.readAnswer(id);
    expect(stored?.by).toBe(`answerer-${winners[0]}`);
    expect(stored?.allow).toBe(winners[0]! % 2 === 0);
  });

  it('a race of answerer processes: exactly one wins', async () => {
    const id = await store.put(question());
    const procs = [0, 1, 2].map((i) =>
      child(`${storeImport}
const s = new QuestionStore(${JSON.stringify(store.dir)});
const r = await s.answer(${JSON.stringify(id)}, { allow: ${i === 1}, by: 'proc-${i}' });
process.stdout.write(JSON.stringify(r));`),
    );
    const outs = await Promise.all(
      procs.map(
        (p) =>
          new Promise<{ ok: boolean }>((res, rej) => {
            let o = '';
            p.stdout!.on('data', (d: Buffer) => (o += d.toString()));
            p.on('exit', () => {
              try {
                res(JSON.parse(o));
              } catch (e) {
                rej(e);
              }
            });
          }),
      ),
    );
    expect(outs.filter((r) => r.ok)).toHaveLength(1);
    const stored = await store.readAnswer(id);
    expect(stored?.by).toBe(`proc-${outs.findIndex((r) => r.ok)}`);
  }, 30_000);

  it('a scope the question does not offer is refused', async () => {
    const id = await store.put(question());
    expect(await store.answer(id, { allow: true, scope: 'permanent', by: 't' })).toMatchObject({
      ok: false,
      code: 'E_USAGE',
    });
    const id2 = await store.put(question({ scopes: ['once', 'session'] }));
    expect(await store.answer(id2, { allow: true, scope: 'session', by: 't' })).toEqual({ ok: true });
  });

  it('an unknown or withdrawn question cannot be answered', async () => {
    expect(await store.answer(newQuestionId(), { allow: true, by: 't' })).toMatchObject({ ok: false, code: 'E_USAGE' });
    const id = await store.put(question());
    await store.remove(id);
    expect(await store.answer(id, { allow: true, by: 't' })).toMatchObject({ ok: false, code: 'E_USAGE' });
  });
});

describe('the watcher lock', () => {
  it('the store is live only while an answering surface holds the lock', async () => {
    expect(await store.isWatched()).toBe(false);
    const lock = await store.holdWatchLock();
    expect(statSync(lock.path).mode & 0o777).toBe(0o600);
    expect(await store.isWatched()).toBe(true);
    const second = await store.holdWatchLock();
    await lock.release();
    expect(await store.isWatched()).toBe(true);
    await second.release();
    expect(await store.isWatched()).toBe(false);
  });

  it('a watcher killed with SIGKILL is not live, and its socket file is cleaned up', async () => {
    const p = child(`${storeImport}
const s = new QuestionStore(${JSON.stringify(store.dir)});
const l = await s.holdWatchLock();
process.stdout.write('LOCKED ' + l.path + '\\n');
setInterval(() => {}, 1000);`);
    let o = '';
    p.stdout!.on('data', (d: Buffer) => (o += d.toString()));
    try {
      await until(() => o.includes('\n'), 'the child to hold the lock');
      const sock = /LOCKED (.*)\n/.exec(o)![1]!;
      expect(await store.isWatched()).toBe(true);
      const exited = new Promise((r) => p.on('exit', r));
      p.kill('SIGKILL');
      await exited;
      expect(lstatSync(sock).isSocket()).toBe(true); // the file outlives the process...
      expect(await store.isWatched()).toBe(false); // ...but nobody accepts on it
      expect(existsSync(sock)).toBe(false);
    } finally {
      p.kill('SIGKILL');
    }
  }, 30_000);

  it('a socket that cannot prove the store key (e.g. planted from a sandbox) does not count', async () => {
    await store.ensureDir();
    const path = join(store.dir, `watch-${'ab'.repeat(12)}.sock`);
    const fake = createServer((sock) => {
      sock.on('error', () => undefined);
      sock.on('data', () => sock.end(`tysandbox-questions-watch/1 ${'0'.repeat(64)}\n`));
    });
    await new Promise<void>((r) => fake.listen(path, () => r()));
    try {
      expect(await store.isWatched()).toBe(false);
      const lock = await store.holdWatchLock();
      expect(statSync(join(store.dir, '.watch-key')).mode & 0o777).toBe(0o600);
      expect(await store.isWatched()).toBe(true);
      await lock.release();
    } finally {
      await new Promise((r) => fake.close(r));
    }
  });

  it('a socket file that is not a watcher does not count', async () => {
    await store.ensureDir();
    writeFileSync(join(store.dir, `watch-${'0'.repeat(24)}.sock`), 'not a socket');
    expect(await store.isWatched()).toBe(false);
  });
});

describe('the store as an ask channel', () => {
  let lockRelease: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await lockRelease?.();
    lockRelease = undefined;
  });

  it('with no terminal and nobody watching, a question is refused at once with E_CAPABILITY_DENIED naming the rule', async () => {
    const router = new AskRouter({
      channels: [new TerminalAskChannel({ probe: () => false }), new StoreAskChannel(store)],
    });
    const out = await router.ask(question());
    expect(out).toMatchObject({ allow: false, reason: 'no-channel' });
    expect(await store.list()).toEqual([]);
    if (out.allow) throw new Error('allowed');
    const err = askRefusalError('weather fetch https://api.example.com', out);
    expect(err.code).toBe('E_CAPABILITY_DENIED');
    // core names the rule (once), the CLI the flag
    expect(err.message).toContain('the rule that allows it without asking: fetch(read:https://api.example.com)');
    expect(cliHint(err)).toContain('pass that rule quoted to --allow');
    expect(cliHint(err)).not.toContain('fetch(read:');
  });

  it('the CLI asker: without a terminal (vitest has none) and no watcher, refused at once; a watcher makes it live', async () => {
    const asker = createNodeAsker({ home });
    expect(await asker.ask(question())).toMatchObject({ allow: false, reason: 'no-channel' });
    const lock = await store.holdWatchLock();
    lockRelease = lock.release;
    expect(await asker.anyLive()).toBe(true);
    expect(() => createNodeAsker({ home, askWaitMs: 86_400_001 })).toThrowError(
      expect.objectContaining({ code: 'E_INVALID_SETTINGS' }),
    );
  });

  it('while watched, a question waits in the store and `tycli answer` answers it', async () => {
    const lock = await store.holdWatchLock();
    lockRelease = lock.release;
    const router = new AskRouter({ channels: [new StoreAskChannel(store, { pollMs: 20 })] });
    const p = router.ask(question({ scopes: ['once', 'session'] }));
    await until(async () => (await store.list()).length === 1, 'the question to be stored');
    const [waiting] = await store.list();
    const io = { stdout: new PassThrough(), stderr: new PassThrough(), stdin: new PassThrough(), interactive: false };
    let stdout = '';
    io.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    expect(await main(['--home', home, 'questions'], { io })).toBe(0);
    expect(stdout).toContain(waiting!.id);
    expect(stdout).toContain("--allow 'fetch(read:https://api.example.com)'");
    expect(await main(['--home', home, 'answer', waiting!.id, 'yes', '--scope', 'session'], { io })).toBe(0);
    expect(await p).toEqual({ allow: true, scope: 'session', channel: 'questions' });
    // Done: the question is gone, and a late answer is refused with a usage error (exit 2).
    await until(() => !existsSync(join(store.dir, `${waiting!.id}.json`)), 'the question to be removed');
    expect(await main(['--home', home, 'answer', waiting!.id, 'no'], { io })).toBe(2);
  });

  it('answered elsewhere first: the stored question is withdrawn', async () => {
    const lock = await store.holdWatchLock();
    lockRelease = lock.release;
    let answerFirst: ((a: Answer) => void) | undefined;
    const other: AskChannel = { name: 'other', live: () => true, ask: () => new Promise((r) => (answerFirst = r)) };
    const router = new AskRouter({ channels: [new StoreAskChannel(store, { pollMs: 20 }), other] });
    const p = router.ask(question());
    await until(
      async () => (await store.list()).length === 1 && answerFirst !== undefined,
      'the question to be stored',
    );
    const [waiting] = await store.list();
    answerFirst!({ allow: false, scope: 'once', channel: 'other' });
    expect(await p).toMatchObject({ allow: false, reason: 'refused', channel: 'other' });
    await until(() => !existsSync(join(store.dir, `${waiting!.id}.json`)), 'withdrawal');
    expect(await store.answer(waiting!.id, { allow: true, by: 'late' })).toMatchObject({ ok: false });
  });

  it('the stored text is sanitized when shown', async () => {
    const lock = await store.holdWatchLock();
    lockRelease = lock.release;
    const router = new AskRouter({ channels: [new StoreAskChannel(store, { pollMs: 20 })], askWaitMs: 2000 });
    const p = router.ask(
      question({
        title: 'Allow\u001b]0;owned\u0007 this?',
        details: ['a\u202eb', 'x'.repeat(5000)],
        hints: { destructiveHint: true },
      }),
    );
    await until(async () => (await store.list()).length === 1, 'the question to be stored');
    const io = { stdout: new PassThrough(), stderr: new PassThrough(), stdin: new PassThrough(), interactive: false };
    let stdout = '';
    io.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    expect(await main(['--home', home, 'questions'], { io })).toBe(0);
    expect(stdout).not.toMatch(/[\u001b\u0007\u202e]/);
    expect(stdout).toContain('\\x1b]0;owned\\x07');
    expect(stdout).toContain('destructiveHint=true');
    expect(stdout).toContain('[cut: 4400 more characters]');
    const [w] = await store.list();
    await store.answer(w!.id, { allow: false, by: 't' });
    expect(await p).toMatchObject({ allow: false, reason: 'refused' });
  });
});

describe('tycli questions --watch and tycli answer', () => {
  it('watching holds the lock, lists new questions and releases the lock when stopped', async () => {
    const stdout = new PassThrough();
    let text = '';
    stdout.on('data', (d: Buffer) => (text += d.toString()));
    const ctx: CliContext = {
      io: { stdout, stderr: new PassThrough(), stdin: new PassThrough(), interactive: false },
      cwd: base,
      env: {},
      globals: { home, json: false, allow: [], deny: [] },
    };
    const stop = new AbortController();
    const watching = watchQuestions(ctx, store, stop.signal, 20);
    await until(() => store.isWatched(), 'the watcher lock');
    const router = new AskRouter({ channels: [new StoreAskChannel(store, { pollMs: 20 })] });
    const p = router.ask(question());
    await until(() => /question ([a-z2-7]{24})/.test(text), 'the watcher to show the question');
    const id = /question ([a-z2-7]{24})/.exec(text)![1]!;
    expect(text).toContain(`tycli answer ${id} yes`);
    const io = { stdout: new PassThrough(), stderr: new PassThrough(), stdin: new PassThrough(), interactive: false };
    expect(await main(['--home', home, 'answer', id, 'yes'], { io })).toBe(0);
    expect(await p).toMatchObject({ allow: true, scope: 'once', channel: 'questions' });
    await until(() => text.includes(`question ${id}: answered or withdrawn`), 'the watcher to see it go');
    stop.abort();
    await watching;
    expect(await store.isWatched()).toBe(false);
  });

  it('--json lists questions as one JSON line, and answer --json reports the result', async () => {
    await store.ensureDir();
    const id = await store.put(question({ title: 'json\u001b[2J' }));
    const io = { stdout: new PassThrough(), stderr: new PassThrough(), stdin: new PassThrough(), interactive: false };
    let stdout = '';
    io.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    expect(await main(['--home', home, '--json', 'questions'], { io })).toBe(0);
    const listed = JSON.parse(stdout.trim()) as {
      ok: boolean;
      questions: { id: string; title: string; details: string[]; scopes: string[]; createdAt: string }[];
    };
    expect(listed.ok).toBe(true);
    expect(listed.questions.map((q) => q.id)).toEqual([id]);
    // Structured fields, not rendered lines; the raw line escapes the ESC (\u001b), so it parses back to the stored
    // text.
    expect(stdout).not.toContain('\x1b');
    expect(listed.questions[0]!.title).toBe('json\u001b[2J');
    expect(Array.isArray(listed.questions[0]!.details)).toBe(true);
    expect(Number.isNaN(Date.parse(listed.questions[0]!.createdAt))).toBe(false);
    stdout = '';
    expect(await main(['--home', home, '--json', 'answer', id, 'no'], { io })).toBe(0);
    expect(JSON.parse(stdout.trim())).toEqual({ ok: true, id, allow: false, scope: 'once' });
    stdout = '';
    expect(await main(['--home', home, '--json', 'answer', id, 'yes'], { io })).toBe(2);
    expect(JSON.parse(stdout.trim())).toMatchObject({ ok: false, error: { code: 'E_USAGE' } });
  });

  it('usage errors exit 2 with E_USAGE', async () => {
    const io = { stdout: new PassThrough(), stderr: new PassThrough(), stdin: new PassThrough(), interactive: false };
    let err = '';
    io.stderr.on('data', (d: Buffer) => (err += d.toString()));
    expect(await main(['--home', home, 'answer', newQuestionId(), 'maybe'], { io })).toBe(2);
    expect(await main(['--home', home, 'answer', 'nope', 'yes'], { io })).toBe(2);
    expect(await main(['--home', home, 'answer', newQuestionId()], { io })).toBe(2);
    expect(await main(['--home', home, 'answer', newQuestionId(), 'no', '--scope', 'session'], { io })).toBe(2);
    expect(err).toContain('error[E_USAGE]');
  });
});
