// tycli audit / resume / permissions against a temp home, with a real file store and gate; trusted side.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../node/cli/main.js';
import { createNodeGate, loadSettings } from '../../node/settings/load.js';
import { FileStoreBackend } from '../../node/store/file-store.js';
import { tycliPaths } from '../../node/store/paths.js';
import { Store } from '../../core/store/contract.js';
import { PauseTracker } from '../../core/policy/pause.js';
import { StoreDecisions } from '../../core/policy/gate.js';
import type { Asker } from '../../core/ask/router.js';
import type { GateRequest } from '../../core/exec/runtime.js';

const REV = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy';
const CANARY_ARG = 'arg-canary-0c5e1d';
const CANARY_SECRET = 'secret-canary-8d24aa';

let root: string;
let home: string;
let cwd: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'tycli-gate-cli-'));
  home = join(root, 'home');
  cwd = join(root, 'proj');
  await mkdir(join(cwd, '.git'), { recursive: true });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function tycli(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const chunks = { out: '', err: '' };
  stdout.on('data', (b) => (chunks.out += String(b)));
  stderr.on('data', (b) => (chunks.err += String(b)));
  const code = await main(['--home', home, ...argv], {
    io: { stdout, stderr, stdin: new PassThrough(), interactive: false },
    env: {},
    cwd,
  });
  return { code, stdout: chunks.out, stderr: chunks.err };
}

function fileStore(): Store {
  return new Store(new FileStoreBackend(tycliPaths(home).store));
}

async function cliGate(flags: { allow?: string[]; deny?: string[]; mode?: string } = {}, asker?: Asker) {
  const settings = await loadSettings({ home, cwd, homeDir: root, flags });
  const o: Parameters<typeof createNodeGate>[0] = {
    store: fileStore(),
    settings,
    cwd,
    withheld: () => [CANARY_SECRET],
  };
  if (asker) o.asker = asker;
  return createNodeGate(o);
}

const call = (over: Partial<GateRequest> = {}): GateRequest => ({
  principal: 'cli:user',
  kind: 'tool',
  toolName: 'weather',
  revision: REV,
  hookPayload: { q: CANARY_ARG, k: CANARY_SECRET },
  ...over,
});

describe('tycli audit', () => {
  it('lists allowed and denied calls; --json, --since, --denied and --tool filter; no canaries anywhere', async () => {
    const gate = await cliGate({ deny: ['fetch(*:https://evil.example.com)'] });
    await gate.run(call(), async () => ({ echoed: CANARY_ARG }));
    await expect(
      gate.authorize(call({ kind: 'fetch', target: 'https://evil.example.com', access: 'read', requested: true })),
    ).rejects.toMatchObject({ code: 'E_CAPABILITY_DENIED' });
    await expect(
      gate.run(call({ toolName: 'other' }), async () => {
        throw new Error(`failed with ${CANARY_SECRET}`);
      }),
    ).rejects.toThrow();

    const all = await tycli('audit', '--json');
    expect(all.code).toBe(0);
    const envelope = JSON.parse(all.stdout.trim());
    expect(all.stdout.trim().split('\n')).toHaveLength(1);
    expect(envelope).toMatchObject({ ok: true, corrupt: 0 });
    const recs = envelope.records;
    expect(recs).toHaveLength(3);
    expect(recs[0]).toMatchObject({ decision: 'allow', outcome: 'ok', tool: 'weather', rule: 'mode standard' });
    expect(recs[1]).toMatchObject({
      decision: 'deny',
      kind: 'fetch',
      rule: 'fetch(*:https://evil.example.com)',
      scope: 'flags',
    });
    expect(recs[2]).toMatchObject({ decision: 'allow', outcome: 'error', tool: 'other' });

    const denied = await tycli('audit', '--denied', '--json');
    expect(JSON.parse(denied.stdout).records).toHaveLength(1);
    const other = await tycli('audit', '--tool', 'other');
    expect(other.stdout).toContain('ALLOW cli:user other@');
    expect(other.stdout.trim().split('\n')).toHaveLength(1);
    const future = await tycli('audit', '--since', '2999-01-01T00:00:00Z', '--json');
    expect(JSON.parse(future.stdout)).toEqual({ ok: true, records: [], corrupt: 0 });
    const recent = await tycli('audit', '--since', '1h', '--json');
    expect(JSON.parse(recent.stdout).records).toHaveLength(3);

    // Neither the argument canary nor the secret canary is anywhere under the home folder.
    const files: string[] = [];
    const walk = async (d: string): Promise<void> => {
      for (const e of await readdir(d, { withFileTypes: true })) {
        if (e.isDirectory()) await walk(join(d, e.name));
        else files.push(join(d, e.name));
      }
    };
    await walk(home);
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const text = await readFile(f, 'utf8');
      expect(text).not.toContain(CANARY_ARG);
      expect(text).not.toContain(CANARY_SECRET);
    }
    expect(all.stdout + other.stdout).not.toContain(CANARY_ARG);
  });

  it('a bad --since is a usage error', async () => {
    const r = await tycli('audit', '--since', 'yesterday');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('E_USAGE');
  });
});

describe('tycli resume', () => {
  it('lists paused tools and resumes one; the pause held across processes (file store)', async () => {
    const settingsFile = tycliPaths(home).settingsFile;
    await mkdir(join(settingsFile, '..'), { recursive: true });
    await writeFile(
      settingsFile,
      JSON.stringify({ pause: { maxRefusals: 2, windowMs: 60_000 }, permissions: { deny: ['tool(weather)'] } }),
    );
    const gate = await cliGate();
    await expect(gate.run(call(), async () => 1)).rejects.toMatchObject({ code: 'E_CAPABILITY_DENIED' });
    await expect(gate.run(call(), async () => 1)).rejects.toMatchObject({
      message: expect.stringContaining('now paused'),
    });
    await expect(gate.run(call(), async () => 1)).rejects.toMatchObject({ code: 'E_PAUSED' });

    const listed = await tycli('resume', '--json');
    expect(JSON.parse(listed.stdout)).toMatchObject({ ok: true, paused: [{ tool: 'weather', refusals: 2 }] });
    const r = await tycli('resume', 'weather', '--json');
    expect(JSON.parse(r.stdout)).toEqual({ ok: true, tool: 'weather', resumed: true });
    expect(await new PauseTracker(fileStore()).paused('weather')).toBeUndefined();
    expect(JSON.parse((await tycli('resume', 'weather', '--json')).stdout).resumed).toBe(false);
    expect((await tycli('resume', 'bad name!')).code).toBe(2);
  });
});

describe('tycli permissions', () => {
  it('lists and revokes permanent decisions per revision', async () => {
    const asker: Asker = { ask: async () => ({ allow: true, scope: 'permanent', channel: 'terminal' }) };
    const gate = await cliGate({ mode: 'strict' }, asker);
    await gate.authorize(call({ kind: 'fetch', target: 'https://api.example.com', access: 'read', requested: true }));
    await gate.run(call(), async () => 1);
    const list = await tycli('permissions', 'list', '--json');
    const rows = (JSON.parse(list.stdout) as { ok: boolean; decisions: { rule: string }[] }).decisions;
    expect(rows.map((r) => r.rule).sort()).toEqual(['fetch(read:https://api.example.com)', `tool(weather@${REV})`]);
    const rv = await tycli('permissions', 'revoke', 'weather', 'fetch(read:https://api.example.com)', '--json');
    expect(JSON.parse(rv.stdout).revoked).toHaveLength(1);
    expect(await new StoreDecisions(fileStore()).list(REV)).toHaveLength(1);
    await tycli('permissions', 'revoke', `weather@${REV}`);
    expect(await new StoreDecisions(fileStore()).list()).toHaveLength(0);
  });

  it('rules shows the effective mode and where each rule comes from; a bad file is exit 2 naming it', async () => {
    const projectFile = join(cwd, '.tycli', 'settings.json');
    await mkdir(join(cwd, '.tycli'), { recursive: true });
    await writeFile(projectFile, JSON.stringify({ permissions: { mode: 'strict', alwaysAsk: ['mcp(files/*)'] } }));
    const r = await tycli('permissions', 'rules', '--deny', 'tool(rm_*)', '--json');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({ mode: 'strict', modeScope: 'project' });
    expect(j.rules).toEqual([
      { list: 'deny', rule: 'tool(rm_*)', scope: 'flags', source: 'command line' },
      { list: 'alwaysAsk', rule: 'mcp(files/*)', scope: 'project', source: projectFile },
    ]);
    await writeFile(projectFile, JSON.stringify({ permissions: { alow: [] } }));
    const bad = await tycli('permissions', 'rules');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('E_INVALID_SETTINGS');
    expect(bad.stderr).toContain(projectFile);
    expect(bad.stderr).toContain('permissions.alow');
  });
});
