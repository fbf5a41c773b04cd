// Named security contracts (requirement + real probe through the real runtime), run by vitest and `tycli diagnostics`;
// Node host, trusted side.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { planIsolation } from '../os-sandbox/posture.js';
import { createCapabilityHandler } from '../../core/capabilities/handler.js';
import { createMediatedFetch } from '../../core/capabilities/fetch/mediated.js';
import type { Gate } from '../../core/exec/runtime.js';
import { NodeFetchTransport } from '../fetch.js';
import type { ContractHost, Engine, Layers } from './cli-host.js';
import {
  PROBE_TOOL_SOURCE,
  QUICKJS_PROBE_SOURCE,
  killMarker,
  waitNoMarker,
  type Observations,
  type ProbeArgs,
  type ProbeName,
} from './probes.js';
import {
  PYTHON_ESCAPE_SOURCE,
  pythonEscapeChecks,
  type PythonProbeArgs,
} from '../../core/diagnostics/python-probes.js';

export interface ContractResult {
  ok: boolean;
  /** One line per check: `PASS|FAIL engine/layer check: what was seen`. */
  detail: string;
}
export interface Contract {
  name: string;
  requirement: string;
  hosts: ('cli' | 'browser')[];
  run(host: ContractHost): Promise<ContractResult>;
}

/** Host-side material a probe run needs: a canary (env + files), a TCP listener, a Unix socket, write targets. */
export class ProbeFixture {
  readonly dir: string;
  readonly canary: string;
  readonly marker: string;
  readonly home: string;
  readonly cwd: string;
  readonly canaryFile: string;
  readonly unixSocket: string;
  connections = 0;
  port = 0;
  #servers: Server[] = [];

  private constructor() {
    this.canary = `tysandbox-canary-${randomBytes(12).toString('hex')}`;
    this.marker = `tysandbox-orphan-${randomBytes(8).toString('hex')}`;
    this.dir = mkdtempSync(join(tmpdir(), 'tysandbox-probe-'));
    // Modes are wide open on purpose: only the sandbox, never file permissions, may stop the probes.
    chmodSync(this.dir, 0o755);
    this.home = join(this.dir, 'home');
    this.cwd = join(this.dir, 'project');
    mkdirSync(join(this.home, '.ssh'), { recursive: true, mode: 0o755 });
    mkdirSync(this.cwd, { mode: 0o777 });
    chmodSync(this.home, 0o777);
    chmodSync(join(this.home, '.ssh'), 0o755);
    chmodSync(this.cwd, 0o777);
    this.canaryFile = join(this.home, '.ssh', 'id_canary');
    writeFileSync(this.canaryFile, `${this.canary}\n`, { mode: 0o644 });
    chmodSync(this.canaryFile, 0o644);
    this.unixSocket = join(this.dir, 'probe.sock');
  }

  /** Create the fixture and start its listeners (TCP on 127.0.0.1, a Unix socket); counts connections. */
  static async create(): Promise<ProbeFixture> {
    const f = new ProbeFixture();
    const count = (s: Server) =>
      s.on('connection', (c) => {
        f.connections++;
        c.destroy();
      });
    const tcp = count(createServer());
    await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', () => r()));
    f.port = (tcp.address() as { port: number }).port;
    const unix = count(createServer());
    await new Promise<void>((r) => unix.listen(f.unixSocket, () => r()));
    chmodSync(f.unixSocket, 0o777);
    f.#servers.push(tcp, unix);
    return f;
  }

  /** Write targets in the (test) home and the (test) project folder, plus /tmp. */
  writeTargets(): string[] {
    return [
      join(this.home, `${this.marker}.txt`),
      join(this.cwd, `${this.marker}.txt`),
      join(tmpdir(), `${this.marker}.txt`),
    ];
  }
  /** Write targets that exist on the host after the run. */
  writtenOnHost(): string[] {
    return this.writeTargets().filter((p) => existsSync(p));
  }

  async close(): Promise<void> {
    killMarker(this.marker);
    for (const s of this.#servers) await new Promise<void>((r) => s.close(() => r()));
    for (const p of this.writeTargets()) rmSync(p, { force: true });
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Real home paths worth trying to read (never returned as content, only as names). */
function realHomeSecrets(): string[] {
  const h = homedir();
  return [
    join(h, '.ssh', 'id_rsa'),
    join(h, '.ssh', 'id_ed25519'),
    join(h, '.bash_history'),
    join(h, '.npmrc'),
    '/etc/passwd',
  ];
}

function hostHostname(): string | undefined {
  try {
    return readFileSync('/etc/hostname', 'utf8').trim();
  } catch {
    return undefined;
  }
}

export type Check = [ok: boolean, name: string, seen: string];

async function runProbes(
  host: ContractHost,
  engine: Engine,
  layers: Layers,
  probes: ProbeName[],
  f: ProbeFixture,
  extra: Partial<ProbeArgs> = {},
  timeoutMs = 30_000,
) {
  const args: ProbeArgs = {
    probes,
    canary: f.canary,
    readPaths: [f.canaryFile, ...realHomeSecrets()],
    writePaths: f.writeTargets(),
    port: f.port,
    unixSocket: f.unixSocket,
    marker: f.marker,
    ...extra,
  };
  // The canary also sits in this process's environment: the tool must not see it anywhere.
  const key = 'TYSANDBOX_DIAG_CANARY';
  const before = process.env[key];
  process.env[key] = f.canary;
  try {
    const source = engine === 'quickjs' ? QUICKJS_PROBE_SOURCE : PROBE_TOOL_SOURCE;
    return await host.runTool({ engine, layers, source, args, limits: { timeoutMs } });
  } finally {
    if (before === undefined) delete process.env[key];
    else process.env[key] = before;
  }
}

function judge(obs: Observations, f: ProbeFixture, probes: ProbeName[], osEnforced: boolean): Check[] {
  const checks: Check[] = [];
  const o = (n: ProbeName) => obs[n] ?? { ok: false, detail: 'no observation' };
  const etcNames = (() => {
    try {
      return new Set(readdirSync('/etc'));
    } catch {
      return new Set<string>();
    }
  })();
  for (const p of probes) {
    const r = o(p);
    switch (p) {
      case 'env_canary':
        checks.push([!r.ok, 'environment canary unseen', r.detail]);
        break;
      case 'read_file':
        checks.push([!r.ok, 'home canary and host files unreadable', r.detail]);
        break;
      case 'read_shadow':
        checks.push([!r.ok, '/etc/shadow unreadable', r.detail]);
        break;
      case 'write_files': {
        const leaked = f.writtenOnHost();
        checks.push([
          leaked.length === 0,
          'writes to home, project and /tmp never reach the host',
          leaked.length ? `appeared on host: ${leaked.join(', ')}` : r.detail,
        ]);
        break;
      }
      case 'symlink_etc': {
        const names = Array.isArray(r.value) ? (r.value as string[]) : [];
        const hostOnly = names.filter(
          (n) => etcNames.has(n) && ['passwd', 'shadow', 'hostname', 'hosts', 'ssh', 'resolv.conf'].includes(n),
        );
        checks.push([
          hostOnly.length === 0,
          'a symlink to /etc shows nothing of the host',
          r.ok ? `listed: ${names.slice(0, 8).join(' ')}` : r.detail,
        ]);
        break;
      }
      case 'proc_root_hostname': {
        const hn = hostHostname();
        const leaked = r.ok && hn !== undefined && r.value === hn;
        checks.push([!leaked, "/proc/self/root/etc/hostname is not the host's", r.detail]);
        break;
      }
      case 'tcp_connect':
        checks.push([
          !r.ok && f.connections === 0,
          'TCP to a 127.0.0.1 listener fails, listener sees nothing',
          `${r.detail}; listener connections: ${f.connections}`,
        ]);
        break;
      case 'unix_connect':
        checks.push([!r.ok && f.connections === 0, 'a Unix socket path cannot be connected', r.detail]);
        break;
      case 'dns_lookup':
        checks.push([!r.ok, 'DNS lookups fail', r.detail]);
        break;
      case 'dev_tty':
        checks.push([!r.ok, '/dev/tty cannot be opened', r.detail]);
        break;
      case 'spawn_background':
        // Refused, or allowed only inside the OS sandbox (then the orphan check decides).
        checks.push([!r.ok || osEnforced, 'a child process is refused or confined', r.detail]);
        break;
      case 'fork_bomb':
        checks.push([!r.ok, 'a fork bomb stops at the process limit', r.detail]);
        break;
      case 'huge_allocation':
        checks.push([!r.ok, 'a huge allocation fails', r.detail]);
        break;
    }
  }
  return checks;
}

function hostResponsive(): Check {
  const r = spawnSync(process.execPath, ['-e', 'process.exit(7)'], { env: {}, timeout: 30_000 });
  return [r.status === 7, 'the host can still start processes', r.error ? String(r.error.message) : `exit ${r.status}`];
}

/** One line per check, whole (the probes bound what they report; text output cuts long lines for display). */
export function formatChecks(engine: string, layers: string, checks: Check[]): string[] {
  return checks.map(
    ([ok, name, seen]) => `${ok ? 'PASS' : 'FAIL'} ${engine}/${layers} ${name}: ${seen.replace(/\s+/g, ' ')}`,
  );
}

/**
 * The engines a contract runs on: all of the host's, but for the OS layer alone only those whose own checks can be
 * switched off (a quickjs sandbox host has none: the OS layer is around the whole process).
 */
function enginesFor(host: ContractHost, layers: Layers): Engine[] {
  return layers === 'os-only' ? host.engines().filter((e) => e !== 'quickjs') : host.engines();
}

async function acrossEngines(
  host: ContractHost,
  layers: Layers,
  probes: ProbeName[],
  opts: { extraChecks?: (f: ProbeFixture) => Promise<Check[]> } = {},
): Promise<ContractResult> {
  const lines: string[] = [];
  let ok = true;
  for (const engine of enginesFor(host, layers)) {
    const f = await ProbeFixture.create();
    try {
      const res = await runProbes(host, engine, layers, probes, f);
      let checks: Check[];
      if (!res.ok) checks = [[false, 'probe tool ran', `${res.code}: ${res.message}`]];
      else checks = judge(res.value as Observations, f, probes, host.osEnforced());
      if (probes.includes('spawn_background') || probes.includes('fork_bomb')) {
        const left = await waitNoMarker(f.marker, 5000);
        checks.push([
          left.length === 0,
          'no process outlives the call',
          left.length ? `survivors: ${left.join(',')}` : 'none left',
        ]);
      }
      if (opts.extraChecks) checks.push(...(await opts.extraChecks(f)));
      ok &&= checks.every((c) => c[0]);
      lines.push(...formatChecks(engine, layers, checks));
    } finally {
      await f.close();
    }
  }
  return { ok, detail: lines.join('\n') };
}

const FULL_PROBES: ProbeName[] = ['env_canary', 'read_file', 'tcp_connect', 'spawn_background'];
const OS_PROBES: ProbeName[] = [
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

export const CONTRACTS: Contract[] = [
  {
    name: 'tool_security_contracts',
    requirement:
      "A sandboxed tool, with every layer on, cannot read the CLI's environment or host files, reach a local network listener, or leave a child process behind.",
    hosts: ['cli'],
    run: (host) => acrossEngines(host, 'full', FULL_PROBES),
  },
  {
    name: 'os_isolation',
    requirement:
      "With the engine's own permission checks switched off, the OS sandbox alone keeps host files, " +
      'home, /etc, the environment, network, Unix sockets, DNS and the terminal out of reach, and ' +
      'kills every process with the call.',
    hosts: ['cli'],
    run: async (host) => {
      if (!host.osEnforced()) return { ok: false, detail: `FAIL no OS sandbox enforced here: ${host.describe()}` };
      return acrossEngines(host, 'os-only', OS_PROBES);
    },
  },
  {
    name: 'os_resource_limits',
    requirement:
      "With the engine's checks off, a fork bomb stops at the process limit, a huge allocation fails with an error, a timeout kills the whole process tree, and the host stays responsive.",
    hosts: ['cli'],
    run: async (host) => {
      if (!host.osEnforced()) return { ok: false, detail: `FAIL no OS sandbox enforced here: ${host.describe()}` };
      const lines: string[] = [];
      let ok = true;
      for (const engine of enginesFor(host, 'os-only')) {
        const f = await ProbeFixture.create();
        try {
          const checks: Check[] = [];
          const res = await runProbes(host, engine, 'os-only', ['fork_bomb', 'huge_allocation'], f, { forkLimit: 400 });
          if (res.ok) checks.push(...judge(res.value as Observations, f, ['fork_bomb', 'huge_allocation'], true));
          else
            checks.push([
              ['E_SANDBOX_FAILED', 'E_MEMORY_LIMIT'].includes(res.code),
              'bomb/allocation ends in a clear error',
              `${res.code}: ${res.message}`,
            ]);
          checks.push(hostResponsive());
          const left = await waitNoMarker(f.marker, 5000);
          checks.push([
            left.length === 0,
            'no process outlives the call',
            left.length ? `survivors: ${left.join(',')}` : 'none left',
          ]);
          // A call that starts a background child and then never returns: the timeout kills the tree.
          const hang = await host.runTool({
            engine,
            layers: 'os-only',
            source:
              `export default async (a) => { const cp = await import('node:child_process'); const exe = typeof ` +
              `Deno !== 'undefined' ? Deno.execPath() : process.execPath; const args = typeof Deno !== 'undefined' ` +
              `? ['eval', 'setInterval(()=>{},1000)//' + a.m] : ['-e', 'setInterval(()=>{},1000)//' + a.m]; ` +
              `cp.spawn(exe, args, { detached: true, stdio: 'ignore' }).unref(); await new Promise((r) => ` +
              `setTimeout(r, 1000)); for (;;) {} }`,
            args: { m: f.marker },
            limits: { timeoutMs: 4000 },
          });
          checks.push([
            !hang.ok && hang.code === 'E_TIMEOUT',
            'a hung call times out',
            hang.ok ? 'returned' : `${hang.code}`,
          ]);
          const left2 = await waitNoMarker(f.marker, 5000);
          checks.push([
            left2.length === 0,
            'the timeout leaves no process behind',
            left2.length ? `survivors: ${left2.join(',')}` : 'none left',
          ]);
          ok &&= checks.every((c) => c[0]);
          lines.push(...formatChecks(engine, 'os-only', checks));
        } finally {
          await f.close();
        }
      }
      return { ok, detail: lines.join('\n') };
    },
  },
  {
    name: 'mediated_fetch',
    requirement:
      "A sandboxed tool's fetch (global and ctx.fetch) goes through the one mediated fetch: http:, " +
      'URL credentials, loopback, private, link-local and metadata targets are refused with a stable ' +
      'code and nothing is sent.',
    hosts: ['cli'],
    run: async (host) => {
      // A gate that allows everything: only the mediated fetch's own target rules may refuse here.
      const gate: Gate = { run: async (_r, ex) => ({ value: await ex() }), authorize: async () => {} };
      const transport = new NodeFetchTransport({ connectTimeoutMs: 3000 });
      const lines: string[] = [];
      let ok = true;
      try {
        for (const engine of host.engines()) {
          const f = await ProbeFixture.create();
          try {
            const p = f.port;
            const targets: [string, string][] = [
              [`http://127.0.0.1:${p}/`, 'E_FETCH_SCHEME'],
              [`https://user:pw@example.com/`, 'E_FETCH_CREDENTIALS'],
              [`https://127.0.0.1:${p}/`, 'E_FETCH_TARGET'],
              [`https://localhost:${p}/`, 'E_FETCH_TARGET'],
              [`https://[::ffff:127.0.0.1]:${p}/`, 'E_FETCH_TARGET'],
              [`https://2130706433:${p}/`, 'E_FETCH_TARGET'],
              ['https://169.254.169.254/latest/meta-data/', 'E_FETCH_TARGET'],
              ['https://10.0.0.1/', 'E_FETCH_TARGET'],
            ];
            const res = await host.runTool({
              engine,
              source:
                `export default async (a, ctx) => { const out = []; for (const [u] of a.targets) { for (const ` +
                `fn of [globalThis.fetch, ctx.fetch]) { try { await fn(u); out.push('sent'); } catch (e) { out.push(String(e ` +
                `&& e.code || e && e.name)); } } } return out; }`,
              args: { targets },
              capabilityFor: (identity) =>
                createCapabilityHandler({
                  identity,
                  gate,
                  fetch: createMediatedFetch({ gate, transport, limits: { timeoutMs: 5000 } }),
                }),
            });
            const checks: Check[] = [];
            if (!res.ok) checks.push([false, 'probe tool ran', `${res.code}: ${res.message}`]);
            else {
              const got = res.value as string[];
              targets.forEach(([u, want], i) => {
                const pair = [got[2 * i], got[2 * i + 1]];
                checks.push([
                  pair.every((g) => g !== undefined && want.split('|').includes(g)),
                  `fetch ${u} refused`,
                  `fetch: ${pair[0]}, ctx.fetch: ${pair[1]} (want ${want})`,
                ]);
              });
            }
            checks.push([f.connections === 0, 'the local listener saw no connection', `connections: ${f.connections}`]);
            ok &&= checks.every((c) => c[0]);
            lines.push(...formatChecks(engine, 'full', checks));
          } finally {
            await f.close();
          }
        }
      } finally {
        await (transport as unknown as { close?: () => Promise<void> }).close?.();
      }
      return { ok, detail: lines.join('\n') };
    },
  },
  {
    name: 'python_escapes',
    requirement:
      'Sandboxed Python (Pyodide) reaches nothing outside its sandbox: `import js` has no host globals ' +
      '(process, require, Deno), js.process, Function through constructor.constructor, js.eval, Pyodide ' +
      'internals (pyodide_js._api.loadBinaryFile, node sockets, package install), os.system, subprocess, ' +
      'sockets, host files and the host environment all fail closed.',
    hosts: ['cli'],
    run: async (host) => {
      const lines: string[] = [];
      let ok = true;
      // Python runs in Pyodide on the node and deno engines only (a quickjs revision is JavaScript)
      for (const engine of host.engines().filter((e) => e !== 'quickjs')) {
        const f = await ProbeFixture.create();
        const key = 'TYSANDBOX_DIAG_CANARY';
        const before = process.env[key];
        process.env[key] = f.canary;
        try {
          const args: PythonProbeArgs = { port: f.port, canary: f.canary, canaryFile: f.canaryFile };
          const res = await host.runTool({ engine, runtime: 'python', source: PYTHON_ESCAPE_SOURCE, args });
          const checks: Check[] = res.ok
            ? pythonEscapeChecks(res.value)
            : [[false, 'python probe ran', `${res.code}: ${res.message}`]];
          checks.push([
            f.connections === 0,
            'the loopback listener saw no connection',
            `connections: ${f.connections}`,
          ]);
          ok &&= checks.every((c) => c[0]);
          lines.push(...formatChecks(engine, 'python', checks));
        } finally {
          if (before === undefined) delete process.env[key];
          else process.env[key] = before;
          await f.close();
        }
      }
      return { ok, detail: lines.join('\n') };
    },
  },
  {
    name: 'sandbox_posture',
    requirement:
      'Posture `required` fails closed with E_SANDBOX_UNAVAILABLE when no backend works; `auto` then warns and names what is not enforced.',
    hosts: ['cli'],
    run: async () => {
      const none = {
        platform: process.platform,
        backend: 'none' as const,
        available: false,
        reason: 'simulated: no backend',
      };
      const checks: Check[] = [];
      try {
        planIsolation('required', none);
        checks.push([false, 'required refuses without a backend', 'did not throw']);
      } catch (e) {
        const code = (e as { code?: string }).code;
        checks.push([code === 'E_SANDBOX_UNAVAILABLE', 'required refuses without a backend', String(code)]);
      }
      const auto = planIsolation('auto', none);
      checks.push([
        !auto.enforced && !auto.wrap && /network/.test(auto.warning ?? ''),
        'auto falls back with a warning naming the network',
        (auto.warning ?? '').split('\n')[0] ?? '',
      ]);
      return { ok: checks.every((c) => c[0]), detail: formatChecks('-', 'posture', checks).join('\n') };
    },
  },
];

/** Contracts whose name contains `filter` (case-insensitive) and that apply to `hostName`. */
export function selectContracts(hostName: 'cli' | 'browser', filter?: string): Contract[] {
  const f = filter?.toLowerCase();
  return CONTRACTS.filter((c) => c.hosts.includes(hostName) && (!f || c.name.toLowerCase().includes(f)));
}

export interface ContractRun {
  name: string;
  requirement: string;
  ok: boolean;
  detail: string;
}

/** Run contracts one after another; a thrown error is a failure with its message. */
export async function runContracts(
  host: ContractHost,
  contracts: Contract[],
  onProgress?: (done: number, total: number, name: string) => void,
): Promise<ContractRun[]> {
  const out: ContractRun[] = [];
  for (const c of contracts) {
    onProgress?.(out.length, contracts.length, c.name);
    try {
      const r = await c.run(host);
      out.push({ name: c.name, requirement: c.requirement, ok: r.ok, detail: r.detail });
    } catch (e) {
      out.push({ name: c.name, requirement: c.requirement, ok: false, detail: `FAIL threw: ${(e as Error).message}` });
    }
  }
  return out;
}
