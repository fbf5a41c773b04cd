// Crash-consistency harness: a store scenario in a tycli process stopped at each of its file-system write points in
// turn (test/faults/crash/interpose.mjs), then the store reopened and its invariants checked; test side.
//
// For one scenario (test/faults/crash/scenarios.mjs): the base home is built once without faults; a dry run of the
// scenario's command on a copy counts its write points (N) and what a finished run leaves. Then, for each point p
// chosen (all of 1..N in the full sweep, a spread sample in the test suite) and each mode:
//   kill   the process SIGKILLed before point p
//   torn   (write points only) the first half of that write done, then SIGKILL
//   power  SIGKILL before point p and every change not yet fsync'd dropped (the interposer's durable image); point
//          N+1 is a power loss right after the command finished
// on a fresh copy of the base home, and afterwards:
//   1. checkHome (test/faults/crash/check.mjs): objects re-hash, records whole, bindings and settings point at
//      objects, the audit reader counts no torn line as a record, nothing durable before the command is lost;
//   2. the scenario's own checks: what the command reported as done (its --json output before the stop) is there;
//      an effect that landed has its audit record when the command audits at all (as its dry run shows);
//   3. recovery: the same command again, without faults, succeeds, and 1 and 2 hold after it.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { checkHome, durableFacts } from './check.mjs';

export const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const BIN = join(ROOT, 'bin', 'tycli.mjs');
const INTERPOSE = pathToFileURL(join(import.meta.dirname, 'interpose.mjs')).href;

/** A scratch folder readable by others (a root CLI runs sandboxes as another uid). */
export async function scratch(prefix) {
  const d = await mkdtemp(join(tmpdir(), `ty-crash-${prefix}-`));
  execFileSync('chmod', ['755', d]);
  return d;
}

/**
 * Run one command of a scenario in its own process group: `node bin/tycli.mjs --home HOME --json ...args`, or
 * `node SCRIPT HOME ...args` when `cmd.script` is set. `fault` adds the interposer and its settings.
 * Resolves to { code, signal, stdout, stderr, pid, log } once the process and its group are gone.
 */
export function runCommand(home, cmd, fault) {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...(cmd.env ?? {}) };
  if (fault) {
    env.NODE_OPTIONS = `--import=${INTERPOSE}`;
    env.TY_FAULT_ROOT = home;
    env.TY_FAULT_LOG = fault.log;
    if (fault.at) env.TY_FAULT_AT = String(fault.at);
    if (fault.mode) env.TY_FAULT_MODE = fault.mode;
    if (fault.image) env.TY_FAULT_IMAGE = fault.image;
  }
  const argv = cmd.script ? [cmd.script, home, ...cmd.args] : [BIN, '--home', home, '--json', ...cmd.args];
  const child = spawn(process.execPath, argv, {
    env,
    cwd: cmd.cwd ?? home,
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  child.stdin.on('error', () => {});
  child.stdin.end(cmd.stdin ?? '');
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }, cmd.timeoutMs ?? 120_000);
  return new Promise((res) =>
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      try {
        process.kill(-child.pid, 'SIGKILL'); // whatever the stopped host left in its group
      } catch {
        /* nothing left */
      }
      res({ code, signal, stdout, stderr, pid: child.pid });
    }),
  );
}

/** The `--json` lines a command printed (unparseable lines skipped). */
export function jsonLines(stdout) {
  const out = [];
  for (const l of stdout.split('\n')) {
    if (!l.trim()) continue;
    try {
      out.push(JSON.parse(l));
    } catch {
      /* a progress line */
    }
  }
  return out;
}

/** The write points of a trace file: [{ n, kind, path, bytes }]. */
export function readTrace(log) {
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const m = /^(\d+) (\S+) (.*?)(?: (\d+))?$/.exec(l);
      return m
        ? { n: Number(m[1]), kind: m[2], path: m[3], bytes: m[4] === undefined ? undefined : Number(m[4]) }
        : { n: 0, kind: '?', path: l };
    });
}

/** A point's label with the per-process parts of names (pids, random tokens) folded, for counting distinct points. */
export function pointLabel(p) {
  return `${p.kind} ${p.path.replace(/\d+\.[0-9a-f]{16}/g, 'PID.RAND').replace(/(\.new-|\.dead-)[0-9a-f]+/g, '$1TOKEN')}`;
}

function copyHome(from, to) {
  rmSync(to, { recursive: true, force: true });
  execFileSync('cp', ['-a', from, to]);
}

/** Rebuild `home` from a durable image the interposer wrote (power mode). */
export function restoreImage(home, imageFile) {
  const entries = JSON.parse(readFileSync(imageFile, 'utf8'));
  rmSync(home, { recursive: true, force: true });
  mkdirSync(home, { mode: 0o700 });
  for (const e of entries) {
    const p = join(home, e.path);
    if (e.type === 'dir') mkdirSync(p, { mode: e.mode ?? 0o700 });
    else if (e.type === 'symlink') symlinkSync(e.target, p);
    else writeFileSync(p, Buffer.from(e.data, 'base64'), { mode: e.mode ?? 0o600 });
  }
}

/**
 * Prepare a scenario: its base home (built without faults) and a dry run on a copy that counts its write points.
 * Resolves to { dir, base, baseFacts, ctx, points: trace of the dry run, audited: whether the command audits }.
 */
export async function prepare(sc) {
  const dir = await scratch(sc.name.replace(/\W+/g, '-'));
  const base = join(dir, 'base');
  mkdirSync(base, { mode: 0o700 });
  const ctx = { dir, ...(await sc.setup(base, dir)) };
  const baseFacts = durableFacts(base);
  const home = join(dir, 'dry');
  copyHome(base, home);
  const log = join(dir, 'dry.trace');
  const r = await runCommand(home, sc.command(ctx), { log });
  if (r.code !== 0)
    throw new Error(`${sc.name}: the dry run failed (${r.code ?? r.signal}): ${r.stderr.slice(0, 2000)}`);
  const points = readTrace(log);
  const after = durableFacts(home);
  const audited = after.audit.length > baseFacts.audit.length;
  const dryViolations = [
    ...(await checkHome(home, baseFacts)),
    ...(await sc.check(home, ctx, jsonLines(r.stdout), { audited, baseFacts, pid: r.pid, finished: true })),
  ];
  if (dryViolations.length)
    throw new Error(`${sc.name}: the dry run itself breaks invariants: ${dryViolations.join('; ')}`);
  return { dir, base, baseFacts, ctx, points, audited };
}

/**
 * Stop the scenario's command at point `at` in `mode` on a fresh copy of the base home; check, recover, check again.
 * Resolves to { at, mode, label, stopped, violations }.
 */
export async function runPoint(sc, prep, at, mode) {
  const { dir, base, baseFacts, ctx, audited } = prep;
  const home = join(dir, `p-${mode}-${at}`);
  copyHome(base, home);
  const log = join(dir, `p-${mode}-${at}.trace`);
  const image = join(dir, `p-${mode}-${at}.image.json`);
  rmSync(log, { force: true });
  rmSync(image, { force: true });
  const r = await runCommand(home, sc.command(ctx), { log, at, mode, image });
  const trace = readTrace(log);
  const stopped = r.signal === 'SIGKILL';
  const last = trace.at(-1);
  const label =
    mode === 'power' && at > prep.points.length
      ? 'power loss after the command finished'
      : last
        ? pointLabel(last)
        : '(none)';
  const violations = [];
  const tag = (phase) => (s) => `${sc.name} ${mode}@${at} [${label}] ${phase}: ${s}`;
  if (mode === 'power') {
    if (!existsSync(image)) violations.push(tag('stop')('the interposer wrote no durable image'));
    else restoreImage(home, image);
  }
  const facts = { audited, baseFacts, pid: r.pid, finished: !stopped && r.code === 0 };
  const after = [...(await checkHome(home, baseFacts)), ...(await sc.check(home, ctx, jsonLines(r.stdout), facts))];
  violations.push(...after.map(tag('after the stop')));
  // recovery: the same command, no faults
  const again = await runCommand(home, sc.command(ctx));
  if (again.code !== 0)
    violations.push(
      tag('recovery')(
        `the command fails after the stop: ${again.stderr.trim().slice(0, 400) || again.stdout.trim().slice(0, 400)}`,
      ),
    );
  else {
    const rec = [
      ...(await checkHome(home, baseFacts)),
      ...(await sc.check(home, ctx, jsonLines(again.stdout), {
        ...facts,
        pid: again.pid,
        finished: true,
        recovery: true,
      })),
    ];
    violations.push(...rec.map(tag('after recovery')));
  }
  rmSync(home, { recursive: true, force: true });
  rmSync(log, { force: true });
  rmSync(image, { force: true });
  return { at, mode, label, stopped, violations };
}

/**
 * The points to stop at per mode. Full sweep (`sample` undefined): every point in kill and power mode (and power
 * after the last one), every write of more than one byte in torn mode. Sample (`sample` = k): every k-th point,
 * kill starting at the first, power at the second (so the two modes together cover two of every k points), a spread
 * of the writes in torn mode, and always the power loss after the command finished.
 */
export function choosePoints(points, sample) {
  const all = points.map((p) => p.n);
  const writes = points.filter((p) => p.kind === 'write' && (p.bytes ?? 0) > 1).map((p) => p.n);
  const every = (xs, k, from) => xs.filter((_, i) => i % k === from % k);
  const spread = (xs, k) => {
    if (xs.length <= k) return xs;
    const out = new Set();
    for (let i = 0; i < k; i++) out.add(xs[Math.round((i * (xs.length - 1)) / Math.max(1, k - 1))]);
    return [...out];
  };
  if (sample === undefined) return { kill: all, torn: writes, power: [...all, all.length + 1] };
  return {
    kill: every(all, sample, 0),
    torn: spread(writes, 2),
    power: [...every(all, sample, 1), all.length + 1],
  };
}

/**
 * Sweep one scenario. Resolves to { scenario, points (write points of one run), distinct (distinct kinds of point),
 * runs, stopped, violations, ms }.
 */
export async function sweep(sc, { sample, modes = ['kill', 'torn', 'power'] } = {}) {
  const t0 = Date.now();
  const prep = await prepare(sc);
  try {
    const chosen = choosePoints(prep.points, sample);
    const out = {
      scenario: sc.name,
      points: prep.points.length,
      distinct: new Set(prep.points.map(pointLabel)).size,
      runs: 0,
      stopped: 0,
      byMode: {},
      violations: [],
    };
    for (const mode of modes) {
      out.byMode[mode] = 0;
      for (const at of chosen[mode]) {
        const r = await runPoint(sc, prep, at, mode);
        out.runs++;
        out.byMode[mode]++;
        if (r.stopped) out.stopped++;
        out.violations.push(...r.violations);
      }
    }
    out.ms = Date.now() - t0;
    return out;
  } finally {
    rmSync(prep.dir, { recursive: true, force: true });
  }
}
