// Pause and decision records kept in memory by the gate (Store.getJsonFresh) still see other processes' changes at the
// next call; trusted side.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createNodeGate, loadSettings } from '../../node/settings/load.js';
import { FileStoreBackend } from '../../node/store/file-store.js';
import { tycliPaths } from '../../node/store/paths.js';
import { Store } from '../../core/store/contract.js';
import { StoreDecisions } from '../../core/policy/gate.js';
import type { GateRequest } from '../../core/exec/runtime.js';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const REV = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy';

let root: string;
let home: string;
let cwd: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'tycli-gate-fresh-'));
  home = join(root, 'home');
  cwd = join(root, 'proj');
  await mkdir(join(cwd, '.git'), { recursive: true });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Run node with `args` as a process of its own; resolves with its exit code and output. */
function run(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((done, fail) => {
    const p = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (b) => (out += String(b)));
    p.stderr.on('data', (b) => (out += String(b)));
    p.once('error', fail);
    p.once('exit', (code) => done({ code, out }));
  });
}

const tycli = (...argv: string[]) => run([join(ROOT, 'test/mcp/cli-entry.ts'), '--home', home, ...argv]);

/** A store whose reads of namespace `ns` are counted (to tell a cached record from a read one). */
function countingStore(ns: string): { store: Store; reads: () => number } {
  const backend = new FileStoreBackend(tycliPaths(home).store);
  const get = backend.get.bind(backend);
  let n = 0;
  backend.get = (a: string, k: string) => {
    if (a === ns) n++;
    return get(a, k);
  };
  return { store: new Store(backend), reads: () => n };
}

/** Wait until the file at `path` was last changed more than 2.1 s ago (from then on its stamp is trusted). */
async function settled(path: string): Promise<void> {
  const st = await stat(path);
  const wait = Math.max(st.mtimeMs, st.ctimeMs) + 2100 - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}

const call = (): GateRequest => ({ principal: 'cli:user', kind: 'tool', toolName: 'weather', revision: REV });

describe('gate records kept in memory, checked by their file stamp', () => {
  it('a permanent decision revoked by another process applies to the very next call', async () => {
    const { store, reads } = countingStore('decisions');
    await new StoreDecisions(store).add({
      kind: 'tool',
      revision: REV,
      toolName: 'weather',
      allow: true,
      scope: 'permanent',
      at: Date.now(),
    });
    const settings = await loadSettings({ home, cwd, homeDir: root, flags: { mode: 'strict' } });
    const gate = createNodeGate({ store, settings, cwd });
    await expect(gate.run(call(), async () => 1)).resolves.toEqual({ value: 1 });
    await settled(join(tycliPaths(home).store, 'decisions', REV));
    await expect(gate.run(call(), async () => 2)).resolves.toEqual({ value: 2 });
    const before = reads();
    await expect(gate.run(call(), async () => 3)).resolves.toEqual({ value: 3 });
    expect(reads()).toBe(before); // the record came from memory
    const r = await tycli('permissions', 'revoke', `weather@${REV}`, '--json');
    expect(r.code, r.out).toBe(0);
    await expect(gate.run(call(), async () => 4)).rejects.toMatchObject({ code: 'E_CAPABILITY_DENIED' });
  }, 60_000);

  it('a pause set by another process applies to the very next call, and a resume by another one lifts it', async () => {
    const { store, reads } = countingStore('pause');
    const settings = await loadSettings({ home, cwd, homeDir: root, flags: { allow: ['tool(weather)'] } });
    const gate = createNodeGate({ store, settings, cwd });
    await expect(gate.run(call(), async () => 1)).resolves.toEqual({ value: 1 });
    // another process counts refusals until the tool is paused
    const storeDir = tycliPaths(home).store;
    const child = `import { Store } from './core/store/contract.ts'; import { FileStoreBackend } from './node/store/file-store.ts'; import { PauseTracker } from './core/policy/pause.ts';
      const p = new PauseTracker(new Store(new FileStoreBackend(${JSON.stringify(storeDir)})), { maxRefusals: 2, windowMs: 60000 });
      await p.recordRefusal('weather'); console.log(await p.recordRefusal('weather') ? 'paused' : 'not paused');`;
    const set = await run(['--input-type=module', '-e', child]);
    expect(set.out.trim()).toBe('paused');
    await expect(gate.run(call(), async () => 2)).rejects.toMatchObject({ code: 'E_PAUSED' });
    await settled(join(storeDir, 'pause', 'weather'));
    await expect(gate.run(call(), async () => 3)).rejects.toMatchObject({ code: 'E_PAUSED' });
    const before = reads();
    await expect(gate.run(call(), async () => 4)).rejects.toMatchObject({ code: 'E_PAUSED' });
    expect(reads()).toBe(before); // the pause came from memory
    const r = await tycli('resume', 'weather', '--json');
    expect(JSON.parse(r.out)).toMatchObject({ ok: true, resumed: true });
    await expect(gate.run(call(), async () => 5)).resolves.toEqual({ value: 5 });
  }, 60_000);
});
