// End-to-end tests of `tycli run`'s prestarted sandbox: refused calls never deliver tool code, arguments or grants to
// it, and it is killed and reaped; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { oneLine, runProcess, type Ran } from './helpers.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'tycli.mjs');
let tmp: string;
let trace: Server;
/** What the trace server received: one entry per connection (the fixture's top-level code connects when it runs). */
const traces: string[] = [];
let port = 0;

/** Run tycli with a clean environment plus `env`, in its own session; never throws for a non-zero exit. */
function tycli(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return runProcess(
    process.execPath,
    [BIN, ...args],
    { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp, ...env },
    tmp,
  );
}

/**
 * Preloaded into tycli (never into sandboxes, which get an empty environment): one JSON line per event of every
 * child process tycli spawns: `spawn` (pid, command, args), `stdin` (everything tycli writes to its input) and
 * `exit` (tycli saw it exit, i.e. reaped it).
 */
const SPY = `import cp from 'node:child_process'; import { appendFileSync } from 'node:fs'; import { syncBuiltinESMExports } from 'node:module';
const orig = cp.spawn; const log = process.env.SPY_LOG;
const rec = (o) => appendFileSync(log, JSON.stringify(o) + '\\n');
cp.spawn = function (...a) {
  const c = orig.apply(this, a);
  if (log) {
    rec({ ev: 'spawn', pid: c.pid, command: String(a[0]), args: (a[1] ?? []).map(String) });
    const w = c.stdin.write;
    c.stdin.write = function (chunk, ...r) { rec({ ev: 'stdin', pid: c.pid, data: String(chunk) }); return w.call(this, chunk, ...r); };
    c.once('exit', (code, signal) => rec({ ev: 'exit', pid: c.pid, code, signal }));
  }
  return c;
};
syncBuiltinESMExports();`;

interface SpyEvent {
  ev: 'spawn' | 'stdin' | 'exit';
  pid: number;
  args?: string[];
  data?: string;
}
interface SandboxSeen {
  pid: number;
  /** Everything tycli wrote to the process's input. */
  input: string;
  /** tycli saw it exit (and so reaped it) before it exited itself. */
  reaped: boolean;
}

/** The sandbox processes (runner command lines) a spy log shows, with their input and whether they were reaped. */
async function sandboxesIn(log: string): Promise<SandboxSeen[]> {
  if (!existsSync(log)) return [];
  const events = (await readFile(log, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as SpyEvent);
  return events
    .filter((e) => e.ev === 'spawn' && (e.args ?? []).some((a) => a.includes('sandbox-runner')))
    .map((s) => ({
      pid: s.pid,
      input: events
        .filter((e) => e.ev === 'stdin' && e.pid === s.pid)
        .map((e) => e.data)
        .join(''),
      reaped: events.some((e) => e.ev === 'exit' && e.pid === s.pid),
    }));
}

/**
 * Pids of live processes whose command line holds every one of `parts` (any user: bubblewrap may drop to another uid).
 */
function liveWith(parts: string[]): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8');
      const state = readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1]?.[0];
      if (state !== 'Z' && parts.every((p) => cmd.includes(p))) out.push(Number(d));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

/** Wait (up to `ms`) for `cond`; returns whether it held. */
async function until(cond: () => boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/**
 * A tool whose top-level code leaves a trace if it ever runs: it connects to the trace server and sends `MARK`
 * (reachable with `--sandbox off`, where the engine alone does not block the network). Its heap limit, `memoryMb`,
 * appears in its sandbox's command line and marks its processes in /proc. A negative `x` never answers.
 */
async function traceTool(name: string, memoryMb: number, engine: 'node' | 'deno' = 'node'): Promise<string> {
  const source = `const net = await import('node:net');
await new Promise((r) => { const s = net.connect(${port}, '127.0.0.1', () => s.end('RAN ${name}', r)); s.on('error', r); });
export default async (a) => { if (a.x < 0) await new Promise(() => {}); return a.x * 2; };`;
  const file = join(tmp, `${name}.json`);
  const parameters = { type: 'object', properties: { x: { type: 'number' } }, additionalProperties: false };
  await writeFile(
    file,
    JSON.stringify({
      name,
      description: `trace tool ${name}`,
      parameters,
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source, ...(engine === 'deno' ? { engine } : {}) },
      limits: { memoryMb },
    }),
  );
  return file;
}

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist', 'node', 'cli', 'main.js')))
    throw new Error('dist/ is missing: run `npm run build` before the e2e tests');
  tmp = await mkdtemp(join(tmpdir(), 'tycli-prestart-'));
  await writeFile(join(tmp, 'spy.mjs'), SPY);
  trace = createServer((sock) => {
    let got = '';
    sock.on('data', (d) => (got += String(d)));
    sock.on('error', () => undefined);
    sock.on('close', () => traces.push(got));
  });
  await new Promise<void>((r) => trace.listen(0, '127.0.0.1', r));
  port = (trace.address() as AddressInfo).port;
});
afterAll(async () => {
  trace?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

/** Env that preloads the spy into tycli, logging to a new file; returns both. */
function spied(label: string): { env: Record<string, string>; log: string } {
  const log = join(tmp, `spy-${label}-${Math.random().toString(36).slice(2)}.log`);
  return { env: { NODE_OPTIONS: `--import=${pathToFileURL(join(tmp, 'spy.mjs')).href}`, SPY_LOG: log }, log };
}

/**
 * The prestarted sandbox of a refused call: it was started (the feature is on), got no input at all (no tool source,
 * no argument, no settings), and tycli killed and reaped it; no process of it is left.
 */
async function expectEmptyAndGone(log: string, memoryMb: number): Promise<void> {
  const seen = await sandboxesIn(log);
  expect(seen.length).toBe(1);
  expect(seen[0]!.input).toBe('');
  expect(seen[0]!.reaped).toBe(true);
  expect(await until(() => liveWith(['sandbox-runner', `--max-old-space-size=${memoryMb}`]).length === 0, 5000)).toBe(
    true,
  );
}

describe('tycli run: the prestarted sandbox of a refused call', () => {
  it('refuses an unlisted field with E_INVALID_ARGS before any tool code, argument or grant reaches a sandbox; a prestarted, empty sandbox is killed', async () => {
    const h = join(tmp, 'home-args');
    expect((await tycli(['--home', h, 'tool', 'add', await traceTool('dbl', 117)])).code).toBe(0);
    // Positive control: an accepted call sends the source and the arguments, and the fixture's code leaves its trace.
    const okSpy = spied('ok');
    const ok = await tycli(['--home', h, '--sandbox', 'off', 'run', 'dbl', '--args', '{"x":4}', '--json'], okSpy.env);
    expect(oneLine(ok)).toMatchObject({ ok: true, result: 8 });
    expect(await until(() => traces.includes('RAN dbl'))).toBe(true);
    const okSeen = await sandboxesIn(okSpy.log);
    expect(okSeen.length).toBe(1);
    expect(okSeen[0]!.input).toContain('"type":"load"');
    expect(okSeen[0]!.input).toContain('RAN dbl');
    expect(okSeen[0]!.input).toContain('"x":4');
    traces.length = 0;

    for (const posture of ['off', 'auto']) {
      const bad = spied(`bad-${posture}`);
      const r = await tycli(
        ['--home', h, '--sandbox', posture, 'run', 'dbl', '--args', '{"x":4,"y":31337}', '--json'],
        bad.env,
      );
      expect(r.code).toBe(2);
      expect(oneLine(r)).toEqual({
        ok: false,
        error: {
          code: 'E_INVALID_ARGS',
          message: 'invalid arguments: unlisted field "/y" is not allowed by the tool\'s parameters; remove it',
        },
      });
      await expectEmptyAndGone(bad.log, 117);
    }
    // The deno engine prestarts too (its own DENO_DIR); refused alike.
    expect((await tycli(['--home', h, 'tool', 'add', await traceTool('ddbl', 123, 'deno')])).code).toBe(0);
    const denoBad = spied('deno-bad');
    const dr = await tycli(['--home', h, 'run', 'ddbl', '--args', '{"x":4,"y":31337}', '--json'], denoBad.env);
    expect(oneLine(dr)).toMatchObject({ ok: false, error: { code: 'E_INVALID_ARGS' } });
    await expectEmptyAndGone(denoBad.log, 123);
    const mistyped = spied('mistyped');
    const m = await tycli(['--home', h, '--sandbox', 'off', 'run', 'dbl', '--args', '{"x":"4"}'], mistyped.env);
    expect(m.code).toBe(2);
    expect(m.stderr).toMatch(/^error\[E_INVALID_ARGS\]: .*"\/x" must be of type number/);
    await expectEmptyAndGone(mistyped.log, 117);
    // Not JSON at all: refused while reading the command line, before the host (and so any sandbox) exists.
    const notJson = spied('not-json');
    expect((await tycli(['--home', h, 'run', 'dbl', '--args', '{x:4}'], notJson.env)).stderr).toMatch(
      /^error\[E_INVALID_ARGS\]: --args is not valid JSON/,
    );
    expect(await sandboxesIn(notJson.log)).toEqual([]);
    // The fixture's code never ran in any refused call.
    await new Promise((r) => setTimeout(r, 300));
    expect(traces).toEqual([]);
  });

  it(
    '--deny and --mode strict refuse the call before any tool code, argument or grant reaches a ' +
      'sandbox; a prestarted, empty sandbox is killed; the audit log records it without arguments',
    async () => {
      const h = join(tmp, 'home-flags');
      const rev = (await tycli(['--home', h, 'tool', 'add', await traceTool('gated', 119)])).stdout.trim();
      traces.length = 0;
      const denied = spied('deny');
      const d = await tycli(
        [
          '--home',
          h,
          '--sandbox',
          'off',
          '--deny',
          'tool(gated)',
          'run',
          'gated',
          '--args',
          '{"x":31337424242}',
          '--json',
        ],
        denied.env,
      );
      expect(d.code).toBe(1);
      expect(oneLine(d)).toMatchObject({
        ok: false,
        error: { code: 'E_CAPABILITY_DENIED', message: expect.stringContaining('deny rule tool(gated)') },
      });
      await expectEmptyAndGone(denied.log, 119);
      const strict = spied('strict');
      const s = await tycli(
        ['--home', h, 'run', 'gated', '--mode', 'strict', '--args', '{"x":31337424242}'],
        strict.env,
      );
      expect(s.code).toBe(1);
      expect(s.stderr).toMatch(
        /^error\[E_CAPABILITY_DENIED\]: .*nobody could be asked.*the rule that allows it without asking: tool\(gated@[a-z2-7]+\); .*pass that rule quoted to --allow/,
      );
      expect(s.stderr.split(`tool(gated@${rev})`).length - 1).toBe(1);
      await expectEmptyAndGone(strict.log, 119);
      await new Promise((r) => setTimeout(r, 300));
      expect(traces).toEqual([]);
      // Allowed: the same process gets the source and the arguments, after the intent record.
      const allowedSpy = spied('allowed');
      const allowed = await tycli(
        [
          '--home',
          h,
          '--sandbox',
          'off',
          'run',
          'gated',
          '--mode',
          'strict',
          '--allow',
          `tool(gated@${rev})`,
          '--args',
          '{"x":31337424242}',
          '--json',
        ],
        allowedSpy.env,
      );
      expect(oneLine(allowed)).toEqual({ ok: true, revision: rev, result: 62674848484 });
      expect((await sandboxesIn(allowedSpy.log)).map((x) => x.input.includes('31337424242'))).toEqual([true]);
      expect(await until(() => traces.includes('RAN gated'))).toBe(true);
      const audit = await readFile(join(h, 'store', '.logs', 'audit'), 'utf8');
      const records = audit
        .trim()
        .split('\n')
        .map(
          (l) => JSON.parse(l) as { kind: string; tool: string; revision: string; decision: string; outcome: string },
        )
        // the call records (the person's own tool add has its records too)
        .filter((r) => r.kind === 'tool');
      // the allowed call: its intent record (before the sandbox was sent the tool), then its completion
      expect(records.map((r) => [r.decision, r.outcome])).toEqual([
        ['deny', 'denied'],
        ['deny', 'denied'],
        ['allow', 'started'],
        ['allow', 'ok'],
      ]);
      for (const r of records) expect(r).toMatchObject({ tool: 'gated', revision: rev });
      expect(audit).not.toContain('31337424242');
      const badRule = await tycli(['--home', h, 'run', 'gated', '--allow', 'not a rule']);
      expect(badRule.code).toBe(2);
      expect(badRule.stderr).toMatch(/^error\[E_USAGE\]: .*invalid rule/);
    },
  );

  it("control for the checks above: a running call's sandbox is found in /proc by its marker, and after Ctrl-C it is reaped and gone", async () => {
    const h = join(tmp, 'home-wait');
    expect((await tycli(['--home', h, 'tool', 'add', await traceTool('slowpoke', 121)])).code).toBe(0);
    const spy = spied('wait');
    const child = spawn(
      process.execPath,
      [BIN, '--home', h, '--sandbox', 'off', 'run', 'slowpoke', '--args', '{"x":-1}', '--timeout', '60000', '--json'],
      {
        cwd: tmp,
        env: { PATH: process.env.PATH ?? '', HOME: tmp, ...spy.env },
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    expect(await until(() => liveWith(['sandbox-runner', '--max-old-space-size=121']).length > 0, 20_000)).toBe(true);
    expect(await until(() => traces.includes('RAN slowpoke'))).toBe(true);
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(await until(() => liveWith(['sandbox-runner', '--max-old-space-size=121']).length === 0, 5000)).toBe(true);
    expect((await sandboxesIn(spy.log)).map((x) => x.reaped)).toEqual([true]);
  });
});
