// Unit tests of the generated macOS Seatbelt profile and sandbox-exec argv (sandbox-exec itself cannot run on this
// Linux host); Node host, trusted side.
import { describe, expect, it } from 'vitest';
import { seatbeltArgv, seatbeltProfile, createSeatbeltWrapper } from './seatbelt.js';
import { osLimitsFor } from './limits.js';

const realpath = (p: string) =>
  p === '/missing'
    ? (() => {
        throw new Error('ENOENT');
      })()
    : p.replace('/link', '/real');
const req = {
  command: '/opt/node/bin/node',
  args: ['runner.mjs'],
  env: { NO_COLOR: '1' },
  readOnlyPaths: ['/opt/tysandbox/node/runner/sandbox-runner.mjs'],
  writablePaths: ['/Users/me/project/out'],
};

describe('seatbeltProfile', () => {
  const text = seatbeltProfile(2, 1);
  it('denies by default and denies every network operation', () => {
    const lines = text.split('\n');
    expect(lines[0]).toBe('(version 1)');
    expect(lines[1]).toBe('(deny default)');
    expect(text).toContain('(deny network*)');
    expect(text).not.toMatch(/\(allow network/);
    expect(text).not.toMatch(/\(allow default/);
  });
  it('allows exec of the runtime binary only, and no fork', () => {
    expect(text.match(/process-exec/g)).toHaveLength(1);
    expect(text).toContain('(allow process-exec (literal (param "RUNTIME")))');
    expect(text).not.toContain('process-fork');
  });
  it('names folders only as parameters, writes only to WRITE_i', () => {
    expect(text).toContain('(subpath (param "READ_0"))');
    expect(text).toContain('(subpath (param "READ_1"))');
    expect(text).not.toContain('READ_2');
    const writeBlock = text.slice(text.indexOf('(allow file-write*'));
    expect(writeBlock).toContain('(subpath (param "WRITE_0"))');
    expect(writeBlock).not.toContain('READ_');
    expect(text).not.toMatch(/\/Users|\/home/);
  });
  it('has no write rule at all without writable grants (besides /dev/null)', () => {
    const t = seatbeltProfile(0, 0);
    expect(t).not.toContain('(allow file-write*');
    expect(t.match(/file-write/g)).toEqual(['file-write']);
    expect(t).toContain('(allow file-write-data (literal "/dev/null"))');
  });
  it('balances its parentheses', () => {
    let depth = 0;
    for (const ch of text) {
      if (ch === '(') depth++;
      if (ch === ')') depth--;
      expect(depth).toBeGreaterThanOrEqual(0);
    }
    expect(depth).toBe(0);
  });
});

describe('seatbeltArgv', () => {
  it('passes paths with -D, canonicalized, never inside the profile text', () => {
    const argv = seatbeltArgv({ ...req, writablePaths: ['/Users/me/link'] }, { realpath });
    expect(argv[0]).toBe('/usr/bin/sandbox-exec');
    const profile = argv[argv.indexOf('-p') + 1] as string;
    expect(profile).not.toContain('/Users');
    expect(argv).toContain('RUNTIME=/opt/node/bin/node');
    expect(argv).toContain('WRITE_0=/Users/me/real');
    expect(argv).toContain('READ_0=/opt/node/bin');
    expect(argv).toContain('READ_1=/opt/tysandbox/node/runner/sandbox-runner.mjs');
    expect(argv.slice(-3)).toEqual(['--', '/opt/node/bin/node', 'runner.mjs']);
  });
  it('a path with profile syntax in it cannot change the profile', () => {
    const evil = '/tmp/x")) (allow default) ((';
    const argv = seatbeltArgv({ ...req, writablePaths: [evil] }, { realpath: (p) => p });
    const profile = argv[argv.indexOf('-p') + 1] as string;
    expect(profile).not.toContain('allow default');
    expect(argv).toContain(`WRITE_0=${evil}`);
  });
  it.each(['relative', '/missing', '/'])('refuses %s with E_SANDBOX_FAILED', (p) => {
    expect(() => seatbeltArgv({ ...req, writablePaths: [p] }, { realpath })).toThrow(
      expect.objectContaining({ code: 'E_SANDBOX_FAILED' }),
    );
  });
  it('wraps limits in a ulimit shell prefix without RLIMIT_NPROC (per-user on macOS)', () => {
    const argv = seatbeltArgv(req, { realpath, limits: osLimitsFor({ memoryMb: 256, timeoutMs: 60_000 }) });
    expect(argv.slice(0, 2)).toEqual(['/bin/sh', '-c']);
    expect(argv[2]).toMatch(/^ulimit -t 120 && ulimit -d \d+ && ulimit -f \d+ && ulimit -c 0 && exec "\$@"$/);
    expect(argv[2]).not.toContain('-u');
    expect(argv[4]).toBe('/usr/bin/sandbox-exec');
  });
  it('the wrapper keeps the runtime environment as given (sandbox-exec has no clearenv)', () => {
    expect(createSeatbeltWrapper({ realpath })(req).env).toEqual({ NO_COLOR: '1' });
  });
});
