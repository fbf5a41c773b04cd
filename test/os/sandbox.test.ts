// Every case of cases/os-sandbox.json under Node and Deno, with all layers and with the engine's own checks off (OS
// layer alone); Node host, trusted side.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliContractHost, type RunToolResult, type Engine, type Layers } from '../../node/diagnostics/cli-host.js';
import { ProbeFixture } from '../../node/diagnostics/contracts.js';
import {
  PROBE_TOOL_SOURCE,
  processesWithMarker,
  waitNoMarker,
  type Observations,
  type ProbeArgs,
  type ProbeName,
} from '../../node/diagnostics/probes.js';

function obsOf(res: RunToolResult): Observations {
  if (!res.ok) throw new Error(`probe tool failed: ${res.code}: ${res.message}`);
  return res.value as Observations;
}

const CANARY_ENV = 'TYSANDBOX_TEST_CANARY';
const DENIED = /^(ENOENT|EACCES|EROFS|EPERM|ERR_ACCESS_DENIED|NotCapable|PermissionDenied|NotFound)$/;
const ALL: ProbeName[] = [
  'env_canary',
  'read_file',
  'read_shadow',
  'write_files',
  'symlink_etc',
  'proc_root_hostname',
  'tcp_connect',
  'unix_connect',
  'dns_lookup',
  'dev_tty',
  'spawn_background',
];

let host: CliContractHost;
beforeAll(async () => {
  // posture required: if bubblewrap stopped working, these tests fail loudly instead of passing unsandboxed.
  host = await CliContractHost.create({ posture: 'required' });
});

async function run(
  engine: Engine,
  layers: Layers,
  f: ProbeFixture,
  probes: ProbeName[],
  extra: Partial<ProbeArgs> = {},
  timeoutMs = 30_000,
) {
  const args: ProbeArgs = {
    probes,
    canary: f.canary,
    readPaths: [f.canaryFile],
    writePaths: f.writeTargets(),
    port: f.port,
    unixSocket: f.unixSocket,
    marker: f.marker,
    ...extra,
  };
  process.env[CANARY_ENV] = f.canary;
  try {
    return await host.runTool({ engine, layers, source: PROBE_TOOL_SOURCE, args, limits: { timeoutMs } });
  } finally {
    delete process.env[CANARY_ENV];
  }
}

const matrix: [Engine, Layers][] = [
  ['node', 'full'],
  ['node', 'os-only'],
  ['deno', 'full'],
  ['deno', 'os-only'],
];

describe.each(matrix)('%s sandbox, layers: %s', (engine, layers) => {
  let f: ProbeFixture;
  let obs: Observations;
  let survivors: number[];
  beforeAll(async () => {
    f = await ProbeFixture.create();
    const res = await run(engine, layers, f, ALL);
    if (!res.ok) throw new Error(`probe tool failed: ${res.code}: ${res.message}`);
    obs = res.value as Observations;
    survivors = await waitNoMarker(f.marker, 5000);
  });
  afterAll(async () => {
    await f?.close();
  });

  it('cannot read a canary in the home folder (~/.ssh/id_canary) nor /etc/shadow', () => {
    expect(obs.read_file?.ok).toBe(false);
    expect(obs.read_file?.detail).toMatch(/id_canary: (ENOENT|ERR_ACCESS_DENIED|NotCapable)/);
    expect(obs.read_shadow?.ok).toBe(false);
    expect(obs.read_shadow?.detail).toMatch(DENIED);
  });

  it('writes under home, the project folder and /tmp are denied or stay inside; nothing appears on the host', () => {
    expect(f.writtenOnHost()).toEqual([]);
    const d = obs.write_files?.detail ?? '';
    expect(d).toMatch(/home\/tysandbox-orphan-[0-9a-f]+\.txt: (ENOENT|EROFS|EACCES|ERR_ACCESS_DENIED|NotCapable)/);
    expect(d).toMatch(/project\/tysandbox-orphan-[0-9a-f]+\.txt: (ENOENT|EROFS|EACCES|ERR_ACCESS_DENIED|NotCapable)/);
  });

  it('a symlink to /etc and /proc/self/root/etc/hostname show nothing outside the sandbox', () => {
    expect(obs.symlink_etc?.ok).toBe(false);
    expect(obs.proc_root_hostname?.ok).toBe(false);
    expect(obs.proc_root_hostname?.detail).toMatch(DENIED);
  });

  it('TCP to a 127.0.0.1 listener, a Unix socket and DNS all fail; the listener sees no connection', () => {
    expect(obs.tcp_connect?.ok).toBe(false);
    expect(obs.tcp_connect?.detail).toMatch(/ECONNREFUSED|NotCapable|ENETUNREACH/);
    expect(obs.unix_connect?.ok).toBe(false);
    expect(obs.dns_lookup?.ok).toBe(false);
    expect(f.connections).toBe(0);
  });

  it('a canary in the CLI environment appears nowhere the tool can read (env, /proc/*/environ, /proc/*/cmdline)', () => {
    expect(obs.env_canary?.ok).toBe(false);
    expect(obs.env_canary?.detail).toMatch(/^not seen/);
  });

  it('/dev/tty cannot be opened (new session, no controlling terminal)', () => {
    expect(obs.dev_tty?.ok).toBe(false);
  });

  it('a spawned background process is refused, or confined and gone after the call', () => {
    if (layers === 'full') expect(obs.spawn_background?.ok).toBe(false);
    // the OS layer alone: allowed inside, so the kill below is what is tested
    else expect(obs.spawn_background?.ok).toBe(true);
    expect(survivors).toEqual([]);
  });
});

describe.each(['node', 'deno'] as Engine[])('%s sandbox, OS layer alone: limits', (engine) => {
  let f: ProbeFixture;
  beforeAll(async () => {
    f = await ProbeFixture.create();
  });
  afterAll(async () => {
    await f?.close();
  });

  it('a fork bomb stops at the process limit with EAGAIN; the host stays responsive; nothing survives', async () => {
    const res = await run(engine, 'os-only', f, ['fork_bomb'], { forkLimit: 400 });
    expect(res.ok).toBe(true);
    const o = obsOf(res).fork_bomb;
    expect(o?.ok).toBe(false);
    expect(o?.detail).toMatch(/then EAGAIN/);
    expect(o?.value as number).toBeLessThan(128);
    const r = spawnSync(process.execPath, ['-e', 'process.exit(7)'], { env: {}, timeout: 30_000 });
    expect(r.status).toBe(7);
    expect(await waitNoMarker(f.marker, 5000)).toEqual([]);
  });

  it('a huge allocation fails with a RangeError (RLIMIT_DATA), not host memory exhaustion', async () => {
    const res = await run(engine, 'os-only', f, ['huge_allocation'], { allocateMb: 16384 });
    expect(res.ok).toBe(true);
    const o = obsOf(res).huge_allocation;
    expect(o?.ok).toBe(false);
    expect(o?.detail).toMatch(/RangeError/);
  });

  it('a timeout kills the whole process tree, background children included', async () => {
    const res = await host.runTool({
      engine,
      layers: 'os-only',
      source:
        `export default async (a) => { const cp = await import('node:child_process'); const d = typeof ` +
        `Deno !== 'undefined'; const exe = d ? Deno.execPath() : process.execPath; const args = d ? ` +
        `['eval', 'setInterval(()=>{},1000)//' + a.m] : ['-e', 'setInterval(()=>{},1000)//' + a.m]; ` +
        `cp.spawn(exe, args, { detached: true, stdio: 'ignore' }).unref(); cp.spawn(exe, args, { stdio: ` +
        `'ignore' }); await new Promise((r) => setTimeout(r, 1500)); for (;;) {} }`,
      args: { m: f.marker },
      limits: { timeoutMs: 5000 },
    });
    expect(res).toMatchObject({ ok: false, code: 'E_TIMEOUT' });
    expect(await waitNoMarker(f.marker, 5000)).toEqual([]);
  });
});

describe('all layers: memory', () => {
  it.each(['node', 'deno'] as Engine[])('%s: growing the heap past its cap ends in E_MEMORY_LIMIT', async (engine) => {
    const res = await host.runTool({
      engine,
      source: 'export default async () => { const a = []; for (;;) a.push({ x: Math.random(), y: [1, 2, 3] }); }',
      args: {},
      limits: { memoryMb: 64, timeoutMs: 30_000 },
    });
    expect(res).toMatchObject({ ok: false, code: 'E_MEMORY_LIMIT' });
  });
  it('node: a huge ArrayBuffer allocation (outside the V8 heap) is stopped by RLIMIT_DATA', async () => {
    const f = await ProbeFixture.create();
    try {
      const res = await run('node', 'full', f, ['huge_allocation'], { allocateMb: 16384 });
      expect(res.ok).toBe(true);
      expect(obsOf(res).huge_allocation?.detail).toMatch(/RangeError/);
    } finally {
      await f.close();
    }
  });
});

describe('grants', () => {
  it('a path named in the tool arguments never widens the sandbox view', async () => {
    const f = await ProbeFixture.create();
    try {
      const res = await run('node', 'os-only', f, ['read_file'], { readPaths: [f.canaryFile, f.dir, '/etc/passwd'] });
      expect(res.ok).toBe(true);
      expect(obsOf(res).read_file?.ok).toBe(false);
      expect(processesWithMarker(f.marker)).toEqual([]);
    } finally {
      await f.close();
    }
  });

  it.each(['node', 'deno'] as Engine[])(
    '%s: a folder granted read-only is readable (positive control) and stays read-only; its siblings stay hidden',
    async (engine) => {
      const f = await ProbeFixture.create();
      try {
        const args: ProbeArgs = {
          probes: ['read_file', 'write_files'],
          canary: f.canary,
          readPaths: [f.canaryFile, `${f.cwd}/../project`],
          writePaths: [`${f.home}/.ssh/new.txt`, `${f.cwd}/x.txt`],
        };
        const res = await host.runTool({
          engine,
          source: PROBE_TOOL_SOURCE,
          args,
          folders: [{ path: f.home, access: 'read' }],
        });
        expect(res.ok).toBe(true);
        const o = obsOf(res);
        expect(o.read_file?.value).toEqual([`${f.canaryFile} (canary)`]);
        expect(o.write_files?.ok).toBe(false);
        expect(f.writtenOnHost()).toEqual([]);
      } finally {
        await f.close();
      }
    },
  );

  it('node: a folder granted for writing receives the write on the host', async () => {
    const f = await ProbeFixture.create();
    try {
      const target = `${f.cwd}/granted.txt`;
      const res = await host.runTool({
        engine: 'node',
        source: PROBE_TOOL_SOURCE,
        args: { probes: ['write_files'], canary: f.canary, writePaths: [target] },
        folders: [{ path: f.cwd, access: 'write' }],
      });
      expect(res.ok).toBe(true);
      expect(obsOf(res).write_files?.detail).toBe(`${target}: written`);
      expect(spawnSync('cat', [target], { encoding: 'utf8' }).stdout).toContain(f.canary);
    } finally {
      await f.close();
    }
  });
});
