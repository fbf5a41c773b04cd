// Unit tests of the bubblewrap argv builder, and plain `bwrap ... node -e` runs of its folder grants; Node host,
// trusted side.
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bwrapArgv, createBwrapWrapper, SANDBOX_DENO_DIR, spawnDropsPrivileges, type BwrapOptions } from './bwrap.js';
import { osLimitsFor } from './limits.js';
import { probeUncached, type SandboxProbe } from './probe.js';

const node = process.execPath;
const base = {
  command: node,
  args: ['-e', '0'],
  env: {} as Record<string, string>,
  readOnlyPaths: [] as string[],
  writablePaths: [] as string[],
};
let probe: SandboxProbe;
let opts: BwrapOptions;
let dir: string;

beforeAll(async () => {
  probe = await probeUncached();
  opts = { bwrapPath: probe.path ?? '/usr/bin/bwrap' };
  if (probe.prlimit) {
    opts.prlimitPath = probe.prlimit;
    opts.limits = osLimitsFor({ memoryMb: 128, timeoutMs: 10_000 });
  }
  if (probe.dropTo) opts.dropTo = probe.dropTo;
  dir = mkdtempSync(join(tmpdir(), 'tysandbox-bwrap-test-'));
  chmodSync(dir, 0o755);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function flagPairs(argv: string[], flag: string): [string, string][] {
  const out: [string, string][] = [];
  argv.forEach((a, i) => {
    if (a === flag) out.push([argv[i + 1] as string, argv[i + 2] as string]);
  });
  return out;
}

describe('bwrapArgv', () => {
  it('unshares every namespace, dies with its parent, starts a new session and clears the environment', () => {
    const argv = bwrapArgv(base, opts);
    for (const f of [
      '--unshare-all',
      '--unshare-user',
      '--disable-userns',
      '--die-with-parent',
      '--new-session',
      '--clearenv',
    ])
      expect(argv).toContain(f);
    expect(argv).not.toContain('--share-net');
    expect(argv.join(' ')).toMatch(/--proc \/proc --dev \/dev --size \d+ --tmpfs \/tmp/);
    expect(argv.slice(-3)).toEqual([node, '-e', '0']);
  });

  it('binds no home, no project folder, no /etc: only the runtime binary, its libraries and prlimit', () => {
    const argv = bwrapArgv(base, opts);
    const dests = [...flagPairs(argv, '--ro-bind'), ...flagPairs(argv, '--bind')].map(([, d]) => d);
    expect(dests).toContain(node);
    for (const d of dests) {
      expect(
        d.startsWith('/home') || d.startsWith('/root') || d.startsWith('/etc') || d.startsWith(process.cwd()),
      ).toBe(false);
      expect(d === node || d === probe.prlimit || /\/lib[^/]*\/|\/ld-linux/.test(d)).toBe(true);
    }
  });

  it('passes variables with --setenv and gives bwrap itself an empty environment (pid 1 environ is readable inside)', () => {
    const w = createBwrapWrapper(opts)({ ...base, env: { NO_COLOR: '1' } });
    expect(w.env).toEqual({});
    expect(flagPairs([w.command, ...w.args], '--setenv')).toEqual([['NO_COLOR', '1']]);
  });

  it('refuses invalid variable names instead of passing them', () => {
    expect(() => bwrapArgv({ ...base, env: { 'A=B': 'x' } }, opts)).toThrow(
      expect.objectContaining({ code: 'E_SANDBOX_FAILED' }),
    );
  });

  it('moves DENO_DIR into the sandbox tmpfs instead of binding the host folder', () => {
    const denoDir = join(dir, 'denodir');
    mkdirSync(denoDir, { recursive: true });
    const argv = bwrapArgv({ ...base, env: { DENO_DIR: denoDir }, writablePaths: [denoDir] }, opts);
    expect(flagPairs(argv, '--setenv')).toEqual([['DENO_DIR', SANDBOX_DENO_DIR]]);
    expect(argv).not.toContain(denoDir);
  });

  it('canonicalizes grants with realpath and binds the real folder', () => {
    const real = join(dir, 'real');
    mkdirSync(real, { recursive: true, mode: 0o777 });
    chmodSync(real, 0o777);
    const link = join(dir, 'link');
    if (!existsSync(link)) symlinkSync(real, link);
    const argv = bwrapArgv({ ...base, writablePaths: [link] }, opts);
    expect(flagPairs(argv, '--bind')).toContainEqual([real, real]);
    expect(argv).not.toContain(link);
  });

  it.each(['relative/path', '/definitely/not/here', '/', '/proc/self', '/sys', '/dev'])(
    'refuses the grant %s with E_SANDBOX_FAILED',
    (p) => {
      expect(() => bwrapArgv({ ...base, writablePaths: [p] }, opts)).toThrow(
        expect.objectContaining({ code: 'E_SANDBOX_FAILED' }),
      );
      expect(() => bwrapArgv({ ...base, readOnlyPaths: [p] }, opts)).toThrow(
        expect.objectContaining({ code: 'E_SANDBOX_FAILED' }),
      );
    },
  );

  it('puts runtime binds after grants so a writable grant cannot make the runtime writable', () => {
    const argv = bwrapArgv({ ...base, writablePaths: [dir] }, { ...opts, dropTo: undefined });
    const grantAt = argv.indexOf('--bind');
    const nodeAt = argv.findIndex((a, i) => a === '--ro-bind' && argv[i + 2] === node);
    expect(grantAt).toBeGreaterThan(-1);
    expect(nodeAt).toBeGreaterThan(grantAt);
  });

  it('applies prlimit inside the sandbox, and drops root to an unprivileged uid', () => {
    const argv = bwrapArgv(base, {
      ...opts,
      prlimitPath: '/usr/bin/prlimit',
      limits: osLimitsFor({ memoryMb: 256, timeoutMs: 60_000 }),
      dropTo: { setprivPath: '/usr/bin/setpriv', uid: 65534, gid: 65534 },
    });
    expect(argv.slice(0, 6)).toEqual([
      '/usr/bin/setpriv',
      '--reuid=65534',
      '--regid=65534',
      '--clear-groups',
      '--inh-caps=-all',
      '--',
    ]);
    const sep = argv.lastIndexOf(node) - 1;
    expect(argv[sep]).toBe('--');
    expect(argv[argv.indexOf('--chdir') + 3]).toBe('/usr/bin/prlimit');
    expect(argv.slice(sep - 6, sep)).toEqual(expect.arrayContaining(['--nproc=128:128', '--core=0:0']));
  });

  it('leaves the uid drop to a spawner that asks for it (spawnAs, no setpriv exec) only where that drop is equivalent', () => {
    const dropTo = { setprivPath: '/usr/bin/setpriv', uid: 65534, gid: 65534 };
    const asked = createBwrapWrapper({ ...opts, dropTo })({ ...base, spawnerSetsIds: true });
    const plain = createBwrapWrapper({ ...opts, dropTo })(base);
    expect(plain.command).toBe('/usr/bin/setpriv');
    expect(plain.spawnAs).toBeUndefined();
    if (spawnDropsPrivileges()) {
      expect(asked.command).toBe(opts.bwrapPath);
      expect(asked.args).not.toContain('/usr/bin/setpriv');
      expect(asked.spawnAs).toEqual({ uid: 65534, gid: 65534 });
      expect(asked.args).toEqual(plain.args.slice(plain.args.indexOf('--') + 2));
    } else {
      expect(asked.command).toBe('/usr/bin/setpriv');
      expect(asked.spawnAs).toBeUndefined();
    }
    // Without a uid drop there is nothing for the spawner to do.
    expect(
      createBwrapWrapper({ ...opts, dropTo: undefined })({ ...base, spawnerSetsIds: true }).spawnAs,
    ).toBeUndefined();
  });

  it('refuses, as root, a writable grant the sandbox uid could not write (clear error, not a silent failure)', () => {
    const closed = join(dir, 'closed');
    mkdirSync(closed, { recursive: true, mode: 0o700 });
    chmodSync(closed, 0o700);
    expect(() =>
      bwrapArgv(
        { ...base, writablePaths: [closed] },
        { ...opts, dropTo: { setprivPath: '/usr/bin/setpriv', uid: 65534, gid: 65534 } },
      ),
    ).toThrow(/not writable by the sandbox's uid 65534/);
  });
});

describe.runIf(process.platform === 'linux')('plain bwrap runs of folder grants', () => {
  function runNode(code: string, req: Partial<typeof base> = {}) {
    const w = createBwrapWrapper(opts)({ ...base, ...req, args: ['-e', code] });
    return spawnSync(w.command, w.args, { env: w.env, encoding: 'utf8', timeout: 30_000 });
  }

  it('sees only its own view: no home, no /etc, fresh /proc, own hostname', () => {
    expect(probe.available).toBe(true);
    const r = runNode(
      "const fs=require('fs');console.log(JSON.stringify({root:fs.readdirSync('/').sort(),host:require('os').hostname(),pids:fs.readdirSync('/proc').filter(n=>/^\\d+$/.test(n)).length}))",
    );
    expect(r.status, r.stderr).toBe(0);
    const seen = JSON.parse(r.stdout) as { root: string[]; host: string; pids: number };
    expect(seen.root).not.toContain('etc');
    expect(seen.root).not.toContain('home');
    expect(seen.root).not.toContain('root');
    expect(seen.host).toBe('tysandbox');
    expect(seen.pids).toBeLessThan(5);
  });

  it('a writable grant is writable and the write shows on the host; a read-only grant refuses writes', () => {
    const rw = join(dir, 'rw');
    const ro = join(dir, 'ro');
    for (const d of [rw, ro]) {
      mkdirSync(d, { recursive: true });
      chmodSync(d, 0o777);
    }
    writeFileSync(join(ro, 'in.txt'), 'hello', { mode: 0o644 });
    const r = runNode(
      [
        `const fs=require('fs');fs.writeFileSync(${JSON.stringify(join(rw, 'out.txt'))},'w');let e='none';`,
        `try{fs.writeFileSync(${JSON.stringify(join(ro, 'x.txt'))},'x')}catch(x){e=x.code}`,
        `console.log(fs.readFileSync(${JSON.stringify(join(ro, 'in.txt'))},'utf8')+' '+e)`,
      ].join(''),
      { readOnlyPaths: [ro], writablePaths: [rw] },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('hello EROFS');
    expect(readFileSync(join(rw, 'out.txt'), 'utf8')).toBe('w');
    expect(existsSync(join(ro, 'x.txt'))).toBe(false);
  });

  it('a symlink inside a grant that points outside resolves inside the sandbox view, not the host', () => {
    const g = join(dir, 'g');
    mkdirSync(g, { recursive: true });
    chmodSync(g, 0o777);
    const link = join(g, 'etc-link');
    if (!existsSync(link)) symlinkSync('/etc', link);
    const r = runNode(
      `let e='read';try{require('fs').readdirSync(${JSON.stringify(link)})}catch(x){e=x.code}console.log(e)`,
      { writablePaths: [g] },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('ENOENT');
  });

  it('the private /tmp is size-capped (64 MiB by default): filling it fails with ENOSPC or EFBIG', () => {
    const r = runNode(
      "let e='none';try{const b=Buffer.alloc(16*1024*1024);for(let i=0;i<8;i++)require('fs').writeFileSync('/tmp/f'+i,b)}catch(x){e=x.code}console.log(e)",
    );
    expect(r.status, r.stderr).toBe(0);
    expect(['ENOSPC', 'EFBIG']).toContain(r.stdout.trim());
  });

  it('the CPU limit (RLIMIT_CPU via prlimit) kills a busy loop on its own, without any wall-clock timeout', () => {
    expect(probe.prlimit).toBeDefined();
    const w = createBwrapWrapper({
      ...opts,
      limits: osLimitsFor({ memoryMb: 128, timeoutMs: 1000 }, { cpuSeconds: 1 }),
    })({ ...base, args: ['-e', 'for(;;){}'] });
    const r = spawnSync(w.command, w.args, { env: w.env, encoding: 'utf8', timeout: 60_000 });
    expect(r.error).toBeUndefined(); // not the 60 s spawnSync timeout
    // bwrap reports the child's death by signal as exit status 128+N: SIGXCPU (24) first, SIGKILL (9) at the hard
    // limit.
    expect([128 + 24, 128 + 9]).toContain(r.status);
  });

  it.runIf(process.getuid?.() === 0)(
    "a root CLI's sandbox process runs as its leased uid and gid, with no supplementary group and no capability, whichever of spawn or setpriv drops root",
    async () => {
      const { NodeSandboxRuntime } = await import('../sandbox/runtime.js');
      const { DEFAULT_LIMITS } = await import('../../core/exec/runtime.js');
      const manifest = {
        name: 'who',
        description: '',
        parameters: {},
        execution: {
          kind: 'sandboxed-code' as const,
          runtime: 'javascript' as const,
          source: 'export default async () => 1',
        },
      };
      const seen: Record<string, string>[] = [];
      const ids: ({ uid: number; gid: number } | undefined)[] = [];
      for (const spawnerSetsIds of [true, false]) {
        const wrapper = createBwrapWrapper(opts);
        const rt = new NodeSandboxRuntime({
          engine: 'node',
          wrap: (req) => {
            const w = wrapper({ ...req, spawnerSetsIds: spawnerSetsIds && req.spawnerSetsIds === true });
            ids.push(w.uid === undefined ? undefined : { uid: w.uid, gid: w.gid as number });
            return w;
          },
        });
        const inst = await rt.start({
          revision: `bwho${String(spawnerSetsIds)}`,
          manifest,
          limits: { ...DEFAULT_LIMITS },
        });
        try {
          const status = readFileSync(`/proc/${inst.pid}/status`, 'utf8');
          seen.push(
            Object.fromEntries(
              ['Uid', 'Gid', 'Groups', 'CapInh', 'CapPrm', 'CapEff', 'CapAmb'].map((k) => [
                k,
                (new RegExp(`^${k}:[ \\t]*(.*)$`, 'm').exec(status)?.[1] ?? '').trim().split(/\s+/).join(' '),
              ]),
            ),
          );
        } finally {
          await inst.destroy('test');
        }
      }
      for (const [i, s] of seen.entries()) {
        const id = ids[i];
        expect(id?.uid, 'a pooled uid was leased').toBeGreaterThan(0);
        expect(s.Uid).toBe(`${id?.uid} ${id?.uid} ${id?.uid} ${id?.uid}`);
        expect(s.Gid).toBe(`${id?.gid} ${id?.gid} ${id?.gid} ${id?.gid}`);
        expect(s.Groups).toBe('');
        for (const k of ['CapInh', 'CapPrm', 'CapEff', 'CapAmb']) expect(s[k], k).toMatch(/^0+$/);
      }
    },
  );

  it('when the host process dies (SIGKILL, no cleanup), everything inside the sandbox dies with it (--die-with-parent)', async () => {
    const marker = `tysandbox-parent-${process.pid}-${Date.now()}`;
    const w = createBwrapWrapper(opts)({
      ...base,
      args: [
        '-e',
        `require('child_process').spawn(process.execPath, ['-e', 'setInterval(()=>{},1000)//${marker}'], {detached: true, stdio: 'ignore'}).unref(); setInterval(()=>{},1000)//${marker}`,
      ],
    });
    // A stand-in for the CLI: a shell that starts the sandbox and waits; it is then killed without any chance to clean
    // up.
    const parent = spawn('/bin/sh', ['-c', '"$@" & wait', 'sh', w.command, ...w.args], { env: w.env, stdio: 'ignore' });
    const { processesWithMarker, waitNoMarker, killMarker } = await import('../diagnostics/probes.js');
    try {
      const end = Date.now() + 15_000;
      // The shell, bwrap (outer), bwrap (pid 1 inside) and the two node processes all carry the marker in their argv
      // (while processes fork and exec the count moves for a moment: wait for five on three polls in a row).
      for (let steady = 0; steady < 3 && Date.now() < end; ) {
        steady = processesWithMarker(marker).length === 5 ? steady + 1 : 0;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(processesWithMarker(marker).length).toBe(5);
      parent.kill('SIGKILL');
      expect(await waitNoMarker(marker, 5000)).toEqual([]);
    } finally {
      parent.kill('SIGKILL');
      killMarker(marker);
    }
  });
});
