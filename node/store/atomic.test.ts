// Unit tests for node/store/atomic.ts: whole-file replacement, modes, temp files never left, never through a symlink,
// writes to one path in call order; test side.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { lstat, mkdir, mkdtemp, readFile, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sweepTempFiles, writeFileAtomic, writeFileAtomicSync } from './atomic.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ty-atomic-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe.each([
  [
    'writeFileAtomic',
    (f: string, d: string | Uint8Array, o?: Parameters<typeof writeFileAtomic>[2]) => writeFileAtomic(f, d, o),
  ],
  [
    'writeFileAtomicSync',
    async (f: string, d: string | Uint8Array, o?: Parameters<typeof writeFileAtomic>[2]) =>
      writeFileAtomicSync(f, d, o),
  ],
])('%s', (_name, write) => {
  it('creates and replaces the whole file, mode 0600 unless told, and leaves no temp file', async () => {
    const f = join(dir, 'a.json');
    await write(f, '{"v":1}\n');
    expect(await readFile(f, 'utf8')).toBe('{"v":1}\n');
    expect((await stat(f)).mode & 0o777).toBe(0o600);
    await write(f, new Uint8Array([104, 105]), { mode: 0o640, durable: false });
    expect(await readFile(f, 'utf8')).toBe('hi');
    expect((await stat(f)).mode & 0o777).toBe(0o640);
    expect(await readdir(dir)).toEqual(['a.json']);
  });

  it('replaces a symlink at the path instead of writing through it', async () => {
    const target = join(dir, 'elsewhere');
    await writeFile(target, 'keep');
    const f = join(dir, 'link');
    await symlink(target, f);
    await write(f, 'new');
    expect((await lstat(f)).isFile()).toBe(true);
    expect(await readFile(f, 'utf8')).toBe('new');
    expect(await readFile(target, 'utf8')).toBe('keep');
  });

  it('puts its temp file in tmpDir when given, named <pid>.<hex>, and removes it', async () => {
    const tmpDir = join(dir, '.tmp');
    await mkdir(tmpDir);
    await write(join(dir, 'k'), 'x', { tmpDir });
    expect(await readFile(join(dir, 'k'), 'utf8')).toBe('x');
    expect(await readdir(tmpDir)).toEqual([]);
  });

  it('throws the file-system error and removes its temp file when the rename fails', async () => {
    await mkdir(join(dir, 'a-folder'));
    await expect(write(join(dir, 'a-folder'), 'x')).rejects.toMatchObject({ code: expect.stringMatching(/^E/) });
    expect(await readdir(dir)).toEqual(['a-folder']);
    await expect(write(join(dir, 'missing', 'f'), 'x')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('writeFileAtomic', () => {
  it("writes to one path in call order: the last call's bytes are left", async () => {
    const f = join(dir, 'f');
    await Promise.all(Array.from({ length: 20 }, (_, i) => writeFileAtomic(f, `v${i}`)));
    expect(await readFile(f, 'utf8')).toBe('v19');
    expect(await readdir(dir)).toEqual(['f']);
  });

  it('a failed write does not stop the next one to the same path', async () => {
    const f = join(dir, 'f');
    const bad = writeFileAtomic(f, 'x', { tmpDir: join(dir, 'no-such-folder') });
    const good = writeFileAtomic(f, 'y');
    await expect(bad).rejects.toMatchObject({ code: 'ENOENT' });
    await good;
    expect(await readFile(f, 'utf8')).toBe('y');
  });
});

describe('sweepTempFiles', () => {
  it('removes the temp files of dead writers and keeps those of live ones', async () => {
    await writeFile(join(dir, `${2 ** 22 + 999}.abcd`), 'half');
    await writeFile(join(dir, `${process.ppid}.beef`), 'in progress');
    await writeFile(join(dir, `${process.pid}.cafe`), 'mine');
    await sweepTempFiles(dir);
    expect((await readdir(dir)).sort()).toEqual([`${process.pid}.cafe`, `${process.ppid}.beef`].sort());
    await sweepTempFiles(join(dir, 'absent'));
  });
});
