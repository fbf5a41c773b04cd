// Fault scenarios shared by the fault suite (test/faults/*.test.ts) and its figures (test/bench/faults.bench.mjs); test
// side.
// Each drives the built CLI (bin/tycli.mjs, dist/) in child processes and returns counts: nothing here asserts.
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);
export const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'tycli.mjs');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

/** A temp folder readable by others (a root CLI runs sandboxes as uid 65534). */
export async function scratch(prefix) {
  const d = await mkdtemp(join(tmpdir(), `ty-faults-${prefix}-`));
  await chmod(d, 0o755);
  return d;
}

// Preloaded into tycli only (sandboxes get an empty environment): logs `spawn PID` for every sandbox process it spawns
// (a prestarted, empty one included) and `load PID` when the tool's source is written to that process's input,
// synchronously, so a SIGKILL of tycli cannot lose the line.
const SPY = `import cp from 'node:child_process'; import { appendFileSync } from 'node:fs'; import { syncBuiltinESMExports } from 'node:module';
const orig = cp.spawn; const log = process.env.TY_SPAWN_LOG;
cp.spawn = function (...a) { const c = orig.apply(this, a);
  if (log && JSON.stringify(a[1] ?? []).includes('sandbox-runner')) {
  appendFileSync(log, 'spawn ' + c.pid + '\\n'); const w = c.stdin.write; let loaded = false;
  c.stdin.write = function (chunk, ...r) { if (!loaded && String(chunk).includes('"type":"load"')) {
  loaded = true; appendFileSync(log, 'load ' + c.pid + '\\n'); } return w.call(this, chunk, ...r); };
  } return c; };
syncBuiltinESMExports();`;

/** The pids a spy log names with `kind` (`spawn` or `load`). */
function spyPids(log, kind) {
  return existsSync(log)
    ? readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith(`${kind} `))
        .map((l) => Number(l.slice(kind.length + 1)))
    : [];
}

async function spyEnv(dir) {
  const spy = join(dir, 'spawn-spy.mjs');
  if (!existsSync(spy)) await writeFile(spy, SPY);
  return { NODE_OPTIONS: `--import=${pathToFileURL(spy).href}` };
}

function cli(args, env, cwd) {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: cwd, ...env },
    cwd,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const done = new Promise((r) => child.once('close', (code, signal) => r({ code, signal, stdout: out, stderr: err })));
  return { child, done };
}

async function manifestFile(dir, name, source, extra = {}) {
  const file = join(dir, `${name}-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(
    file,
    JSON.stringify({
      name,
      description: `fault tool ${name}`,
      parameters: { type: 'object' },
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
      ...extra,
    }),
  );
  return file;
}

/** The audit trail as `tycli --json audit` shows it, plus its unreadable-line count. */
async function auditOf(home, cwd) {
  const r = await cli(['--home', home, '--json', 'audit'], {}, cwd).done;
  const lines = r.stdout.split('\n').filter(Boolean);
  if (lines.length !== 1) throw new Error(`tycli --json audit printed ${lines.length} lines, not one envelope`);
  const env = JSON.parse(lines[0]);
  return { entries: env.records, corrupt: env.corrupt, code: r.code };
}

/** Wait (up to `ms`) until none of `pids` is alive; returns those still alive. */
async function survivors(pids, ms = 5000) {
  const end = Date.now() + ms;
  let left = pids.filter(alive);
  while (left.length && Date.now() < end) {
    await sleep(100);
    left = left.filter(alive);
  }
  return left;
}

/**
 * kill -9 of `tycli run` at random moments, on one home: half the runs at a random time from start (start-up,
 * settings, gate), half at a random time after the sandbox was sent the tool (module load, mid-call, result, audit).
 * lost: a sandbox was sent the tool's source (tool code could run) but the audit log holds no record of that process's
 * call
 * (started records carry the host's pid); corrupt: unreadable audit lines, or a store that no longer lists the
 * tool; orphans: sandbox processes alive 5 s after the kill; interrupted: calls `tycli audit` shows as such.
 */
export async function killRunScenario({ runs = 12, seed = 1 } = {}) {
  const dir = await scratch('kill-run');
  const home = join(dir, 'home');
  const t0 = Date.now();
  const out = { runs, spawned: 0, completed: 0, interrupted: 0, lost: 0, corrupt: 0, orphans: 0, ms: 0 };
  let rnd = seed;
  const random = () => (rnd = (rnd * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  try {
    const env = await spyEnv(dir);
    const file = await manifestFile(
      dir,
      'slow',
      'export default async () => { await new Promise((r) => setTimeout(r, 300)); return "done"; }',
    );
    const add = await cli(['--home', home, 'tool', 'add', file], {}, dir).done;
    if (add.code !== 0) throw new Error(`tool add failed: ${add.stderr}`);
    const spawnedBy = [];
    for (let i = 0; i < runs; i++) {
      const log = join(dir, `spawns-${i}.log`);
      const run = cli(['--home', home, '--json', 'run', 'slow'], { ...env, TY_SPAWN_LOG: log }, dir);
      if (i % 2 === 0) await sleep(Math.floor(random() * 1500));
      else {
        const end = Date.now() + 15_000;
        while (spyPids(log, 'load').length === 0 && Date.now() < end) await sleep(5);
        await sleep(Math.floor(random() * 700));
      }
      try {
        process.kill(run.child.pid, 'SIGKILL'); // the host only: its sandbox must go by itself
      } catch {
        /* finished already */
      }
      const res = await run.done;
      if (res.code === 0) out.completed++;
      const pids = spyPids(log, 'spawn');
      out.orphans += (await survivors(pids)).length;
      for (const p of pids)
        try {
          process.kill(-p, 'SIGKILL');
        } catch {
          /* gone */
        }
      // A prestarted sandbox that never got the tool's source ran no tool code: only a loaded one needs its record.
      if (spyPids(log, 'load').length > 0) spawnedBy.push(run.child.pid);
    }
    out.spawned = spawnedBy.length;
    const raw = existsSync(join(home, 'store', '.logs', 'audit'))
      ? readFileSync(join(home, 'store', '.logs', 'audit'), 'utf8')
          .split('\n')
          .filter(Boolean)
      : [];
    const hosts = new Set();
    for (const l of raw) {
      try {
        const r = JSON.parse(l);
        if (r.kind === 'tool' && typeof r.host === 'string') hosts.add(Number(r.host.split(':').at(-2)));
      } catch {
        /* counted by tycli audit below */
      }
    }
    out.lost = spawnedBy.filter((pid) => !hosts.has(pid)).length;
    const { entries, corrupt } = await auditOf(home, dir);
    out.corrupt += corrupt;
    out.interrupted = entries.filter((e) => e.kind === 'tool' && e.outcome === 'interrupted').length;
    const list = await cli(['--home', home, '--json', 'tool', 'list'], {}, dir).done;
    if (list.code !== 0 || !list.stdout.includes('"slow"')) out.corrupt++;
  } finally {
    out.ms = Date.now() - t0;
    await rm(dir, { recursive: true, force: true });
  }
  return out;
}

/**
 * kill -9 of `tycli tool add` at random moments, each time with a new revision of the same tool, on one home.
 * corrupt: afterwards `tool list` fails, `tool show` of the name fails other than "unknown tool", or re-adding
 * the manifest fails; lost: an add that printed its revision (finished) whose revision the store does not show.
 */
export async function killToolAddScenario({ runs = 12, seed = 7 } = {}) {
  const dir = await scratch('kill-add');
  const home = join(dir, 'home');
  const t0 = Date.now();
  const out = { runs, finished: 0, lost: 0, corrupt: 0, ms: 0 };
  let rnd = seed;
  const random = () => (rnd = (rnd * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  try {
    for (let i = 0; i < runs; i++) {
      const file = await manifestFile(dir, 'adder', `export default async () => ${i};`);
      const add = cli(['--home', home, 'tool', 'add', file], {}, dir);
      await sleep(Math.floor(random() * 3000));
      try {
        process.kill(add.child.pid, 'SIGKILL');
      } catch {
        /* finished */
      }
      const r = await add.done;
      const rev = r.code === 0 ? r.stdout.trim() : undefined;
      if (rev) out.finished++;
      const list = await cli(['--home', home, '--json', 'tool', 'list'], {}, dir).done;
      if (list.code !== 0) out.corrupt++;
      const show = await cli(['--home', home, '--json', 'tool', 'show', 'adder'], {}, dir).done;
      if (show.code !== 0 && !show.stdout.includes('E_UNKNOWN_TOOL')) out.corrupt++;
      if (rev) {
        const pinned = await cli(['--home', home, '--json', 'tool', 'show', `adder@${rev}`], {}, dir).done;
        if (pinned.code !== 0) out.lost++;
      }
      const again = await cli(['--home', home, '--json', 'tool', 'add', file], {}, dir).done;
      if (again.code !== 0) out.corrupt++;
    }
  } finally {
    out.ms = Date.now() - t0;
    await rm(dir, { recursive: true, force: true });
  }
  return out;
}

/**
 * The store on a small tmpfs (its own mount namespace: `unshare -rm`, so no root is needed): audit records are
 * appended until the disk is full (writes cut short leave torn tails), then space is freed and more are appended.
 * corruptAfter: records written after recovery that do not read back; unreadable: torn fragments (each its own line).
 */
export async function diskFullScenario() {
  const dir = await scratch('disk-full');
  const t0 = Date.now();
  try {
    const child = join(ROOT, 'test', 'faults', 'disk-full-child.mjs');
    const sh =
      'set -e; mkdir -p "$1/mnt"; mount -t tmpfs -o size=64k tmpfs "$1/mnt"; exec "$2" "$3" "$1/mnt/store" "$1/mnt/filler"';
    const { stdout } = await execFileP('unshare', ['-rm', 'sh', '-c', sh, 'sh', dir, process.execPath, child], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir },
      timeout: 120_000,
    });
    return { ...JSON.parse(stdout.trim().split('\n').pop()), ms: Date.now() - t0 };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** 10,000 (`calls`) calls submitted at once to one Node host under `ulimit -n 1024` (test/faults/load-child.mjs). */
export async function loadScenario({ calls = 10_000, tools = 4, maxQueued } = {}) {
  const dir = await scratch('load');
  try {
    const child = join(ROOT, 'test', 'faults', 'load-child.mjs');
    const args = [join(dir, 'home'), String(calls), String(tools), ...(maxQueued ? [String(maxQueued)] : [])]
      .map((a) => `'${a}'`)
      .join(' ');
    const { stdout } = await execFileP(
      '/bin/sh',
      ['-c', `ulimit -n 1024 && exec '${process.execPath}' '${child}' ${args}`],
      { cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir }, timeout: 300_000, maxBuffer: 1 << 20 },
    );
    return JSON.parse(stdout.trim().split('\n').pop());
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Time to an answer, ms, for tools that misbehave, next to a well-behaved call of the same CLI: `closer` closes its
 * stdout mid-call (timeout 60 s), `loop` never finishes its top level (--timeout 500). Each one run `reps` times.
 */
export async function boundedWaitScenario({ reps = 3 } = {}) {
  const dir = await scratch('waits');
  const home = join(dir, 'home');
  try {
    const tools = {
      ok: 'export default async () => 1;',
      closer:
        "export default async () => { const fs = await import('node:fs'); fs.closeSync(1); await new Promise(() => {}); };",
      loop: 'while (true) {}\nexport default async () => 1;',
    };
    for (const [name, src] of Object.entries(tools)) {
      const r = await cli(['--home', home, 'tool', 'add', await manifestFile(dir, name, src)], {}, dir).done;
      if (r.code !== 0) throw new Error(r.stderr);
    }
    const time = async (name, timeout) => {
      const t0 = Date.now();
      const r = await cli(['--home', home, '--json', 'run', name, '--timeout', String(timeout)], {}, dir).done;
      const line = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}');
      return { ms: Date.now() - t0, code: line.ok ? 'ok' : line.error?.code };
    };
    const out = { ok: [], closer: [], loop: [], codes: { ok: new Set(), closer: new Set(), loop: new Set() } };
    for (let i = 0; i < reps; i++) {
      for (const [name, timeout] of [
        ['ok', 60_000],
        ['closer', 60_000],
        ['loop', 500],
      ]) {
        const r = await time(name, timeout);
        out[name].push(r.ms);
        out.codes[name].add(r.code);
      }
    }
    return { ...out, codes: Object.fromEntries(Object.entries(out.codes).map(([k, v]) => [k, [...v]])) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
