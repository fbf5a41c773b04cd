// End-to-end tests of where settings live (XDG config folder, old location still read once noted) and tycli settings
// path|show|edit; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { oneLine, runProcess, type Ran } from './helpers.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'tycli.mjs');
let tmp: string;

/** tycli with HOME=`home` and no TYCLI_HOME: the default (per-user) folders. */
function tycli(home: string, args: string[], env: Record<string, string> = {}): Promise<Ran> {
  return runProcess(
    process.execPath,
    [BIN, ...args],
    { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...env },
    home,
  );
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'tycli-settings-'));
});
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('settings location', () => {
  it('user settings are in the XDG config folder; data in the data folder; --home keeps both under it', async () => {
    const home = join(tmp, 'u1');
    await mkdir(home);
    expect((await tycli(home, ['settings', 'path'])).stdout).toBe(
      `${join(home, '.config', 'tycli', 'settings.json')}\n`,
    );
    expect((await tycli(home, ['settings', 'path'], { XDG_CONFIG_HOME: join(home, 'cfg') })).stdout).toBe(
      `${join(home, 'cfg', 'tycli', 'settings.json')}\n`,
    );
    expect(oneLine(await tycli(home, ['--json', 'settings', 'path'], { TYCLI_HOME: join(home, 'th') }))).toMatchObject({
      ok: true,
      user: join(home, 'th', 'config', 'settings.json'),
    });
    // Settings in the config folder are used; the store goes to the data folder.
    await mkdir(join(home, '.config', 'tycli'), { recursive: true });
    await writeFile(
      join(home, '.config', 'tycli', 'settings.json'),
      JSON.stringify({ permissions: { deny: ['tool(unit-convert)'] } }),
    );
    expect((await tycli(home, ['tool', 'add', join(ROOT, 'tools/examples/multi-file/manifest.json')])).code).toBe(0);
    expect(existsSync(join(home, '.local', 'share', 'tycli', 'store'))).toBe(true);
    const denied = await tycli(home, ['run', 'unit-convert', '--args', '{"value":1,"from":"m","to":"ft"}']);
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/E_CAPABILITY_DENIED/);
  });

  it('the old location is still read while the new file does not exist, with a note shown once', async () => {
    const home = join(tmp, 'u2');
    const old = join(home, '.local', 'share', 'tycli', 'config', 'settings.json');
    await mkdir(join(old, '..'), { recursive: true });
    await writeFile(old, JSON.stringify({ permissions: { mode: 'strict' } }));
    const first = await tycli(home, ['settings', 'show']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain(`# user: ${old}`);
    expect(first.stdout).toMatch(/"mode": "strict"/);
    expect(first.stderr).toContain(
      `reads your settings from the old location ${old}; move the file to ${join(home, '.config', 'tycli', 'settings.json')}`,
    );
    const second = await tycli(home, ['settings', 'show']);
    expect(second.stdout).toMatch(/"mode": "strict"/);
    expect(second.stderr).not.toContain('old location');
    expect((await tycli(home, ['settings', 'path'])).stderr).toContain('the old location, still read');
  });

  it('settings edit opens $EDITOR on the user file (created if absent), then checks it', async () => {
    const home = join(tmp, 'u3');
    await mkdir(home);
    const editor = join(tmp, 'editor.sh');
    await writeFile(editor, '#!/bin/sh\nprintf \'{"sandbox": "required", "ask_wait": 5000}\\n\' > "$1"\n');
    await chmod(editor, 0o755);
    const ok = await tycli(home, ['settings', 'edit'], { EDITOR: editor });
    expect(ok.code, ok.stderr).toBe(0);
    const file = join(home, '.config', 'tycli', 'settings.json');
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ sandbox: 'required', ask_wait: 5000 });
    const shown = oneLine(await tycli(home, ['--json', 'settings', 'show']));
    expect(shown).toMatchObject({
      ok: true,
      effective: { sandbox: 'required', ask_wait: 5000, permissions: { mode: 'standard' } },
    });
    // every key shown is one a settings file takes: the effective values written back are accepted
    await writeFile(file, JSON.stringify((shown as { effective: Record<string, unknown> }).effective));
    const back = await tycli(home, ['--json', 'settings', 'show']);
    expect(back.code, back.stderr).toBe(0);
    const bad = join(tmp, 'bad-editor.sh');
    await writeFile(bad, '#!/bin/sh\nprintf \'{"sandbox": "sometimes"}\\n\' > "$1"\n');
    await chmod(bad, 0o755);
    const refused = await tycli(home, ['settings', 'edit'], { VISUAL: bad, EDITOR: editor });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^error\[E_INVALID_SETTINGS\]: .*settings\.json.*sandbox/);
  });
});

describe('limit errors name the manifest field', () => {
  it('E_OUTPUT_LIMIT names limits.outputBytes and its current value', async () => {
    const home = join(tmp, 'u4');
    await mkdir(home);
    const m = join(home, 'big.json');
    await writeFile(
      m,
      JSON.stringify({
        name: 'big',
        description: 'd',
        parameters: { type: 'object' },
        execution: {
          kind: 'sandboxed-code',
          runtime: 'javascript',
          source: 'export default async () => "x".repeat(5000);',
        },
        limits: { outputBytes: 1000 },
      }),
    );
    expect((await tycli(home, ['tool', 'add', m])).code).toBe(0);
    const r = await tycli(home, ['run', 'big']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^error\[E_OUTPUT_LIMIT\]: .*the limit is the manifest's limits\.outputBytes \(now 1000 bytes; at most \d+\)/,
    );
  });
});
