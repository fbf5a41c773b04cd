// Tests of node/settings/watch.ts: a long-lived gate follows edits of the settings files, checking their stamps at most
// once a second and failing closed while an edit does not load; trusted side.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNodeGate, gateConfigOf, loadSettings } from './load.js';
import { SETTINGS_CHECK_MS, SettingsWatch } from './watch.js';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import { decide } from '../../core/policy/permissions.js';
import type { GateRequest } from '../../core/exec/runtime.js';

let root: string;
let home: string;
let cwd: string;
const REV = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy';
const userFile = () => join(home, 'config', 'settings.json');
const write = async (v: unknown) => {
  await mkdir(join(home, 'config'), { recursive: true });
  await writeFile(userFile(), typeof v === 'string' ? v : JSON.stringify(v));
};
const load = () => loadSettings({ home, cwd, homeDir: root });
const call = (): GateRequest => ({ principal: 'cli:user', kind: 'tool', toolName: 'weather', revision: REV });

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'tycli-watch-'));
  home = join(root, 'home');
  cwd = join(root, 'proj');
  await mkdir(cwd, { recursive: true });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('SettingsWatch', () => {
  it('answers from memory between checks, then follows an edit once SETTINGS_CHECK_MS has passed', async () => {
    await write({ permissions: { allow: ['tool(weather)'] } });
    let now = 1_000_000;
    let reloads = 0;
    const w = new SettingsWatch(
      await load(),
      () => (reloads++, load()),
      gateConfigOf,
      () => now,
    );
    const effect = async () =>
      decide((await w.config()).policy, { kind: 'tool', toolName: 'weather', revision: REV }).effect;
    expect(await effect()).toBe('allow');
    await write({ permissions: { deny: ['tool(weather)'] } });
    now += SETTINGS_CHECK_MS - 1;
    expect(await effect()).toBe('allow'); // not checked yet: the same configuration, no file read
    expect(reloads).toBe(0);
    now += 1;
    expect(await effect()).toBe('deny');
    expect(reloads).toBe(1);
    now += SETTINGS_CHECK_MS;
    expect(await effect()).toBe('deny');
    expect(reloads).toBe(1); // unchanged stamps: not read again
  });

  it('an edit that does not load fails every request with E_INVALID_SETTINGS until the file loads again', async () => {
    await write({ permissions: { allow: ['tool(weather)'] } });
    let now = 0;
    const w = new SettingsWatch(await load(), load, gateConfigOf, () => now);
    await write('{"permissions": {"allow": ["tool(weather)"'); // half written
    now += SETTINGS_CHECK_MS;
    await expect(Promise.resolve().then(() => w.config())).rejects.toMatchObject({ code: 'E_INVALID_SETTINGS' });
    await expect(Promise.resolve().then(() => w.config())).rejects.toMatchObject({ code: 'E_INVALID_SETTINGS' });
    await write({ permissions: { allow: ['tool(weather)'] } });
    now += SETTINGS_CHECK_MS;
    const cfg = await w.config();
    expect(decide(cfg.policy, { kind: 'tool', toolName: 'weather', revision: REV }).effect).toBe('allow');
  });

  it('a settings file that appears after the start counts as an edit', async () => {
    let now = 0;
    const w = new SettingsWatch(await load(), load, gateConfigOf, () => now);
    expect(decide((await w.config()).policy, { kind: 'tool', toolName: 'weather', revision: REV }).effect).not.toBe(
      'deny',
    );
    await write({ permissions: { deny: ['tool(weather)'] } });
    now += SETTINGS_CHECK_MS;
    expect(decide((await w.config()).policy, { kind: 'tool', toolName: 'weather', revision: REV }).effect).toBe('deny');
  });

  it('createNodeGate with reload: a long-lived gate refuses a call a person denied in the settings meanwhile', async () => {
    await write({ permissions: { allow: ['tool(weather)'] } });
    const gate = createNodeGate({
      store: new Store(new MemoryStoreBackend()),
      settings: await load(),
      cwd,
      reload: load,
    });
    await expect(gate.run(call(), async () => 1)).resolves.toEqual({ value: 1 });
    await write({ permissions: { deny: ['tool(weather)'] } });
    await new Promise((r) => setTimeout(r, SETTINGS_CHECK_MS + 100));
    await expect(gate.run(call(), async () => 2)).rejects.toMatchObject({ code: 'E_CAPABILITY_DENIED' });
  });
});
