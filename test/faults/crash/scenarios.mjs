// The crash harness's scenarios: one store-writing command each (tool add, activate, settings, secret set, run with
// storage, audit append, lock take-over), its base home and what it must leave; test side.
// Each scenario: `setup(base, dir)` builds the base home without faults and returns the context; `command(ctx)` is
// the command the harness stops at each write point; `check(home, ctx, reported, facts)` lists what is wrong
// with the home after a stop or a recovery, given the --json lines the command printed before it stopped
// (`reported`: nothing reported as done may be missing) and `facts` ({ audited, baseFacts, pid, finished,
// recovery }). The store-wide invariants are test/faults/crash/check.mjs's.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { auditRecords, durableFacts } from './check.mjs';
import { jsonLines, runCommand } from './harness.mjs';

const APPEND_CHILD = join(import.meta.dirname, 'append-child.mjs');
const SECRET = 'crash-harness-secret-value';

/** A counter tool: reads `n` from its storage, adds the `step` setting, returns the new value. */
function counter(dir, description = 'counts') {
  const file = join(dir, `counter-${description.replace(/\W+/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      name: 'counter',
      description,
      parameters: { type: 'object', properties: {}, additionalProperties: false },
      capabilities: { storage: {} },
      settings: {
        type: 'object',
        properties: { step: { type: 'integer', default: 1 } },
        additionalProperties: false,
      },
      execution: {
        kind: 'sandboxed-code',
        runtime: 'javascript',
        source:
          "export default async (args, ctx) => { const n = (await ctx.storage.get('n')) ?? 0; const next = n + (ctx.settings.step ?? 1); await ctx.storage.set('n', next); return { n: next }; }",
      },
    }),
  );
  return file;
}

/** Run a set-up command on the base home; throws when it fails. Resolves to its --json lines. */
async function must(home, args, opts = {}) {
  const r = await runCommand(home, { args, ...opts });
  if (r.code !== 0) throw new Error(`set-up \`tycli ${args.join(' ')}\` failed: ${r.stderr || r.stdout}`);
  return jsonLines(r.stdout);
}

const readJson = (p) => (existsSync(p) ? JSON.parse(readFileSync(p, 'utf8')) : undefined);
const binding = (home, name) => readJson(join(home, 'store', 'bindings', name));
/** The audit records a home gained since its base. */
function newRecords(home, facts) {
  const before = new Set(facts.baseFacts.audit);
  return durableFacts(home)
    .audit.filter((l) => !before.has(l))
    .map((l) => JSON.parse(l));
}
/** "every executed effect has its audit record": when the command audits at all and its effect landed. */
function auditedEffect(home, facts, landed, what) {
  return facts.audited && landed && newRecords(home, facts).length === 0
    ? [`${what} landed without an audit record`]
    : [];
}

/** `tool add` report checks shared by the add and lock take-over scenarios. */
function checkAdd(home, reported, facts) {
  const v = [];
  const rep = reported.find((l) => l.ok && l.revision);
  if (facts.finished && !rep) v.push('the command finished without reporting the revision');
  if (rep) {
    const b = binding(home, rep.name);
    if (!existsSync(join(home, 'store', 'objects', rep.revision)))
      v.push(`reported revision ${rep.revision.slice(0, 20)}… is not stored`);
    if (!b?.revisions?.includes(rep.revision))
      v.push(`reported revision ${rep.revision.slice(0, 20)}… is not bound to ${rep.name}`);
    if (rep.activated && b?.active !== rep.revision) v.push('the revision reported active is not the active one');
  }
  return v;
}

/**
 * `run counter` checks: the storage write (the call's effect) only with the call's audit record (its started record
 * names this process), a reported result in the storage and with its completion record. `before`: n in the base home.
 */
function checkRun(home, ctx, reported, facts, before) {
  const v = [];
  const n = readJson(join(home, 'store', 'tool-storage', ctx.revision))?.entries?.n;
  const records = auditRecords(home);
  const mine = records.filter((r) => r.host && Number(r.host.split(':').at(-2)) === facts.pid);
  if (!facts.recovery && n !== before && mine.length === 0)
    v.push(`the tool's storage write landed (n=${n}) without the call's audit record`);
  const rep = reported.find((l) => l.ok && l.result);
  if (rep) {
    if (n !== rep.result.n) v.push(`the result reported (n=${rep.result.n}) is not in the storage (n=${n})`);
    const call = mine[0]?.call;
    if (!records.some((r) => r.call === call && r.outcome === 'ok'))
      v.push('the call reported done has no completion record');
  }
  if (facts.finished && !rep) v.push('the command finished without a result');
  return v;
}

export const SCENARIOS = [
  {
    name: 'tool add',
    async setup(_base, dir) {
      return { manifest: counter(dir) };
    },
    command: (ctx) => ({ args: ['tool', 'add', ctx.manifest], cwd: ctx.dir }),
    async check(home, _ctx, reported, facts) {
      return [
        ...checkAdd(home, reported, facts),
        ...auditedEffect(home, facts, binding(home, 'counter') !== undefined, 'the binding'),
      ];
    },
  },
  {
    name: 'tool activate',
    async setup(base, dir) {
      await must(base, ['tool', 'add', counter(dir)]);
      const [second] = await must(base, ['tool', 'add', counter(dir, 'counts again')]);
      return { revision: second.revision };
    },
    command: (ctx) => ({ args: ['tool', 'activate', 'counter', ctx.revision, '--approve-replacement'] }),
    async check(home, ctx, reported, facts) {
      const v = [];
      const active = binding(home, 'counter')?.active;
      if (reported.some((l) => l.ok) && active !== ctx.revision)
        v.push('the activation reported done is not in the binding');
      if (facts.finished && active !== ctx.revision) v.push('the command finished but the binding did not move');
      return [...v, ...auditedEffect(home, facts, active === ctx.revision, 'the activation')];
    },
  },
  {
    name: 'tool settings',
    async setup(base, dir) {
      const [add] = await must(base, ['tool', 'add', counter(dir)]);
      await must(base, ['tool', 'settings', 'counter', '--set', 'step=2']);
      return { revision: add.revision };
    },
    command: () => ({ args: ['tool', 'settings', 'counter', '--set', 'step=3'] }),
    async check(home, ctx, reported, facts) {
      const v = [];
      const rec = readJson(join(home, 'store', 'tool-settings', ctx.revision));
      const current = rec?.current;
      const values = current ? readJson(join(home, 'store', 'objects', current))?.body?.values : undefined;
      const rep = reported.find((l) => l.ok && l.settingsRevision);
      if (rep && current !== rep.settingsRevision) v.push('the settings reported stored are not the current ones');
      if (facts.finished && values?.step !== 3) v.push('the command finished but the settings did not change');
      return [...v, ...auditedEffect(home, facts, values?.step === 3, 'the settings change')];
    },
  },
  {
    name: 'secret set',
    async setup(base) {
      await must(base, ['secret', 'set', 'OTHER'], { stdin: 'another-secret-value' });
      return {};
    },
    command: () => ({ args: ['secret', 'set', 'TOK'], stdin: SECRET }),
    async check(home, _ctx, reported, facts) {
      const v = [];
      const value = readJson(join(home, 'config', 'secrets.json'))?.secrets?.TOK;
      if (reported.some((l) => l.ok) && value !== SECRET)
        v.push('the secret reported stored is not in the secrets file');
      if (facts.finished && value !== SECRET) v.push('the command finished but the secret is not stored');
      return [...v, ...auditedEffect(home, facts, value === SECRET, 'the secret')];
    },
  },
  {
    name: 'run with storage',
    async setup(base, dir) {
      const [add] = await must(base, ['tool', 'add', counter(dir)]);
      await must(base, ['run', 'counter']); // storage n = 1, and the sandbox probe cached
      return { revision: add.revision };
    },
    command: () => ({ args: ['run', 'counter'] }),
    async check(home, ctx, reported, facts) {
      return checkRun(home, ctx, reported, facts, 1);
    },
  },
  {
    name: 'first run',
    async setup(base, dir) {
      const [add] = await must(base, ['tool', 'add', counter(dir)]);
      return { revision: add.revision };
    },
    command: () => ({ args: ['run', 'counter'] }),
    async check(home, ctx, reported, facts) {
      return checkRun(home, ctx, reported, facts, undefined);
    },
  },
  {
    name: 'audit append',
    async setup() {
      return {};
    },
    command: () => ({ script: APPEND_CHILD, args: ['crash'] }),
    async check(home, _ctx, reported, facts) {
      const v = [];
      const calls = new Set(auditRecords(home).map((r) => r.call));
      for (const l of reported)
        if (l.appended && !calls.has(l.appended))
          v.push(`record ${l.appended} reported appended is not a whole record in the log`);
      if (facts.finished && reported.filter((l) => l.appended).length !== 6) v.push('the appends did not all report');
      return v;
    },
  },
  {
    name: 'lock take-over',
    async setup(base, dir) {
      await must(base, ['tool', 'add', counter(dir)]);
      // a lock on the binding left by a process that is gone (its pid exited; the start time cannot match)
      const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
        encoding: 'utf8',
      });
      const lock = join(base, 'store', '.locks', 'bindings.counter');
      mkdirSync(lock, { recursive: true, mode: 0o700 });
      writeFileSync(
        join(lock, 'owner.json'),
        JSON.stringify({
          pid: Number(dead.stdout),
          start: '1',
          host: hostname(),
          token: 'feedfacefeedfacefeedface',
          at: Date.now(),
        }),
        { mode: 0o600 },
      );
      return { manifest: counter(dir, 'counts after a crash') };
    },
    command: (ctx) => ({ args: ['tool', 'add', ctx.manifest], cwd: ctx.dir }),
    async check(home, _ctx, reported, facts) {
      return checkAdd(home, reported, facts);
    },
  },
];
