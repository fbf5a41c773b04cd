// Tests for settings loading: scopes, project discovery, merge with flags, and clear errors; trusted side.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findProjectRoot, gateConfigOf, loadSettings, readSettingsFile } from './load.js';
import { decide } from '../../core/policy/permissions.js';
import { rejection } from '../../test/helpers/errors.js';

let root: string;
let home: string;
let userHome: string;
let project: string;

async function write(path: string, value: unknown): Promise<void> {
  await mkdir(join(path, '..'), { recursive: true });
  await writeFile(path, typeof value === 'string' ? value : JSON.stringify(value));
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'tycli-settings-'));
  home = join(root, 'tyhome');
  userHome = join(root, 'user');
  project = join(userHome, 'src', 'proj');
  await mkdir(join(project, 'a', 'b'), { recursive: true });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const REV = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy';
const fetchReq = (target: string) => ({
  kind: 'fetch' as const,
  toolName: 't',
  revision: REV,
  target,
  access: 'read' as const,
});

describe('loadSettings', () => {
  it('with no files: standard mode, default ask_wait and pause', async () => {
    const s = await loadSettings({ home, cwd: project, homeDir: userHome });
    expect(s.policy.mode).toBe('standard');
    expect(s.askWaitMs).toBe(120_000);
    expect(s.pause).toEqual({ maxRefusals: 10, windowMs: 60_000 });
    expect(s.files).toEqual([{ scope: 'user', path: join(home, 'config', 'settings.json'), present: false }]);
  });

  it('merges user, project, local and flags; deny anywhere wins; most specific mode wins', async () => {
    await write(join(home, 'config', 'settings.json'), {
      permissions: { mode: 'strict', allow: ['fetch(read:https://*.example.com)'] },
      ask_wait: 5000,
    });
    await write(join(project, '.tycli', 'settings.json'), {
      permissions: { deny: ['fetch(*:https://bad.example.com)'] },
      hooks: { preToolUse: [{ command: 'true' }] },
    });
    await write(join(project, '.tycli', 'settings.local.json'), {
      permissions: { mode: 'unrestricted' },
      ask_wait: 7000,
      pause: { maxRefusals: 3 },
    });
    await mkdir(join(project, '.git'));
    const s = await loadSettings({
      home,
      cwd: join(project, 'a', 'b'),
      homeDir: userHome,
      flags: { allow: ['fetch(*:*)'] },
    });
    expect(s.projectRoot).toBe(project);
    expect(s.policy.mode).toBe('unrestricted');
    expect(s.policy.modeScope).toBe('local');
    expect(s.askWaitMs).toBe(7000);
    expect(s.pause).toEqual({ maxRefusals: 3, windowMs: 60_000 });
    expect(decide(s.policy, fetchReq('https://bad.example.com')).trace).toMatchObject({
      list: 'deny',
      scope: 'project',
      source: join(project, '.tycli', 'settings.json'),
    });
    expect(decide(s.policy, fetchReq('https://ok.example.com')).trace).toMatchObject({ list: 'allow', scope: 'flags' });
    expect(gateConfigOf(s).hooks?.preToolUse).toEqual([
      {
        event: 'preToolUse',
        matcher: '*',
        command: 'true',
        timeoutMs: 60_000,
        scope: 'project',
        source: join(project, '.tycli', 'settings.json'),
        index: 0,
      },
    ]);
    const withMode = await loadSettings({ home, cwd: project, homeDir: userHome, flags: { mode: 'strict' } });
    expect(withMode.policy.mode).toBe('strict');
  });

  it('a bad --allow or --mode is E_USAGE', async () => {
    expect(
      (
        await rejection(
          loadSettings({ home, cwd: project, homeDir: userHome, flags: { allow: ['fetch(https://x.example.com)'] } }),
        )
      ).code,
    ).toBe('E_USAGE');
    expect(
      (await rejection(loadSettings({ home, cwd: project, homeDir: userHome, flags: { mode: 'yolo' } }))).code,
    ).toBe('E_USAGE');
  });
});

describe('findProjectRoot', () => {
  it('stops at the git root and at the home folder', async () => {
    await mkdir(join(userHome, '.tycli'), { recursive: true });
    // No .tycli between cwd and home: the home's .tycli is the last folder checked.
    expect(await findProjectRoot(join(project, 'a'), userHome)).toBe(userHome);
    await mkdir(join(project, '.git'));
    expect(await findProjectRoot(join(project, 'a'), userHome)).toBeUndefined();
    await mkdir(join(project, '.tycli'));
    expect(await findProjectRoot(join(project, 'a', 'b'), userHome)).toBe(project);
  });

  it('does not walk above the home folder', async () => {
    await mkdir(join(root, '.tycli'));
    expect(await findProjectRoot(project, userHome)).toBeUndefined();
  });
});

describe('invalid settings files are clear errors naming file and field', () => {
  const cases: [string, unknown, string][] = [
    ['bad JSON', '{"permissions": {', 'not valid JSON'],
    ['not an object', '[1,2]', 'one JSON object'],
    ['unknown top-level key', { permisions: {} }, 'permisions: unknown key'],
    ['unknown nested key', { permissions: { allows: [] } }, 'permissions.allows: unknown key'],
    ['bad rule', { permissions: { allow: ['tool(ok)', 'fetch(read:http://x.example.com)'] } }, 'permissions.allow[1]'],
    ['bad mode', { permissions: { mode: 'yolo' } }, 'permissions.mode'],
    ['ask_wait too long', { ask_wait: 86_400_001 }, 'ask_wait'],
    ['ask_wait not a number', { ask_wait: '2m' }, 'ask_wait'],
    ['bad sandbox', { sandbox: 'maybe' }, 'sandbox'],
    ['bad runtime', { runtime: 'bun' }, 'runtime'],
    ['hook without command', { hooks: { preToolUse: [{ matcher: '*' }] } }, 'hooks.preToolUse[0].command'],
    [
      'bad hook matcher',
      { hooks: { postToolUse: [{ matcher: 'a b', command: 'true' }] } },
      'hooks.postToolUse[0].matcher',
    ],
    [
      'hook timeout too long',
      { hooks: { permissionRequest: [{ command: 'true', timeoutMs: 10_000_000 }] } },
      'hooks.permissionRequest[0].timeoutMs',
    ],
    ['unknown hook event', { hooks: { onStart: [] } }, 'hooks.onStart: unknown key'],
  ];
  it.each(cases)('%s', async (_name, content, field) => {
    const file = join(project, '.tycli', 'settings.json');
    await write(file, content);
    const e = await rejection(loadSettings({ home, cwd: project, homeDir: userHome }));
    expect(e.code).toBe('E_INVALID_SETTINGS');
    expect(e.message).toContain(file);
    expect(e.message).toContain(field);
  });

  it('the user file and the local file are checked too, never skipped', async () => {
    await write(join(home, 'config', 'settings.json'), { nope: 1 });
    expect((await rejection(loadSettings({ home, cwd: project, homeDir: userHome }))).message).toContain(
      join(home, 'config', 'settings.json'),
    );
    await rm(join(home, 'config', 'settings.json'));
    await write(join(project, '.tycli', 'settings.local.json'), '');
    expect((await rejection(loadSettings({ home, cwd: project, homeDir: userHome }))).message).toContain(
      'settings.local.json',
    );
  });

  it('a settings path that is a folder is an error, a missing one is not', async () => {
    await mkdir(join(project, '.tycli', 'settings.json'), { recursive: true });
    expect((await rejection(readSettingsFile(join(project, '.tycli', 'settings.json')))).code).toBe(
      'E_INVALID_SETTINGS',
    );
    expect(await readSettingsFile(join(project, 'absent.json'))).toBeUndefined();
  });
});
