// Unit tests of the tool-list diff behind tool/listChanged and of the paging helpers; trusted side.
import { describe, expect, it } from 'vitest';
import { diffSnapshots, type BindingSnapshot } from './changes.js';
import { cursorAfter, pageOf, readCursor } from './list.js';

const snap = (o: Record<string, { active?: string; revisions: string[] }>): BindingSnapshot =>
  new Map(Object.entries(o).map(([k, v]) => [k, { active: v.active, revisions: v.revisions }]));

describe('diffSnapshots', () => {
  it('names adds, activations and removals in name order; a first install is added then activated', () => {
    const before = snap({ b: { active: 'r1', revisions: ['r1'] }, c: { active: 'r3', revisions: ['r3'] } });
    const after = snap({
      a: { active: 'r0', revisions: ['r0'] },
      b: { active: 'r2', revisions: ['r1', 'r2'] },
      c: { revisions: ['r3'] },
    });
    expect(diffSnapshots(before, after)).toEqual([
      { name: 'a', change: 'added', revision: 'r0' },
      { name: 'a', change: 'activated', revision: 'r0' },
      { name: 'b', change: 'added', revision: 'r2' },
      { name: 'b', change: 'activated', revision: 'r2' },
      { name: 'c', change: 'removed', revision: 'r3' },
    ]);
  });
  it('a revision installed but not activated is only added; nothing changed is nothing', () => {
    const before = snap({ b: { active: 'r1', revisions: ['r1'] } });
    expect(diffSnapshots(before, snap({ b: { active: 'r1', revisions: ['r1', 'r9'] } }))).toEqual([
      { name: 'b', change: 'added', revision: 'r9' },
    ]);
    expect(diffSnapshots(before, before)).toEqual([]);
  });
});

describe('tool/list pages', () => {
  const entries = ['A', 'B', 'a', 'b', 'c'].map((name) => ({ name, active: null, revisions: [] }));
  it('pages by position after a name, never by index', () => {
    const p1 = pageOf(entries, undefined, 2);
    expect(p1.tools.map((t) => t.name)).toEqual(['A', 'B']);
    expect(p1.nextCursor).toBe(cursorAfter('B'));
    const p2 = pageOf(
      entries.filter((e) => e.name !== 'B'),
      p1.nextCursor,
      2,
    ); // 'B' removed meanwhile
    expect(p2.tools.map((t) => t.name)).toEqual(['a', 'b']);
    const p3 = pageOf(entries, p2.nextCursor, 2);
    expect(p3).toEqual({ tools: [expect.objectContaining({ name: 'c' })] });
  });
  it('refuses a cursor it did not make', () => {
    expect(() => readCursor('after:../x')).toThrow(/invalid cursor/);
    expect(() => readCursor('B')).toThrow(/invalid cursor/);
  });
});
