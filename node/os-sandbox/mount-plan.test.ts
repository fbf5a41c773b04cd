// Unit tests of the bubblewrap mount plan (mount-plan.ts): nested grants, runtime files, folders others can write,
// order; Node host, trusted side.
import { describe, expect, it } from 'vitest';
import { planMounts, setupPathViolations, type MountEntry, type MountPlanContext } from './mount-plan.js';

const ro = (dest: string, src = dest, what = 'the read-only path'): MountEntry => ({
  dest,
  src,
  writable: false,
  what,
});
const rw = (dest: string): MountEntry => ({ dest, src: dest, writable: true, what: 'the writable folder grant' });
const ctx = (open: string[] = [], system: Partial<MountPlanContext> = {}): MountPlanContext => ({
  systemFolders: [],
  systemLinks: new Map(),
  othersCanWrite: (p) => open.includes(p),
  ...system,
});
const dests = (m: MountEntry[]) => m.map((e) => `${e.writable ? 'rw' : 'ro'} ${e.dest}`);

describe('planMounts', () => {
  it('mounts outer folders first, whatever order they were given in', () => {
    const { mounts } = planMounts([rw('/p/out'), ro('/usr/bin/node'), ro('/p')], ctx());
    expect(dests(mounts)).toEqual(['ro /p', 'rw /p/out', 'ro /usr/bin/node']);
  });

  it('keeps only the outermost of nested writable grants (the outer one already shows the inner, writable)', () => {
    const { mounts } = planMounts([rw('/w/a/b'), rw('/w'), rw('/w/a'), rw('/w')], ctx());
    expect(dests(mounts)).toEqual(['rw /w']);
  });

  it('refuses a read-only path inside a writable grant, and one reached through a system symlink', () => {
    expect(() => planMounts([rw('/w'), ro('/w/runner.cjs')], ctx())).toThrow(
      expect.objectContaining({
        code: 'E_SANDBOX_FAILED',
        message: expect.stringContaining('/w/runner.cjs lies inside'),
      }),
    );
    expect(() =>
      planMounts([rw('/usr/lib'), ro('/lib/libc.so.6')], ctx([], { systemLinks: new Map([['/lib', 'usr/lib']]) })),
    ).toThrow(expect.objectContaining({ code: 'E_SANDBOX_FAILED' }));
  });

  it('a folder granted both read-only and writable is mounted once, writable', () => {
    expect(dests(planMounts([ro('/d'), rw('/d')], ctx()).mounts)).toEqual(['rw /d']);
  });

  it('drops read-only paths already shown by an outer read-only bind of the same host path', () => {
    const { mounts } = planMounts(
      [
        ro('/proj'),
        ro('/proj/node_modules/x/runner.cjs'),
        ro('/usr/bin/python3'),
        ro('/bin/python3', '/usr/bin/python3.11'),
      ],
      ctx([], { systemFolders: ['/usr'], systemLinks: new Map([['/bin', 'usr/bin']]) }),
    );
    expect(dests(mounts)).toEqual(['ro /proj']);
  });

  it('keeps a writable grant inside a read-only one only when no folder on the way is open to another user', () => {
    expect(dests(planMounts([ro('/proj'), rw('/proj/a/out')], ctx()).mounts)).toEqual(['ro /proj', 'rw /proj/a/out']);
    for (const open of ['/proj', '/proj/a'])
      expect(() => planMounts([ro('/proj'), rw('/proj/a/out')], ctx([open]))).toThrow(
        expect.objectContaining({ message: expect.stringContaining(`another user can change ${open}`) }),
      );
    // the grant itself may be open to others: only the folders bwrap walks through to create it count
    expect(dests(planMounts([ro('/proj'), rw('/proj/a/out')], ctx(['/proj/a/out'])).mounts)).toHaveLength(2);
  });

  it('library links: refused inside a writable grant, dropped inside a read-only system folder, kept elsewhere', () => {
    const links = new Map([
      ['/lib64/ld-linux-x86-64.so.2', '/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2'],
      ['/usr/lib/libz.so.1', '/usr/lib/libz.so.1.3'],
    ]);
    expect(planMounts([], ctx([], { systemFolders: ['/usr'] }), links).links).toEqual([
      ['/lib64/ld-linux-x86-64.so.2', '/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2'],
    ]);
    expect(() => planMounts([rw('/lib64')], ctx(), links)).toThrow(
      expect.objectContaining({ message: expect.stringContaining('the library link /lib64/ld-linux-x86-64.so.2') }),
    );
  });
});

describe('setupPathViolations (the final check of a bwrap command line)', () => {
  const B = '/usr/bin/bwrap';
  const argv = (...ops: string[]) => ['/usr/bin/setpriv', '--', B, '--unshare-all', ...ops, '--', 'node'];
  it('passes a plan without nesting, and reports a path beneath a writable bind or a folder others can change', () => {
    expect(
      setupPathViolations(
        argv('--tmpfs', '/tmp', '--ro-bind', '/p', '/p', '--bind', '/p/out', '/p/out'),
        B,
        () => false,
      ),
    ).toEqual([]);
    expect(setupPathViolations(argv('--bind', '/w', '/w', '--ro-bind', '/n', '/w/n'), B, () => false)).toEqual([
      '--ro-bind /w/n lies beneath the writable bind /w',
    ]);
    expect(
      setupPathViolations(argv('--symlink', 'w', '/l', '--bind', '/w', '/w', '--dir', '/l/x'), B, () => false),
    ).toEqual(['--dir /w/x lies beneath the writable bind /w']);
    expect(
      setupPathViolations(argv('--ro-bind', '/s', '/s', '--bind', '/s/a/o', '/s/a/o'), B, (p) => p === '/s/a'),
    ).toEqual(['--bind /s/a/o lies beneath /s, through /s/a, which another user can change']);
  });
  it('reports an option it does not know, and a command line without bwrap or without --', () => {
    expect(setupPathViolations(argv('--overlay-src', '/x'), B, () => false)).toEqual([
      'unclassified bwrap option --overlay-src',
    ]);
    expect(setupPathViolations(['node'], B, () => false)).toEqual([`no ${B} in the command line`]);
    expect(setupPathViolations([B, '--tmpfs', '/tmp'], B, () => false)).toEqual(['no -- before the command']);
  });
});
