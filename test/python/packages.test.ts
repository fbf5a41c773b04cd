// Python wheels by sha-256 (`python.packages`) on the command line: a wheel the test builds, next to the manifest,
// through tycli; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../node/sandbox/runtime.js';
import { oneLine, runProcess } from '../e2e/helpers.js';
import { tinyWheel } from '../helpers/wheel.js';

const BIN = join(packageRoot(), 'bin', 'tycli.mjs');
let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'tysandbox-wheels-'));
  chmodSync(tmp, 0o755); // a root CLI's sandbox runs as an unprivileged uid and must read the wheels
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const tycli = (args: string[]) =>
  runProcess(process.execPath, [BIN, ...args], { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp }, tmp, 180_000);
const SOURCE =
  'import tinytext\ndef main(args, ctx):\n    return {"out": tinytext.shout(args["s"]), "version": tinytext.VERSION}';

function project(
  name: string,
  wheel: { file: string; bytes: Buffer },
  declared: { file: string; sha256: string },
): string {
  const dir = join(tmp, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { mode: 0o755 });
  writeFileSync(join(dir, wheel.file), wheel.bytes, { mode: 0o644 });
  const m = join(dir, 'manifest.json');
  writeFileSync(
    m,
    JSON.stringify({
      name,
      description: 'uses a wheel',
      parameters: { type: 'object' },
      execution: { kind: 'sandboxed-code', runtime: 'python', source: SOURCE },
      python: { packages: [declared] },
    }),
  );
  return m;
}

describe('python.packages: pure-Python wheels by sha-256', () => {
  it('a wheel next to the manifest is checked at tool add and imported in the sandbox (bubblewrap required)', async () => {
    const w = tinyWheel();
    const m = project('pywheel', w, { file: w.file, sha256: w.sha256 });
    const home = join(tmp, 'home-ok');
    const add = await tycli(['--home', home, '--json', 'tool', 'add', m]);
    expect(oneLine(add)).toMatchObject({ ok: true, name: 'pywheel' });
    const r = await tycli([
      '--home',
      home,
      '--json',
      '--sandbox',
      'required',
      'run',
      'pywheel',
      '--args',
      '{"s":"hi"}',
    ]);
    expect(oneLine(r)).toMatchObject({ ok: true, result: { out: 'HI!', version: '1.0' } });
  }, 240_000);

  it("a wheel the installer refuses in the sandbox (bad CRC) fails in one line naming the wheel, not the installer's traceback", async () => {
    const w = tinyWheel();
    const bytes = Buffer.from(w.bytes);
    // the first entry's data (stored, uncompressed) starts after its 30-byte local header and its name
    const at = 30 + bytes.readUInt16LE(26);
    bytes.writeUInt8(bytes.readUInt8(at) ^ 0x20, at);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const m = project('pycrc', { file: w.file, bytes }, { file: w.file, sha256 });
    const home = join(tmp, 'home-crc');
    expect(oneLine(await tycli(['--home', home, '--json', 'tool', 'add', m]))).toMatchObject({ ok: true });
    const r = await tycli(['--home', home, '--json', '--sandbox', 'required', 'run', 'pycrc', '--args', '{"s":"hi"}']);
    const err = (oneLine(r) as { error: { code: string; message: string } }).error;
    expect(err).toEqual({
      code: 'E_INVALID_MANIFEST',
      message: `the wheel ${w.file} could not be installed: zipfile.BadZipFile: Bad CRC-32 for file 'tinytext/__init__.py'`,
    });
  }, 240_000);

  it('a wheel that does not match its sha256 is refused at tool add with E_INTEGRITY, nothing installed; one changed afterwards is refused at run', async () => {
    const w = tinyWheel();
    const m = project('pybadwheel', w, { file: w.file, sha256: '0'.repeat(64) });
    const home = join(tmp, 'home-bad');
    const add = await tycli(['--home', home, '--json', 'tool', 'add', m]);
    expect(add.code).not.toBe(0);
    expect(oneLine(add)).toMatchObject({
      ok: false,
      error: { code: 'E_INTEGRITY', message: expect.stringContaining(w.file) },
    });
    expect((await tycli(['--home', home, '--json', 'tool', 'list'])).stdout).not.toContain('pybadwheel');
    // Added intact, then the file changes: the run refuses before the wheel is used.
    const m2 = project('pychanged', w, { file: w.file, sha256: w.sha256 });
    const home2 = join(tmp, 'home-changed');
    expect(oneLine(await tycli(['--home', home2, '--json', 'tool', 'add', m2]))).toMatchObject({ ok: true });
    writeFileSync(join(tmp, 'pychanged', w.file), tinyWheel({ 'tinytext/evil.py': 'x = 1\n' }).bytes);
    const r = await tycli([
      '--home',
      home2,
      '--json',
      '--sandbox',
      'required',
      'run',
      'pychanged',
      '--args',
      '{"s":"hi"}',
    ]);
    expect(oneLine(r)).toMatchObject({ ok: false, error: { code: 'E_INTEGRITY' } });
  }, 240_000);

  it('only pure-Python wheels: a platform wheel name, and native code or an escaping entry inside a none-any wheel, are refused at tool add, nothing stored', async () => {
    const w = tinyWheel();
    const plat = { file: 'tinytext-1.0-cp314-cp314-linux_x86_64.whl', bytes: w.bytes };
    const m = project('pyplatform', plat, { file: plat.file, sha256: w.sha256 });
    const add = await tycli(['--home', join(tmp, 'home-plat'), '--json', 'tool', 'add', m]);
    expect(oneLine(add)).toMatchObject({
      ok: false,
      error: { code: 'E_INVALID_MANIFEST', message: expect.stringContaining('only pure-Python wheels are supported') },
    });
    const so = 'tinytext/_speed.cpython-314-wasm32-emscripten.so';
    const native = tinyWheel({ [so]: new Uint8Array([0, 97, 115, 109]) });
    const m2 = project('pynative', native, { file: native.file, sha256: native.sha256 });
    const home = join(tmp, 'home-native');
    const refused = await tycli(['--home', home, '--json', 'tool', 'add', m2]);
    expect(refused.code).toBe(2);
    expect(oneLine(refused)).toMatchObject({
      ok: false,
      error: {
        code: 'E_INVALID_MANIFEST',
        message: `the wheel ${native.file} holds native code ("${so}"); only pure-Python wheels are supported`,
      },
    });
    expect((await tycli(['--home', home, '--json', 'tool', 'list'])).stdout).not.toContain('pynative');
    const escaping = tinyWheel({ '../outside.py': 'x = 1\n' });
    const m3 = project('pyescape', escaping, { file: escaping.file, sha256: escaping.sha256 });
    expect(oneLine(await tycli(['--home', home, '--json', 'tool', 'add', m3]))).toMatchObject({
      ok: false,
      error: { code: 'E_INVALID_MANIFEST', message: expect.stringContaining('leaves the install folder') },
    });
  }, 240_000);
});
