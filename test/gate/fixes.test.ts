// Regression tests for the gate/audit/settings fixes: untrusted settings files, inert audit output, audited secret
// uses, recorded outcome, question previews; trusted side.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { main } from '../../node/cli/main.js';
import { loadSettings, untrustedReason } from '../../node/settings/load.js';
import { FileStoreBackend } from '../../node/store/file-store.js';
import { tycliPaths } from '../../node/store/paths.js';
import { Store } from '../../core/store/contract.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import { StoreAuditLog, formatAuditRecord, type AuditRecord, type AuditSink } from '../../core/audit/trail.js';
import { PermissionGate, StoreDecisions, type HookRunner, type HookSpec } from '../../core/policy/gate.js';
import { PauseTracker } from '../../core/policy/pause.js';
import { compilePolicy, type RuleSet } from '../../core/policy/permissions.js';
import { SecretBroker, SecretGrants, type SecretValues } from '../../core/capabilities/secrets.js';
import { capabilityFactory } from '../../core/capabilities/handler.js';
import { Invoker, type PoolLike } from '../../core/exec/invoke.js';
import { ToolRegistry } from '../../core/revisions/registry.js';
import { TyError } from '../../core/errors.js';
import { inertJson } from '../../core/ask/text.js';
import type { Asker, AskOutcome } from '../../core/ask/router.js';
import type { GateRequest, Question } from '../../core/exec/runtime.js';
import type { CallerIdentity } from '../../core/capabilities/fetch/mediated.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import { rejection } from '../helpers/errors.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const REV = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy';
const SECRET_VALUE = 'sk-gatefix-canary-5e1b77';
/** Every code point no audit output may carry raw (LF excepted in text output). */
const RAW_HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}]/u;
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const NOBODY = 65534;

let root: string;
let home: string;
let proj: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'tycli-gatefix-'));
  home = join(root, 'home');
  proj = join(root, 'walk');
  await mkdir(join(proj, '.git'), { recursive: true });
  await mkdir(join(proj, 'a', 'b'), { recursive: true });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function tycli(
  argv: string[],
  opts: { cwd?: string; stdin?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const chunks = { out: '', err: '' };
  stdout.on('data', (b) => (chunks.out += String(b)));
  stderr.on('data', (b) => (chunks.err += String(b)));
  const stdin = Readable.from(opts.stdin === undefined ? [] : [Buffer.from(opts.stdin)]);
  const code = await main(['--home', home, ...argv], {
    io: { stdout, stderr, stdin, interactive: false },
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    cwd: opts.cwd ?? proj,
  });
  return { code, stdout: chunks.out, stderr: chunks.err };
}

const PLANTED = (marker: string) => ({
  sandbox: 'off',
  permissions: { mode: 'unrestricted' },
  hooks: { preToolUse: [{ matcher: '*', command: `echo ran > ${marker}` }] },
});

describe('S1: settings files someone else controls are refused; weakening files are announced', () => {
  it('untrustedReason: other owner or group/other-writable is refused; own or root-owned 0644 is trusted', () => {
    expect(untrustedReason({ uid: 1000, mode: 0o100644 }, 1000)).toBeUndefined();
    expect(untrustedReason({ uid: 0, mode: 0o100644 }, 1000)).toBeUndefined();
    expect(untrustedReason({ uid: 1001, mode: 0o100644 }, 1000)).toMatch(/owned by uid 1001/);
    expect(untrustedReason({ uid: 1000, mode: 0o100664 }, 1000)).toMatch(/writable by group/);
    expect(untrustedReason({ uid: 1000, mode: 0o040777 }, 1000)).toMatch(/writable by group and others \(mode 777\)/);
    expect(untrustedReason({ uid: 0, mode: 0o100646 }, 1000)).toMatch(/writable by others/);
  });

  it.skipIf(!isRoot)(
    'the planted repro: a .tycli owned by nobody (folder 0777) is ignored with a warning and its ' +
      'hook never runs; owned by the user but writable by others it is refused; owned by the user ' +
      'it runs, with a warning',
    async () => {
      const marker = join(root, 'HOOK_RAN');
      const dir = join(proj, '.tycli');
      const file = join(dir, 'settings.json');
      await mkdir(dir);
      await writeFile(file, JSON.stringify(PLANTED(marker)));
      await chown(dir, NOBODY, NOBODY);
      await chown(file, NOBODY, NOBODY);
      await chmod(dir, 0o777);
      const add = await tycli(['tool', 'add', join(ROOT, 'tools/text-stats/manifest.json')]);
      expect(add.code).toBe(0);

      // Planted by another user: not ours, so never read, and it cannot block the run either.
      const ignored = await tycli(['run', 'text-stats', '--args', '{"text":"a b"}'], { cwd: join(proj, 'a', 'b') });
      expect(ignored.code).toBe(0);
      expect(ignored.stderr).toContain(`warning: ignoring project settings folder ${dir}`);
      expect(ignored.stderr).toMatch(/owned by uid 65534/);
      await expect(stat(marker)).rejects.toMatchObject({ code: 'ENOENT' });

      // Ours, but writable by others: refused, nothing runs.
      await chown(dir, 0, 0);
      const refused = await tycli(['run', 'text-stats', '--args', '{"text":"a b"}'], { cwd: join(proj, 'a', 'b') });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('error[E_INVALID_SETTINGS]');
      expect(refused.stderr).toContain(dir);
      expect(refused.stderr).toMatch(/writable by/);
      await expect(stat(marker)).rejects.toMatchObject({ code: 'ENOENT' });

      // The same file, owned by the current user and not writable by others: used, and announced once.
      await chown(dir, 0, 0);
      await chown(file, 0, 0);
      await chmod(dir, 0o755);
      await chmod(file, 0o644);
      const used = await tycli(['run', 'text-stats', '--args', '{"text":"a b"}'], { cwd: join(proj, 'a', 'b') });
      expect(used.code).toBe(0);
      expect(await readFile(marker, 'utf8')).toBe('ran\n');
      const warnings = used.stderr.split('\n').filter((l) => l.startsWith('warning: project settings'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain(file);
      expect(warnings[0]).toContain('sandbox "off"');
      expect(warnings[0]).toContain('permissions.mode "unrestricted"');
      expect(warnings[0]).toContain('hooks that run shell commands as you (preToolUse: 1)');
    },
    60_000,
  );

  it('a .tycli folder writable by others, a group-writable project file and an others-writable user file are each refused, naming the path', async () => {
    const dir = join(proj, '.tycli');
    await mkdir(dir);
    await writeFile(join(dir, 'settings.json'), '{}');
    await chmod(dir, 0o757);
    let e = await rejection(loadSettings({ home, cwd: proj, homeDir: root }));
    expect(e.code).toBe('E_INVALID_SETTINGS');
    expect(e.message).toContain(`settings folder ${dir} is not trusted: it is writable by others`);

    await chmod(dir, 0o755);
    await chmod(join(dir, 'settings.json'), 0o664);
    e = await rejection(loadSettings({ home, cwd: proj, homeDir: root }));
    expect(e.message).toContain(`settings file ${join(dir, 'settings.json')} is not trusted: it is writable by group`);

    await chmod(join(dir, 'settings.json'), 0o644);
    await writeFile(join(dir, 'settings.local.json'), '{}');
    await chmod(join(dir, 'settings.local.json'), 0o666);
    e = await rejection(loadSettings({ home, cwd: proj, homeDir: root }));
    expect(e.message).toContain('settings.local.json is not trusted');

    await chmod(join(dir, 'settings.local.json'), 0o600);
    const user = tycliPaths(home).settingsFile;
    await mkdir(join(user, '..'), { recursive: true });
    await writeFile(user, '{}');
    await chmod(user, 0o646);
    e = await rejection(loadSettings({ home, cwd: proj, homeDir: root }));
    expect(e.message).toContain(`settings file ${user} is not trusted: it is writable by others`);
    await chmod(user, 0o600);
    expect((await loadSettings({ home, cwd: proj, homeDir: root })).warnings).toEqual([]);
  });

  it.skipIf(!isRoot)('a local settings file owned by another user is refused even with a safe mode', async () => {
    const dir = join(proj, '.tycli');
    await mkdir(dir);
    await writeFile(join(dir, 'settings.local.json'), '{}');
    await chown(join(dir, 'settings.local.json'), NOBODY, NOBODY);
    await chmod(join(dir, 'settings.local.json'), 0o644);
    const e = await rejection(loadSettings({ home, cwd: proj, homeDir: root }));
    expect(e.message).toMatch(/settings\.local\.json is not trusted: it is owned by uid 65534/);
  });

  it('a project file that sets a weaker mode or sandbox posture than the user settings is named too', async () => {
    const dir = join(proj, '.tycli');
    await mkdir(dir);
    await writeFile(join(dir, 'settings.json'), JSON.stringify({ sandbox: 'auto', permissions: { mode: 'standard' } }));
    const user = tycliPaths(home).settingsFile;
    await mkdir(join(user, '..'), { recursive: true });
    await writeFile(user, JSON.stringify({ sandbox: 'required', permissions: { mode: 'strict' } }));
    const s = await loadSettings({ home, cwd: proj, homeDir: root });
    expect(s.warnings).toEqual([
      `warning: project settings ${join(dir, 'settings.json')} sets permissions.mode "standard" (your ` +
        `user settings say "strict"), sandbox "auto" (your user settings say "required"); review it ` +
        `if you did not write it`,
    ]);
    await writeFile(
      join(dir, 'settings.json'),
      JSON.stringify({ sandbox: 'required', permissions: { mode: 'strict' } }),
    );
    expect((await loadSettings({ home, cwd: proj, homeDir: root })).warnings).toEqual([]);
  });

  it('warnings name each project/local file that weakens isolation or policy; the user file never warns', async () => {
    const dir = join(proj, '.tycli');
    await mkdir(dir);
    await writeFile(
      join(dir, 'settings.json'),
      JSON.stringify({ sandbox: 'off', permissions: { allow: ['fetch(read:https://a.example.com)'] } }),
    );
    await writeFile(
      join(dir, 'settings.local.json'),
      JSON.stringify({ hooks: { postToolUse: [{ command: 'true' }, { command: 'true' }] } }),
    );
    const user = tycliPaths(home).settingsFile;
    await mkdir(join(user, '..'), { recursive: true });
    await writeFile(user, JSON.stringify({ sandbox: 'off', permissions: { mode: 'unrestricted' } }));
    const s = await loadSettings({ home, cwd: proj, homeDir: root });
    expect(s.warnings).toEqual([
      `warning: project settings ${join(dir, 'settings.json')} sets sandbox "off", 1 permissions.allow rule; review it if you did not write it`,
      `warning: local settings ${join(dir, 'settings.local.json')} sets hooks that run shell commands as you (postToolUse: 2); review it if you did not write it`,
    ]);
    const shown = await tycli(['permissions', 'rules']);
    expect(shown.code).toBe(0);
    expect(shown.stderr.split('\n').filter((l) => l.startsWith('warning: '))).toEqual(s.warnings);
    expect(JSON.parse((await tycli(['--json', 'permissions', 'rules'])).stdout).warnings).toEqual(s.warnings);
    await writeFile(
      join(dir, 'settings.json'),
      JSON.stringify({ sandbox: 'required', permissions: { mode: 'strict', deny: ['fetch(*:*)'] } }),
    );
    await rm(join(dir, 'settings.local.json'));
    expect((await loadSettings({ home, cwd: proj, homeDir: root })).warnings).toEqual([]);
  });
});

// ---------- S4 ----------

const EVIL = {
  tool: 'evil\u001b]8;;https://evil.example/\u0007click\u001b]8;;\u0007\u001b[2J',
  target: 'srv/\u202eexe.txt\u2028line2\u0085\u009b31m\u200b\u2066x\u{e0041}\u007f',
  channel: 'term\u001b[1A',
};

function evilRecord(): AuditRecord {
  return {
    v: 1,
    time: '2026-01-01T00:00:00.000Z',
    principal: 'mcp:\u202ejoe',
    tool: EVIL.tool,
    revision: REV,
    kind: 'mcp',
    target: EVIL.target,
    decision: 'deny',
    rule: 'mcp(\u001b[31mx)',
    list: 'deny',
    scope: 'user',
    channel: EVIL.channel,
    durationMs: 1,
    outcome: 'denied',
    code: 'E_CAPABILITY_DENIED',
  };
}

describe('S4: tycli audit output is inert whatever stdout is', () => {
  it('text lines escape every control, ESC/OSC, C1, bidi, zero-width, line-separator and tag character, also when piped', async () => {
    await mkdir(home, { recursive: true });
    const store = new Store(new FileStoreBackend(tycliPaths(home).store));
    await new StoreAuditLog(store).append(evilRecord());
    const r = await tycli(['audit']);
    expect(r.code).toBe(0);
    const line = r.stdout.replace(/\n$/, '');
    expect(line).not.toContain('\n');
    expect(line).not.toMatch(RAW_HIDDEN);
    for (const shown of [
      '\\x1b]8;;https://evil.example/\\x07click',
      '\\u202eexe.txt\\u2028line2\\x85\\x9b31m\\u200b\\u2066x\\u{e0041}\\x7f',
      'mcp:\\u202ejoe',
      'via term\\x1b[1A',
    ]) {
      expect(line).toContain(shown);
    }
  });

  it('--json lines carry no raw hidden character (U+202E, U+2028, C1, DEL, tags as \\u escapes) and parse back to the stored record', async () => {
    await mkdir(home, { recursive: true });
    const store = new Store(new FileStoreBackend(tycliPaths(home).store));
    await new StoreAuditLog(store).append(evilRecord());
    const r = await tycli(['--json', 'audit']);
    expect(r.code).toBe(0);
    const line = r.stdout.trim();
    expect(line).not.toMatch(RAW_HIDDEN);
    expect(line).toContain('\\u202e');
    expect(line).toContain('\\u2028');
    expect(line).toContain('\\udb40\\udc41');
    expect(JSON.parse(line)).toEqual({ ok: true, records: [evilRecord()], corrupt: 0 });
  });

  it('inertJson escapes what JSON.stringify leaves raw and round-trips exactly', () => {
    const v = {
      s: 'a\u202eb\u2028c\u2029d\u0085e\u200bf\u00adg\ufeffh\u{e0041}i\u007fj\u{f0000}k\u061cl',
      ok: 'plain ü é 漢字 😀',
    };
    expect(JSON.stringify(v)).toMatch(RAW_HIDDEN); // the defect: plain JSON keeps them raw
    const text = inertJson(v);
    expect(text).not.toMatch(RAW_HIDDEN);
    expect(JSON.parse(text)).toEqual(v);
    expect(text).toContain('plain ü é 漢字 😀'); // visible text stays as it is
  });
});

// ---------- gate helpers ----------

class FakeAsker implements Asker {
  questions: Question[] = [];
  constructor(public answer: (q: Question) => AskOutcome = () => ({ allow: true, scope: 'once', channel: 'test' })) {}
  async ask(q: Question): Promise<AskOutcome> {
    this.questions.push(q);
    return this.answer(q);
  }
}

function memGate(
  sets: RuleSet[],
  o: { asker?: Asker; hooks?: HookRunner; hookSpecs?: HookSpec[]; withheld?: string[] } = {},
) {
  const store = new Store(new MemoryStoreBackend());
  const withheld = o.withheld ?? [SECRET_VALUE];
  const audit = new StoreAuditLog(store);
  const deps: ConstructorParameters<typeof PermissionGate>[0] = {
    config: () => ({ policy: compilePolicy(sets), hooks: { preToolUse: o.hookSpecs ?? [] } }),
    audit,
    pause: new PauseTracker(store, { maxRefusals: 100, windowMs: 60_000 }),
    decisions: new StoreDecisions(store),
    withheld: () => withheld,
  };
  if (o.asker) deps.asker = o.asker;
  if (o.hooks) deps.hooks = o.hooks;
  return { gate: new PermissionGate(deps), store, audit };
}

class MemValues implements SecretValues {
  m = new Map<string, string>();
  async get(n: string) {
    return this.m.get(n);
  }
  async set(n: string, v: string) {
    this.m.set(n, v);
  }
  async delete(n: string) {
    return this.m.delete(n);
  }
  async names() {
    return [...this.m.keys()];
  }
}

const never = new AbortController().signal;

// ---------- S6 ----------

describe('S6: every secret use is audited (name, decision, deciding grant or list; never the value) and grants never ask', () => {
  const manifest = (secrets: string[]): ToolManifest =>
    ({
      name: 'svc',
      description: 'd',
      parameters: { type: 'object' },
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default () => 1' },
      capabilities: { secrets },
    }) as ToolManifest;
  const id = (secrets = ['TOK', 'OTHER', 'HDR']): CallerIdentity => ({
    name: 'svc',
    revision: REV,
    manifest: manifest(secrets),
    principal: 'cli:user',
  });

  async function wired() {
    const asker = new FakeAsker();
    const { gate, store, audit } = memGate([{ scope: 'user', source: 'test', mode: 'standard' }], { asker });
    const values = new MemValues();
    await values.set('TOK', SECRET_VALUE);
    await values.set('OTHER', 'other-value-1');
    await values.set('HDR', 'hdr-value-2');
    const grants = new SecretGrants(store);
    await grants.grant('TOK', { tool: 'svc', revision: REV, origins: [] });
    await grants.grant('HDR', { tool: 'svc', revision: REV, origins: ['https://api.example.com'] });
    const registry = new ToolRegistry(store);
    const handlerFor = capabilityFactory({
      store,
      registry,
      gate,
      transport: {
        fetch: async () => {
          throw new Error('no network in this test');
        },
      } as never,
      secretValues: values,
    });
    return { asker, store, audit, handlerFor, grants, values };
  }

  it('a granted getSecret returns the value without a question (standard mode) and is recorded as allowed by its grant', async () => {
    const w = await wired();
    expect(await w.handlerFor(id())('getSecret', { name: 'TOK' }, never)).toBe(SECRET_VALUE);
    expect(w.asker.questions).toEqual([]);
    const { entries } = await w.audit.read();
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      kind: 'secret',
      target: 'TOK',
      decision: 'allow',
      list: 'grant',
      rule: `secret grant TOK to svc@${REV}`,
      outcome: 'granted',
      tool: 'svc',
      revision: REV,
    });
    expect((await w.store.backend.readLog('audit')).join('\n')).not.toContain(SECRET_VALUE);
    expect(formatAuditRecord(entries[0]!)).toContain(`secret:read TOK by grant: secret grant TOK to svc@${REV}`);
  });

  it('denied reads are recorded with the refusing list and E_SECRET_DENIED: not granted, not declared, header-only, unset, bad name', async () => {
    const w = await wired();
    const h = w.handlerFor(id());
    await w.values.delete('OTHER');
    await w.grants.grant('OTHER', { tool: 'svc', revision: REV, origins: [] });
    const cases: [unknown, string, string][] = [
      ['NOGRANT', 'manifest', 'manifest upper bound'], // not declared
      ['HDR', 'grant', 'header-only grant for https://api.example.com'],
      ['OTHER', 'value', 'no value set'],
      ['bad name!', 'input', 'invalid secret name'],
      [42, 'input', 'secret name is not a string'],
    ];
    for (const [name] of cases) expect((await rejection(h('getSecret', { name }, never))).code).toBe('E_SECRET_DENIED');
    const notGranted = w.handlerFor({
      ...id(),
      revision: 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku',
    });
    expect((await rejection(notGranted('getSecret', 'TOK', never))).code).toBe('E_SECRET_DENIED');
    const { entries } = await w.audit.read();
    expect(entries.map((e) => [e.decision, e.list, e.rule, e.code, e.outcome])).toEqual([
      ...cases.map(([, list, rule]) => ['deny', list, rule, 'E_SECRET_DENIED', 'denied']),
      ['deny', 'grant', 'no grant to this revision', 'E_SECRET_DENIED', 'denied'],
    ]);
    expect(entries.map((e) => e.target)).toEqual(['NOGRANT', 'HDR', 'OTHER', 'bad name!', '?', 'TOK']);
    expect(w.asker.questions).toEqual([]);
  });

  it('header placeholder substitution is audited per secret and origin, allowed or denied, never with the value', async () => {
    const store = new Store(new MemoryStoreBackend());
    const audit = new StoreAuditLog(store);
    const values = new MemValues();
    await values.set('HDR', 'hdr-value-2');
    const grants = new SecretGrants(store);
    await grants.grant('HDR', { tool: 'svc', revision: REV, origins: ['https://api.example.com'] });
    const broker = new SecretBroker(grants, values, { audit });
    expect(
      await broker.substitute(id(), 'https://api.example.com', [['authorization', 'Bearer {{secret:HDR}}']]),
    ).toEqual([['authorization', 'Bearer hdr-value-2']]);
    expect(
      (
        await rejection(
          broker.substitute(id(), 'https://evil.example.com', [['authorization', 'Bearer {{secret:HDR}}']]),
        )
      ).code,
    ).toBe('E_SECRET_DENIED');
    const { entries } = await audit.read();
    expect(entries.map((e) => [e.target, e.decision, e.rule])).toEqual([
      ['HDR -> https://api.example.com', 'allow', `secret grant HDR to svc@${REV} for https://api.example.com`],
      ['HDR -> https://evil.example.com', 'deny', 'grant does not cover https://evil.example.com'],
    ]);
    expect((await store.backend.readLog('audit')).join('\n')).not.toContain('hdr-value-2');
  });

  it('when the audit record cannot be written the value is not released (E_STORE)', async () => {
    const store = new Store(new MemoryStoreBackend());
    const values = new MemValues();
    await values.set('TOK', SECRET_VALUE);
    const grants = new SecretGrants(store);
    await grants.grant('TOK', { tool: 'svc', revision: REV, origins: [] });
    const broken: AuditSink = {
      append: async () => {
        throw new Error('disk full');
      },
    };
    const e = await rejection(new SecretBroker(grants, values, { audit: broken }).getSecret(id(), 'TOK'));
    expect(e.code).toBe('E_STORE');
    expect(e.message).not.toContain(SECRET_VALUE);
  });

  it('end to end: tycli secret grant, then tycli run reads it; tycli audit shows the secret use and no value', async () => {
    const dir = join(root, 'tool');
    await mkdir(dir);
    await writeFile(
      join(dir, 'manifest.json'),
      JSON.stringify({
        name: 'reads-secret',
        description: 'reads a secret',
        parameters: { type: 'object', additionalProperties: false },
        execution: {
          kind: 'sandboxed-code',
          runtime: 'javascript',
          source:
            "export default async (_a, ctx) => { const v = await ctx.getSecret('TOK'); let denied; try { " +
            "await ctx.getSecret('NOPE'); } catch (e) { denied = e.code; } return { len: v.length, denied " +
            '}; }',
        },
        capabilities: { secrets: ['TOK', 'NOPE'] },
      }),
    );
    const rev = (await tycli(['tool', 'add', join(dir, 'manifest.json')])).stdout.trim();
    expect((await tycli(['secret', 'set', 'TOK'], { stdin: SECRET_VALUE })).code).toBe(0);
    expect((await tycli(['secret', 'grant', 'TOK', '--tool', `reads-secret@${rev}`])).code).toBe(0);
    const run = await tycli(['--json', 'run', 'reads-secret', '--args', '{}']);
    expect(JSON.parse(run.stdout.trim())).toEqual({
      ok: true,
      revision: rev,
      result: { len: SECRET_VALUE.length, denied: 'E_SECRET_DENIED' },
    });
    const a = await tycli(['--json', 'audit']);
    const recs = (JSON.parse(a.stdout.trim()) as { records: AuditRecord[] }).records;
    // the person's own secret set and grant (list person), then the tool's uses (list grant)
    expect(recs.filter((r) => r.kind === 'secret').map((r) => [r.target, r.decision, r.list])).toEqual([
      ['TOK', 'allow', 'person'],
      ['TOK', 'allow', 'person'],
      ['TOK', 'allow', 'grant'],
      ['NOPE', 'deny', 'grant'],
    ]);
    expect(a.stdout).not.toContain(SECRET_VALUE);
  }, 60_000);
});

// ---------- C2 ----------

describe('C2: the audit records the outcome the caller gets; traces read once ("mode standard", never "mode mode standard")', () => {
  const params = {
    type: 'object',
    properties: { x: { type: 'number' }, note: { type: 'string' } },
    required: ['x'],
    additionalProperties: false,
  };
  const tool = (limits?: object) => ({
    name: 'dbl',
    description: 'double',
    parameters: params,
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async (a) => a.x * 2' },
    ...(limits ? { limits } : {}),
  });

  it.each([
    [
      'E_SECRET_DENIED',
      () => {
        throw new TyError('E_SECRET_DENIED', 'secret "T" is not granted');
      },
    ],
    [
      'E_CAPABILITY_DENIED',
      () => {
        throw new TyError('E_CAPABILITY_DENIED', 'fetch denied');
      },
    ],
    [
      'E_FETCH_FAILED',
      () => {
        throw new TyError('E_FETCH_FAILED', 'connection reset');
      },
    ],
  ])('an uncaught host refusal %s: result and audit carry the same code', async (want, refuse) => {
    const { gate, store, audit } = memGate([{ scope: 'user', source: 't', mode: 'unrestricted' }]);
    const registry = new ToolRegistry(store);
    await registry.install(tool());
    const pool: PoolLike = {
      async call(_spec, _args, o) {
        await o.onCapability('getSecret', { name: 'T' }, o.signal).catch(() => undefined);
        throw new TyError('E_TOOL_FAILED', `tool threw: ${want}`, { toolCode: want });
      },
    };
    const inv = new Invoker({ registry, pool, gate, capabilities: () => async () => refuse() });
    const r = await inv.invoke('dbl', { x: 1 });
    expect(r).toMatchObject({ ok: false, error: { code: want } });
    const calls = (await audit.read()).entries.filter((e) => e.kind === 'tool');
    expect(calls.map((e) => [e.outcome, e.code])).toEqual([['error', want]]);
  });

  it('result checks (E_OUTPUT_LIMIT) are recorded as the error the caller gets, not "ok"', async () => {
    const { gate, store, audit } = memGate([{ scope: 'user', source: 't', mode: 'unrestricted' }]);
    const registry = new ToolRegistry(store);
    await registry.install(tool({ outputBytes: 16 }));
    const inv = new Invoker({ registry, pool: { call: async () => 'x'.repeat(100) }, gate });
    expect(await inv.invoke('dbl', { x: 1 })).toMatchObject({ ok: false, error: { code: 'E_OUTPUT_LIMIT' } });
    expect((await audit.read()).entries.map((e) => [e.outcome, e.code])).toEqual([['error', 'E_OUTPUT_LIMIT']]);
  });

  it('question text and audit lines name the mode once', async () => {
    const asker = new FakeAsker();
    const { gate, audit } = memGate([{ scope: 'user', source: 't', mode: 'strict' }], { asker });
    await gate.authorize({ principal: 'cli:user', kind: 'tool', toolName: 'weather', revision: REV });
    const q = asker.questions[0]!;
    expect(q.details).toContain('asked because: mode strict (user)');
    const { entries } = await audit.read();
    const lines = [
      formatAuditRecord(entries[0]!),
      formatAuditRecord({
        ...entries[0]!,
        list: 'mode',
        rule: 'mode standard',
        scope: 'default',
        channel: undefined,
      } as AuditRecord),
    ];
    for (const l of [...q.details, ...lines]) expect(l).not.toMatch(/\bmode mode\b/);
    expect(lines[1]).toContain('by mode standard [default]');
    expect(
      formatAuditRecord({ ...entries[0]!, list: 'deny', rule: 'fetch(*:https://a.example)', scope: 'user' }),
    ).toContain('by deny rule fetch(*:https://a.example) [user]');
  });
});

// ---------- C8 ----------

describe("C8: approval questions show the call's arguments (preview), never audited, never given to hooks", () => {
  it('the invoker puts the arguments in the question; secret values are withheld; audit and hook input hold no preview', async () => {
    const asker = new FakeAsker();
    const inputs: string[] = [];
    const hooks: HookRunner = {
      run: async (_h, input) => (inputs.push(input), { exitCode: 0, stdout: '', stderr: '', timedOut: false }),
    };
    const { gate, store, audit } = memGate([{ scope: 'user', source: 't', mode: 'strict' }], {
      asker,
      hooks,
      hookSpecs: [{ event: 'preToolUse', matcher: '*', command: 'x', timeoutMs: 1000, scope: 'user', index: 0 }],
    });
    const registry = new ToolRegistry(store);
    await registry.install({
      name: 'dbl',
      description: 'd',
      parameters: { type: 'object' },
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default () => 1' },
    });
    const inv = new Invoker({ registry, pool: { call: async () => 2 }, gate });
    const r = await inv.invoke('dbl', { city: 'Paris\u001b[2J', key: SECRET_VALUE, n: 3 });
    expect(r.ok).toBe(true);
    const details = asker.questions[0]!.details;
    expect(details).toContain('arguments: {"city":"Paris\\u001b[2J","key":"<withheld>","n":3}');
    expect(details.join('\n')).not.toContain(SECRET_VALUE);
    const raw = (await store.backend.readLog('audit')).join('\n');
    expect(raw).not.toContain('Paris');
    expect(raw).not.toContain('arguments');
    expect(inputs).toHaveLength(1);
    expect(inputs[0]).not.toContain('preview');
    expect(inputs[0]).not.toContain('arguments: ');
    expect((await audit.read()).entries).toHaveLength(1);
  });

  it('a secret value with quotes, backslashes or controls is withheld also in its JSON-escaped form', async () => {
    const odd = 'p"w\\d\u0007x';
    const asker = new FakeAsker();
    const { gate, store } = memGate([{ scope: 'user', source: 't', mode: 'strict' }], { asker, withheld: [odd] });
    const registry = new ToolRegistry(store);
    await registry.install({
      name: 'dbl',
      description: 'd',
      parameters: { type: 'object' },
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default () => 1' },
    });
    expect((await new Invoker({ registry, pool: { call: async () => 2 }, gate }).invoke('dbl', { k: odd })).ok).toBe(
      true,
    );
    const line = asker.questions[0]!.details.find((d) => d.startsWith('arguments: '));
    expect(line).toBe('arguments: {"k":"<withheld>"}');
  });

  it('a long or many-line preview is cut: at most 6 lines, each line cut at 600 characters on display', async () => {
    const asker = new FakeAsker();
    const { gate } = memGate([{ scope: 'user', source: 't', mode: 'strict' }], { asker });
    const req: GateRequest = {
      principal: 'p',
      kind: 'tool',
      toolName: 'weather',
      revision: REV,
      preview: [...Array.from({ length: 10 }, (_, i) => `line ${i}`), 'z'.repeat(5000)].join('\n'),
    };
    await gate.authorize(req);
    const q = asker.questions[0]!;
    const shown = q.details.filter((d) => d.startsWith('line ') || d.startsWith('… [cut'));
    expect(shown).toEqual(['line 0', 'line 1', 'line 2', 'line 3', 'line 4', '… [cut: 6 more lines]']);
    const { renderQuestion } = await import('../../core/ask/text.js');
    const long = await (async () => {
      const a = new FakeAsker();
      const g = memGate([{ scope: 'user', source: 't', mode: 'strict' }], { asker: a });
      await g.gate.authorize({ ...req, preview: `arguments: ${'y'.repeat(5000)}` });
      return renderQuestion(a.questions[0]!);
    })();
    const arg = long.find((l) => l.includes('arguments: '))!;
    expect(arg).toMatch(/… \[cut: \d+ more characters\]$/);
    expect(arg.length).toBeLessThan(700);
  });
});
