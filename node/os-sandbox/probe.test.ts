// Unit tests of the OS sandbox probe on every platform branch (fake system), plus the real probe on this host; Node
// host, trusted side.
import { describe, expect, it } from 'vitest';
import { probeSandbox, probeUncached, setProbeOverrideForTests, type ProbeSystem } from './probe.js';

function fake(
  o: Partial<ProbeSystem> & {
    exes?: string[];
    results?: Record<string, { code: number | null; stdout?: string; stderr?: string }>;
  },
): ProbeSystem & { calls: string[][] } {
  const calls: string[][] = [];
  return {
    platform: o.platform ?? 'linux',
    euid: o.euid ?? 1000,
    isExecutable: (p) => (o.exes ?? []).includes(p),
    run: async (cmd, args) => {
      calls.push([cmd, ...args]);
      const key = args[0] === '--version' ? `${cmd} --version` : cmd;
      const r = o.results?.[key] ?? { code: 0 };
      return { code: r.code, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
    },
    calls,
  };
}

describe('probe (fake system)', () => {
  it('linux without bwrap: unavailable, says how to install', async () => {
    const p = await probeUncached(fake({ exes: [] }));
    expect(p).toMatchObject({ backend: 'bwrap', available: false });
    expect(p.reason).toMatch(/not installed/);
  });
  it('linux with a broken bwrap --version: unavailable', async () => {
    const p = await probeUncached(
      fake({ exes: ['/usr/bin/bwrap'], results: { '/usr/bin/bwrap --version': { code: 1, stderr: 'boom' } } }),
    );
    expect(p.available).toBe(false);
    expect(p.reason).toMatch(/--version.*boom/);
  });
  it('linux where user namespaces fail: unavailable, and the probe really ran a sandbox', async () => {
    const sys = fake({
      exes: ['/usr/bin/bwrap', '/usr/bin/true', '/usr/bin/prlimit'],
      results: {
        '/usr/bin/bwrap --version': { code: 0, stdout: 'bubblewrap 0.8.0\n' },
        '/usr/bin/bwrap': { code: 1, stderr: 'bwrap: No permissions to creating new namespace' },
      },
    });
    const p = await probeUncached(sys);
    expect(p.available).toBe(false);
    expect(p.reason).toMatch(/test sandbox failed.*namespace/);
    expect(sys.calls.some((c) => c[0] === '/usr/bin/bwrap' && c.includes('--unshare-all'))).toBe(true);
  });
  it('linux as root without setpriv: unavailable (cannot drop to an unprivileged uid)', async () => {
    const p = await probeUncached(
      fake({
        euid: 0,
        exes: ['/usr/bin/bwrap', '/usr/bin/true'],
        results: { '/usr/bin/bwrap --version': { code: 0, stdout: 'bubblewrap 0.8.0' } },
      }),
    );
    expect(p.available).toBe(false);
    expect(p.reason).toMatch(/setpriv/);
  });
  it('macOS: sandbox-exec present and working', async () => {
    const sys = fake({ platform: 'darwin', exes: ['/usr/bin/sandbox-exec'] });
    const p = await probeUncached(sys);
    expect(p).toMatchObject({ backend: 'seatbelt', available: true, path: '/usr/bin/sandbox-exec' });
    expect(sys.calls[0]?.[0]).toBe('/usr/bin/sandbox-exec');
    expect(sys.calls[0]?.[2]).toContain('(deny default)');
  });
  it('macOS: sandbox-exec missing or failing', async () => {
    expect((await probeUncached(fake({ platform: 'darwin', exes: [] }))).available).toBe(false);
    const p = await probeUncached(
      fake({
        platform: 'darwin',
        exes: ['/usr/bin/sandbox-exec'],
        results: { '/usr/bin/sandbox-exec': { code: 65, stderr: 'denied' } },
      }),
    );
    expect(p.available).toBe(false);
    expect(p.reason).toMatch(/denied/);
  });
  it('other platforms: no backend', async () => {
    const p = await probeUncached(fake({ platform: 'win32' }));
    expect(p).toMatchObject({ backend: 'none', available: false });
  });
});

describe.runIf(process.platform === 'linux')('probe (this host)', () => {
  it('finds a working bubblewrap, caches the result, and honours the test-only override', async () => {
    const a = await probeSandbox();
    expect(a).toMatchObject({ backend: 'bwrap', available: true, path: '/usr/bin/bwrap' });
    expect(a.version).toMatch(/^bubblewrap \d/);
    expect(await probeSandbox()).toBe(a);
    setProbeOverrideForTests({ platform: 'linux', backend: 'none', available: false, reason: 'simulated' });
    try {
      expect((await probeSandbox()).reason).toBe('simulated');
    } finally {
      setProbeOverrideForTests(undefined);
    }
    expect(await probeSandbox()).toBe(a);
  });
});
