// Fault suite: kill -9 of the host between each step of a call's overlapped durable path (intent record written, call
// sent, fsync begun and done, capability request, effect, result, completion record, answer): no effect without its
// durable record, every started call on record, nothing corrupt, no orphan; test side.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, cliEnv, jsTool, runCli, startCli, tempDir, writeManifest } from './helpers.js';

/** The steps test/faults/step-spy.mjs logs, in the order a call passes them. */
const STEPS = [
  'audit-write:started',
  'sent:call',
  'fsync:begin',
  'fsync:end',
  'received:cap',
  'effect',
  'received:result',
  'audit-write:ok',
  'answer',
] as const;

let dir: string;
let home: string;
let spyEnv: Record<string, string>;

beforeAll(async () => {
  dir = await tempDir('steps');
  home = join(dir, 'home');
  spyEnv = { NODE_OPTIONS: `--import=${pathToFileURL(join(ROOT, 'test/faults/step-spy.mjs')).href}` };
  const file = await writeManifest(
    dir,
    jsTool(
      'stepper',
      'export default async (a, ctx) => { await ctx.storage.set(`k${a.n}`, a.n); return `stored ${a.n}`; };',
      {
        capabilities: { storage: {} },
      },
    ),
  );
  const add = await runCli(['--home', home, 'tool', 'add', file], cliEnv(dir), dir);
  expect(add.code, add.stderr).toBe(0);
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** One `tycli run stepper` under the spy, killed at `killAt` (or not): its pid, step lines and sandbox pids. */
async function runOnce(n: number, killAt: string | undefined) {
  const log = join(dir, `steps-${n}.log`);
  const env = { ...cliEnv(dir), ...spyEnv, TY_STEP_LOG: log, ...(killAt ? { TY_KILL_AT: killAt } : {}) };
  const c = startCli(['--home', home, 'run', 'stepper', '--args', JSON.stringify({ n })], env, dir);
  const res = await c.done;
  const lines = existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
  const steps = lines.filter((l) => !l.startsWith('spawn ')).map((l) => l.split(' ')[0]!);
  const sandboxes = lines.filter((l) => l.startsWith('spawn ')).map((l) => Number(l.split(' ')[1]));
  return { pid: c.pid!, res, steps, sandboxes, stdout: c.out() };
}

/** Audit records as written (raw lines of the log, parsed; an unreadable line counts as corrupt). */
function auditLines(): { records: Record<string, unknown>[]; corrupt: number } {
  const p = join(home, 'store', '.logs', 'audit');
  const records: Record<string, unknown>[] = [];
  let corrupt = 0;
  for (const l of existsSync(p) ? readFileSync(p, 'utf8').split('\n') : []) {
    if (!l) continue;
    try {
      records.push(JSON.parse(l) as Record<string, unknown>);
    } catch {
      corrupt++;
    }
  }
  return { records, corrupt };
}

/** The `started` record a host process wrote (its `host` field names its pid), if any. */
const startedBy = (pid: number) =>
  auditLines().records.find(
    (r) =>
      r.kind === 'tool' &&
      r.outcome === 'started' &&
      String(r.host ?? '')
        .split(':')
        .at(-2) === String(pid),
  );

/**
 * True when the steps show an fsync of the audit log that began after the intent record was written and ended before
 * `step`.
 */
function durableBefore(steps: string[], step: string): boolean {
  const written = steps.indexOf('audit-write:started');
  const at = steps.indexOf(step);
  if (written === -1 || at === -1) return false;
  const begun = steps.indexOf('fsync:begin', written);
  const ended = begun === -1 ? -1 : steps.indexOf('fsync:end', begun);
  return begun !== -1 && ended !== -1 && ended < at;
}

describe('kill -9 between each step of the overlapped durable path', () => {
  it('an uninterrupted call passes every step; its effect and its answer come after the intent record is durable', async () => {
    const r = await runOnce(100, undefined);
    expect(r.res.code, r.stdout).toBe(0);
    const order = STEPS.map((s) => r.steps.indexOf(s));
    expect(
      order.every((i) => i >= 0),
      r.steps.join(' '),
    ).toBe(true);
    // the call may leave before its intent record's fsync (a ready sandbox) or after it (a sandbox still loading, whose
    // load outlasts STAGED_SYNC_MS); the effect and the answer wait for it either way
    expect(durableBefore(r.steps, 'effect')).toBe(true);
    expect(durableBefore(r.steps, 'answer')).toBe(true);
    expect(r.steps.indexOf('audit-write:ok')).toBeLessThan(r.steps.indexOf('answer'));
  }, 60_000);

  it.each(STEPS.map((s, i) => [s, i] as const))(
    'killed at %s: no effect without its durable intent record, the call on record once sent, no orphan',
    async (step, i) => {
      const r = await runOnce(i, step);
      expect(r.res.signal, `${step}: ${r.steps.join(' ')}`).toBe('SIGKILL');
      expect(r.steps.at(-1)).toBe(step); // killed exactly there
      // no effect (the tool's storage write) unless the intent record was on disk before it
      if (r.steps.includes('effect')) expect(durableBefore(r.steps, 'effect')).toBe(true);
      // no answer unless the intent record was durable and the completion record written first
      if (r.steps.includes('answer')) {
        expect(durableBefore(r.steps, 'answer')).toBe(true);
        expect(r.steps.indexOf('audit-write:ok')).toBeLessThan(r.steps.indexOf('answer'));
      }
      // once the sandbox was sent the call (tool code could run), its intent record is in the log
      if (r.steps.includes('sent:call')) expect(startedBy(r.pid)).toBeDefined();
      // the sandbox goes with its host
      const end = Date.now() + 5000;
      while (r.sandboxes.some(alive) && Date.now() < end) await new Promise((res) => setTimeout(res, 50));
      expect(r.sandboxes.filter(alive)).toEqual([]);
    },
    60_000,
  );

  it('kill -9 at random moments (seeded): every executed effect came after its durable intent record and is on record', async () => {
    let rnd = 5;
    const random = () => (rnd = (rnd * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const runs: { n: number; pid: number; steps: string[]; sandboxes: number[] }[] = [];
    for (let i = 0; i < 12; i++) {
      const n = 200 + i;
      const log = join(dir, `random-${n}.log`);
      const env = { ...cliEnv(dir), ...spyEnv, TY_STEP_LOG: log };
      const c = startCli(['--home', home, 'run', 'stepper', '--args', JSON.stringify({ n })], env, dir);
      const read = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);
      if (i % 2 === 0) await new Promise((r) => setTimeout(r, Math.floor(random() * 1500)));
      else {
        // half the kills land inside the call: after its message reached the sandbox
        const end = Date.now() + 15_000;
        while (!read().some((l) => l.startsWith('sent:call')) && Date.now() < end)
          await new Promise((r) => setTimeout(r, 2));
        await new Promise((r) => setTimeout(r, Math.floor(random() * 40)));
      }
      try {
        process.kill(c.pid!, 'SIGKILL'); // the host only: its sandbox must go by itself
      } catch {
        /* finished already */
      }
      await c.done;
      const lines = read();
      runs.push({
        n,
        pid: c.pid!,
        steps: lines.filter((l) => !l.startsWith('spawn ')).map((l) => l.split(' ')[0]!),
        sandboxes: lines.filter((l) => l.startsWith('spawn ')).map((l) => Number(l.split(' ')[1])),
      });
    }
    // the schedule reaches effects and cuts calls off once sent, before their answer
    expect(runs.filter((r) => r.steps.includes('effect')).length).toBeGreaterThan(0);
    expect(runs.filter((r) => r.steps.includes('sent:call') && !r.steps.includes('answer')).length).toBeGreaterThan(0);
    const stored = new Set<number>();
    const tsDir = join(home, 'store', 'tool-storage');
    for (const f of existsSync(tsDir) ? readdirSync(tsDir) : [])
      for (const v of Object.values(
        (JSON.parse(readFileSync(join(tsDir, f), 'utf8')) as { entries: Record<string, number> }).entries,
      ))
        stored.add(v);
    for (const r of runs) {
      const why = `run ${r.n}: ${r.steps.join(' ')}`;
      if (r.steps.includes('effect')) expect(durableBefore(r.steps, 'effect'), why).toBe(true);
      // every value the store holds from these runs was written by a call whose intent record is in the log
      if (stored.has(r.n)) expect(startedBy(r.pid), why).toBeDefined();
      if (r.steps.includes('sent:call')) expect(startedBy(r.pid), why).toBeDefined();
    }
    expect(auditLines().corrupt).toBe(0);
    const all = runs.flatMap((r) => r.sandboxes);
    const end = Date.now() + 5000;
    while (all.some(alive) && Date.now() < end) await new Promise((res) => setTimeout(res, 50));
    expect(all.filter(alive)).toEqual([]);
  }, 180_000);

  it('afterwards: every stored value has its call on record, the audit trail reads whole and shows the cut-off calls', async () => {
    const file = join(home, 'store', 'tool-storage');
    const stored: number[] = [];
    if (existsSync(file))
      for (const f of readdirSync(file)) {
        const rec = JSON.parse(readFileSync(join(file, f), 'utf8')) as { entries: Record<string, number> };
        stored.push(...Object.values(rec.entries));
      }
    expect(stored).toContain(100); // the uninterrupted call's effect
    const { records, corrupt } = auditLines();
    expect(corrupt).toBe(0);
    const started = records.filter((r) => r.kind === 'tool' && r.outcome === 'started').length;
    expect(started).toBeGreaterThanOrEqual(stored.length);
    const audit = await runCli(['--home', home, '--json', 'audit'], cliEnv(dir), dir);
    expect(audit.code, audit.stderr).toBe(0);
    const env = JSON.parse(audit.stdout) as { records: { kind: string; outcome: string }[]; corrupt: number };
    expect(env.corrupt).toBe(0);
    expect(env.records.filter((r) => r.kind === 'tool' && r.outcome === 'interrupted').length).toBeGreaterThan(0);
  }, 60_000);
});
