// Unit tests of posture parsing, the isolation plan (fail closed / warn once / off) and OS limits; Node host, trusted
// side.
import { describe, expect, it } from 'vitest';
import {
  fallbackWarning,
  heapMbFromArgs,
  OFF_NOTICE,
  parsePosture,
  planIsolation,
  resolvePosture,
  warnOnce,
} from './posture.js';
import { osLimitsFor, prlimitPrefix } from './limits.js';
import type { SandboxProbe } from './probe.js';

const none: SandboxProbe = {
  platform: 'linux',
  backend: 'bwrap',
  available: false,
  reason: 'bubblewrap (bwrap) is not installed',
};
const bwrap: SandboxProbe = {
  platform: 'linux',
  backend: 'bwrap',
  available: true,
  path: '/usr/bin/bwrap',
  prlimit: '/usr/bin/prlimit',
};

describe('posture', () => {
  it('parses auto, required, off and nothing else', () => {
    for (const p of ['auto', 'required', 'off']) expect(parsePosture(p)).toBe(p);
    for (const p of ['', 'AUTO', 'on', 1, undefined])
      expect(() => parsePosture(p)).toThrow(expect.objectContaining({ code: 'E_USAGE' }));
  });
  it('flag beats setting, setting beats the auto default; a bad setting is E_INVALID_SETTINGS', () => {
    expect(resolvePosture(undefined, undefined)).toBe('auto');
    expect(resolvePosture(undefined, 'required')).toBe('required');
    expect(resolvePosture('off', 'required')).toBe('off');
    expect(() => resolvePosture(undefined, 'sometimes')).toThrow(
      expect.objectContaining({ code: 'E_INVALID_SETTINGS' }),
    );
    expect(() => resolvePosture('sometimes', undefined)).toThrow(expect.objectContaining({ code: 'E_USAGE' }));
  });
  it('required without a backend fails closed with E_SANDBOX_UNAVAILABLE', () => {
    expect(() => planIsolation('required', none)).toThrow(expect.objectContaining({ code: 'E_SANDBOX_UNAVAILABLE' }));
  });
  it('auto without a backend has no wrapper and a warning that names what is not enforced', () => {
    const p = planIsolation('auto', none);
    expect(p.enforced).toBe(false);
    expect(p.wrap).toBeUndefined();
    expect(p.warning).toContain('bubblewrap (bwrap) is not installed');
    expect(p.warning).toMatch(/node: network/);
    expect(p.warning).toMatch(/environment/);
    expect(p.warning).toContain('--sandbox required');
  });
  it('off has no wrapper even when a backend exists, and says so', () => {
    const p = planIsolation('off', bwrap);
    expect(p.enforced).toBe(false);
    expect(p.wrap).toBeUndefined();
    expect(p.warning).toBe(OFF_NOTICE);
  });
  it('auto and required with a backend wrap every spawn in bwrap with limits that follow the heap flag', () => {
    for (const posture of ['auto', 'required'] as const) {
      const p = planIsolation(posture, bwrap);
      expect(p.enforced).toBe(true);
      const w = p.wrap!({
        command: process.execPath,
        args: ['--max-old-space-size=2048', '-e', '0'],
        env: {},
        readOnlyPaths: [],
        writablePaths: [],
      });
      expect(w.command).toBe('/usr/bin/bwrap');
      expect(w.args).toContain(`--data=${(4 * 2048 + 512) * 1024 * 1024}:${(4 * 2048 + 512) * 1024 * 1024}`);
    }
  });
  it('warns once per stream and text', () => {
    const written: string[] = [];
    const s = { write: (t: string) => written.push(t) };
    const text = fallbackWarning(none);
    expect(warnOnce(s, text)).toBe(true);
    expect(warnOnce(s, text)).toBe(false);
    expect(written).toEqual([`${text}\n`]);
  });
  it('reads the heap cap from node and deno argv', () => {
    expect(heapMbFromArgs(['--max-old-space-size=300'])).toBe(300);
    expect(heapMbFromArgs(['run', '--v8-flags=--max-old-space-size=64'])).toBe(64);
    expect(heapMbFromArgs(['-e', '0'])).toBeUndefined();
  });
});

describe('OS limits', () => {
  it('derives data, CPU and file limits from the call limits', () => {
    const l = osLimitsFor({ memoryMb: 256, timeoutMs: 60_000 });
    expect(l).toEqual({ nproc: 128, cpuSeconds: 120, dataBytes: 1536 * 1024 * 1024, fileBytes: 64 * 1024 * 1024 });
    expect(osLimitsFor({ memoryMb: 16, timeoutMs: 1000 }).dataBytes).toBe(1024 * 1024 * 1024);
    expect(osLimitsFor({ memoryMb: 16, timeoutMs: 24 * 3600_000 }).cpuSeconds).toBe(3600);
  });
  it('refuses non-positive or non-integer overrides', () => {
    expect(() => osLimitsFor({ memoryMb: 256, timeoutMs: 1000 }, { nproc: 0 })).toThrow(RangeError);
    expect(() => osLimitsFor({ memoryMb: 256, timeoutMs: 1000 }, { cpuSeconds: 1.5 })).toThrow(RangeError);
  });
  it('sets soft = hard so the sandbox cannot raise them (CPU: hard = soft + 1 s, so SIGXCPU comes before SIGKILL)', () => {
    const l = osLimitsFor({ memoryMb: 256, timeoutMs: 1000 });
    const a = prlimitPrefix('/usr/bin/prlimit', l);
    for (const x of a.slice(1, -1)) {
      if (x.startsWith('--cpu=')) expect(x).toBe(`--cpu=${l.cpuSeconds}:${l.cpuSeconds + 1}`);
      else expect(x).toMatch(/^--[a-z]+=(\d+):\1$/);
    }
    expect(a.at(-1)).toBe('--');
  });
});
