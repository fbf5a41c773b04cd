// Unit tests of the cross-process sandbox probe cache, node permission-flag cache and shared-library lists (fake probe
// system, real files); test side.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROBE_CACHE_MAX_AGE_MS, forgetProbe, permissionFlagCached, probeWithCache } from './probe-cache.js';
import type { ProbeSystem } from './probe.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'probe-cache-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function fake(sandboxCode = 0): ProbeSystem & { calls: string[][] } {
  const calls: string[][] = [];
  return {
    platform: 'linux',
    euid: 1000,
    isExecutable: (p) => ['/usr/bin/bwrap', '/usr/bin/true', '/usr/bin/prlimit'].includes(p),
    run: async (cmd, args) => {
      calls.push([cmd, ...args]);
      if (args[0] === '--version') return { code: 0, stdout: 'bubblewrap 0.8.0\n', stderr: '' };
      return {
        code: sandboxCode,
        stdout: '',
        stderr: sandboxCode ? 'bwrap: No permissions to create new namespace' : '',
      };
    },
    calls,
  };
}
let n = 0;
const file = () => join(dir, `state-${n++}`, 'sandbox-probe.json');

describe('probe cache across processes', () => {
  it('a passing probe is kept: the next one runs no process and gives the same answer', async () => {
    const f = file();
    const a = fake();
    const first = await probeWithCache(f, a);
    expect(first.available).toBe(true);
    expect(a.calls.length).toBe(2); // bwrap --version, then a real test sandbox
    const b = fake();
    const second = await probeWithCache(f, b);
    expect(b.calls).toEqual([]);
    expect(second).toEqual(first);
  });

  it('a failing probe is never kept, and a kept result is dropped when the full probe fails', async () => {
    const f = file();
    expect((await probeWithCache(f, fake(1))).available).toBe(false);
    expect(existsSync(f) && JSON.parse(readFileSync(f, 'utf8')).probe).toBeFalsy();
    await probeWithCache(f, fake());
    forgetProbe(f);
    const c = fake(1);
    expect((await probeWithCache(f, c)).available).toBe(false);
    expect(c.calls.length).toBe(2);
    expect(JSON.parse(readFileSync(f, 'utf8')).probe).toBeUndefined();
  });

  it('probes again when the key no longer matches (kernel, binaries, uid), when it is old, or the file is garbage', async () => {
    const f = file();
    await probeWithCache(f, fake());
    const kept = JSON.parse(readFileSync(f, 'utf8'));
    writeFileSync(
      f,
      JSON.stringify({ ...kept, probe: { ...kept.probe, key: kept.probe.key.replace('linux', 'linux-other') } }),
    );
    const a = fake();
    await probeWithCache(f, a);
    expect(a.calls.length).toBe(2);
    const b = fake();
    await probeWithCache(f, b, Date.now() + PROBE_CACHE_MAX_AGE_MS + 1);
    expect(b.calls.length).toBe(2);
    const uid = { ...fake(), euid: 1001 };
    await probeWithCache(f, uid);
    expect(uid.calls.length).toBe(2);
    writeFileSync(f, '{not json');
    const c = fake();
    expect((await probeWithCache(f, c)).available).toBe(true);
    expect(c.calls.length).toBe(2);
  });

  it('forgetProbe (a sandbox failed to start) makes the next process probe in full', async () => {
    const f = file();
    await probeWithCache(f, fake());
    forgetProbe(f);
    const a = fake();
    await probeWithCache(f, a);
    expect(a.calls.length).toBe(2);
  });

  it('the file is written atomically with mode 0600 and leaves no temporary files', async () => {
    const f = file();
    await probeWithCache(f, fake());
    const { statSync, readdirSync } = await import('node:fs');
    expect(statSync(f).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(f, '..'))).toEqual(['sandbox-probe.json']);
  });
});

describe('node permission flag cache', () => {
  it('asks the binary once, then reads the kept flag; an unknown kept value is ignored', async () => {
    const f = file();
    const real = await permissionFlagCached(f, process.execPath);
    expect(['--permission', '--experimental-permission']).toContain(real);
    const kept = JSON.parse(readFileSync(f, 'utf8'));
    const key = Object.keys(kept.permissionFlags)[0] as string;
    expect(key.startsWith(`${process.execPath}@`)).toBe(true);
    // the other known flag, planted: returned as is (so it was read, not probed)
    const other = real === '--permission' ? '--experimental-permission' : '--permission';
    writeFileSync(f, JSON.stringify({ ...kept, permissionFlags: { [key]: other } }));
    expect(await permissionFlagCached(f, process.execPath)).toBe(other);
    // a value that is no permission flag: probed again
    writeFileSync(f, JSON.stringify({ ...kept, permissionFlags: { [key]: '--allow-addons' } }));
    expect(await permissionFlagCached(f, process.execPath)).toBe(real);
  });
});

describe('shared-library lists across processes', () => {
  // Each "process" is a fresh copy of bwrap.ts and probe-cache.ts (their in-memory list cache starts empty).
  const fresh = async () => {
    vi.resetModules();
    const [bwrap, cache] = await Promise.all([import('./bwrap.js'), import('./probe-cache.js')]);
    return { ...bwrap, ...cache };
  };
  const node = realpathSync(process.execPath);
  const linux = process.platform === 'linux';

  it.runIf(linux)(
    'a list the loader produced is kept; the next process uses it without running the loader',
    async () => {
      const f = file();
      const a = await fresh();
      const libs = a.sharedLibraries(node);
      expect(libs?.length).toBeGreaterThan(0);
      expect(a.listedSharedLibraries().map((l) => l.binary)).toEqual([node]);
      a.keepLibraryLists(f);
      const kept = JSON.parse(readFileSync(f, 'utf8')) as { libraries: Record<string, { libs: { path: string }[] }> };
      expect(kept.libraries[node]!.libs.map((l) => l.path)).toEqual(libs!.map((l) => l.path));
      const b = await fresh();
      b.seedLibraryLists(f);
      expect(b.sharedLibraries(node)).toEqual(libs);
      expect(b.listedSharedLibraries()).toEqual([]); // answered from the kept list: the loader did not run
    },
  );

  it.runIf(linux)(
    'a kept list naming a file outside the system library folders, or of a changed binary, is listed again and never bound',
    async () => {
      const f = file();
      const a = await fresh();
      const libs = a.sharedLibraries(node)!;
      a.keepLibraryLists(f);
      const kept = JSON.parse(readFileSync(f, 'utf8')) as {
        libraries: Record<string, { stamp: string; libs: { path: string; real: string }[] }>;
      };
      const canary = join(dir, 'secret.so');
      writeFileSync(canary, 'not a library');
      kept.libraries[node]!.libs.push({ path: canary, real: canary });
      writeFileSync(f, JSON.stringify(kept));
      const b = await fresh();
      b.seedLibraryLists(f);
      expect(b.sharedLibraries(node)).toEqual(libs);
      expect(b.listedSharedLibraries().map((l) => l.binary)).toEqual([node]); // listed again
      kept.libraries[node]!.libs.pop();
      kept.libraries[node]!.stamp = '1:2:3:4';
      writeFileSync(f, JSON.stringify(kept));
      const c = await fresh();
      c.seedLibraryLists(f);
      c.sharedLibraries(node);
      expect(c.listedSharedLibraries().map((l) => l.binary)).toEqual([node]);
    },
  );
});
