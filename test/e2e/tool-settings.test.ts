// End-to-end tests of per-tool settings revisions through tycli: add, settings --set, run, --from, secrets refused;
// test side.
import { describe, expect, it } from 'vitest';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliScratch, oneLine } from './helpers.js';

const S = cliScratch('tycli-settings');
const tycli = S.tycli;
const add = S.add;

const SETTINGS = {
  type: 'object',
  properties: {
    units: { type: 'string', enum: ['metric', 'imperial'], default: 'metric' },
    baseUrl: { type: 'string', format: 'uri' },
    digits: { type: 'integer', minimum: 0, maximum: 6, default: 2 },
  },
  additionalProperties: false,
};

async function manifest(
  name: string,
  extra: Record<string, unknown> = {},
  settings: unknown = SETTINGS,
  runtime: 'javascript' | 'python' = 'javascript',
): Promise<string> {
  const file = join(S.dir, `${name}-${Math.random().toString(36).slice(2)}.json`);
  const source =
    runtime === 'python'
      ? 'def main(args, ctx):\n    return {"settings": ctx.settings}\n'
      : 'export default async (args, ctx) => ({ settings: ctx.settings, frozen: Object.isFrozen(ctx.settings) });\n';
  await writeFile(
    file,
    JSON.stringify({
      name,
      description: 'reports its settings',
      parameters: { type: 'object', properties: {}, additionalProperties: false },
      execution: { kind: 'sandboxed-code', runtime, source },
      settings,
      ...extra,
    }),
  );
  return file;
}

describe('tycli tool settings', () => {
  it('add a tool with a settings schema, --set values, run: the tool reads ctx.settings (defaults applied); every change audited', async () => {
    const h = join(S.dir, 'basic');
    const rev = await add(h, await manifest('conv'));
    // Before any settings revision: the schema's defaults.
    const first = oneLine(await tycli(['--home', h, '--json', 'run', 'conv']));
    expect(first).toMatchObject({ ok: true, result: { settings: { units: 'metric', digits: 2 }, frozen: true } });
    expect(first.settingsRevision).toBeUndefined();
    const shown0 = oneLine(await tycli(['--home', h, '--json', 'tool', 'settings', 'conv']));
    expect(shown0).toMatchObject({
      ok: true,
      name: 'conv',
      revision: rev,
      settingsRevision: null,
      values: {},
      effective: { units: 'metric', digits: 2 },
    });

    const set = await tycli([
      '--home',
      h,
      'tool',
      'settings',
      'conv',
      '--set',
      'units=imperial',
      '--set',
      'digits=4',
      '--set',
      'baseUrl=https://api.example.com/v2',
    ]);
    expect(set.code, set.stderr).toBe(0);
    const s1 = set.stdout.trim();
    expect(s1).toMatch(/^bagaaiera[a-z2-7]{50,}$/);
    expect(s1).not.toBe(rev);
    const ran = oneLine(await tycli(['--home', h, '--json', 'run', 'conv']));
    expect(ran).toMatchObject({
      ok: true,
      revision: rev,
      settingsRevision: s1,
      result: { settings: { units: 'imperial', digits: 4, baseUrl: 'https://api.example.com/v2' } },
    });

    // --unset: the default applies again; the same values give the same settings revision (content address).
    const s2 = (await tycli(['--home', h, 'tool', 'settings', 'conv', '--unset', 'digits'])).stdout.trim();
    expect(s2).not.toBe(s1);
    expect(oneLine(await tycli(['--home', h, '--json', 'run', 'conv'])).result).toEqual({
      settings: { units: 'imperial', baseUrl: 'https://api.example.com/v2', digits: 2 },
      frozen: true,
    });
    const again = oneLine(await tycli(['--home', h, '--json', 'tool', 'settings', 'conv', '--set', 'digits=4']));
    expect(again).toMatchObject({ ok: true, settingsRevision: s1, previous: s2 });

    // Shown without flags, human form.
    const human = await tycli(['--home', h, 'tool', 'settings', 'conv']);
    expect(human.stdout).toContain(`settings revision ${s1}`);
    expect(human.stdout).toMatch(/^ {2}units: "imperial"$/m);

    // Invalid values are refused naming the field; nothing changes.
    const bad = await tycli(['--home', h, 'tool', 'settings', 'conv', '--set', 'units=kelvin']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/E_INVALID_SETTINGS.*units.*must be one of/);
    const unknown = await tycli(['--home', h, 'tool', 'settings', 'conv', '--set', 'colour=red']);
    expect(unknown.stderr).toMatch(/E_INVALID_SETTINGS.*colour/);
    expect(oneLine(await tycli(['--home', h, '--json', 'tool', 'settings', 'conv'])).settingsRevision).toBe(s1);

    // Every change is in the audit trail (kind settings, the new settings revision as target); values are not.
    const rec = oneLine(await tycli(['--home', h, '--json', 'audit', '--tool', 'conv']));
    const records = (rec.records as { kind: string; target?: string; rule: string; principal: string }[]).filter(
      (r) => r.kind === 'settings',
    );
    expect(records.map((r) => r.target)).toEqual([s1, s2, s1]);
    expect(records[1]!.rule).toContain(`${s1} -> ${s2}`);
    expect(JSON.stringify(records)).not.toContain('imperial');
  });

  it('a new tool revision starts with no settings; --from carries them over, re-validated against the new schema', async () => {
    const h = join(S.dir, 'from');
    const r1 = await add(h, await manifest('conv'));
    const s1 = (
      await tycli(['--home', h, 'tool', 'settings', 'conv', '--set', 'units=imperial', '--set', 'digits=5'])
    ).stdout.trim();
    // Revision 2 allows at most 3 digits.
    const narrower = {
      ...SETTINGS,
      properties: { ...SETTINGS.properties, digits: { type: 'integer', minimum: 0, maximum: 3, default: 2 } },
    };
    const r2 = await add(h, await manifest('conv', { description: 'v2' }, narrower));
    const act = await tycli([
      '--home',
      h,
      'tool',
      'activate',
      'conv',
      `conv@${r2.slice(9, 21)}`,
      '--approve-replacement',
    ]);
    expect(act.code, act.stderr).toBe(0);
    expect(oneLine(await tycli(['--home', h, '--json', 'tool', 'settings', 'conv']))).toMatchObject({
      revision: r2,
      settingsRevision: null,
    });
    expect(oneLine(await tycli(['--home', h, '--json', 'run', 'conv'])).result).toMatchObject({
      settings: { units: 'metric', digits: 2 },
    });

    const tooMany = await tycli(['--home', h, 'tool', 'settings', 'conv', '--from', `conv@${r1.slice(9, 21)}`]);
    expect(tooMany.code).toBe(2);
    expect(tooMany.stderr).toMatch(/E_INVALID_SETTINGS.*digits/);
    const other = await tycli(['--home', h, 'tool', 'settings', 'conv', '--from', `other@${r1.slice(9, 21)}`]);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('names the tool "other", not "conv"');
    // The tool name instead of a revision, and the revision being changed itself: usage errors that say so.
    const byName = await tycli(['--home', h, 'tool', 'settings', 'conv', '--from', 'conv']);
    expect(byName.code).toBe(2);
    expect(byName.stderr).toMatch(
      /E_USAGE.*--from takes a revision of conv.*not the tool name.*tycli tool list --revisions/,
    );
    const self = await tycli(['--home', h, 'tool', 'settings', 'conv', '--from', r2.slice(9, 21)]);
    expect(self.code).toBe(2);
    expect(self.stderr).toMatch(/E_USAGE.*is the revision being changed/);
    expect(oneLine(await tycli(['--home', h, '--json', 'tool', 'settings', 'conv']))).toMatchObject({
      revision: r2,
      settingsRevision: null,
    });

    const carried = oneLine(
      await tycli(['--home', h, '--json', 'tool', 'settings', 'conv', '--from', r1.slice(9, 21), '--set', 'digits=3']),
    );
    expect(carried).toMatchObject({ ok: true, revision: r2, values: { units: 'imperial', digits: 3 } });
    expect(carried.settingsRevision).not.toBe(s1);
    expect(oneLine(await tycli(['--home', h, '--json', 'run', 'conv'])).result).toMatchObject({
      settings: { units: 'imperial', digits: 3 },
    });
    // The old revision keeps its own settings revision (pinned calls run with it).
    expect(oneLine(await tycli(['--home', h, '--json', 'run', `conv@${r1}`]))).toMatchObject({
      settingsRevision: s1,
      result: { settings: { digits: 5 } },
    });
  });

  it('a field named like a secret, or marked writeOnly, is refused at add time with a pointer to tycli secret', async () => {
    const h = join(S.dir, 'secret');
    for (const [field, schema] of [
      ['apiKey', { type: 'string' }],
      ['github_token', { type: 'string' }],
      ['dbPassword', { type: 'string' }],
      ['clientSecret', { type: 'string' }],
      ['note', { type: 'string', writeOnly: true }],
    ] as const) {
      const r = await tycli([
        '--home',
        h,
        'tool',
        'add',
        await manifest('leaky', {}, { type: 'object', properties: { [field]: schema } }),
      ]);
      expect(r.code, field).toBe(2);
      expect(r.stderr, field).toMatch(
        /^error\[E_INVALID_MANIFEST\]: settings\/properties\/\w+.*(named like a secret|writeOnly).*store the value with: tycli secret set/m,
      );
    }
    // Nested and maxTokens-like names: the nested secret is refused, a token *count* is a setting.
    const nested = await tycli([
      '--home',
      h,
      'tool',
      'add',
      await manifest(
        'leaky',
        {},
        { type: 'object', properties: { auth: { type: 'object', properties: { bearer: { type: 'string' } } } } },
      ),
    ]);
    expect(nested.stderr).toMatch(/E_INVALID_MANIFEST.*named like a secret/);
    const ok = await tycli([
      '--home',
      h,
      'tool',
      'add',
      await manifest('fine', {}, { type: 'object', properties: { maxTokens: { type: 'integer' } } }),
    ]);
    expect(ok.code, ok.stderr).toBe(0);
  });

  it('finding 3 of issue 26: under an open schema, --set of a key named like a secret is refused and nothing stored; a fullwidth ＡＰＩＫＥＹ is refused at add', async () => {
    const h = join(S.dir, 'open');
    for (const [i, schema] of [
      { type: 'object', additionalProperties: true },
      { type: 'object', additionalProperties: { type: 'string' } },
      { type: 'object', patternProperties: { '^.*$': { type: 'string' } } },
    ].entries()) {
      const name = `st${i}`;
      await add(h, await manifest(name, {}, schema));
      for (const set of ['apiKey=abc', 'pass_word=1', 'ＡＰＩＫＥＹ=abc']) {
        const r = await tycli(['--home', h, 'tool', 'settings', name, '--set', set]);
        expect(r.code, `${name} ${set}`).toBe(2);
        expect(r.stderr, set).toMatch(
          /^error\[E_INVALID_SETTINGS\]: settings of st\d: the field \/\S+ is named like a secret/m,
        );
        expect(r.stderr + r.stdout, set).not.toMatch(/abc/);
      }
      const shown = oneLine(await tycli(['--home', h, '--json', 'tool', 'settings', name]));
      expect(shown).toMatchObject({ ok: true, settingsRevision: null });
      const run = oneLine(await tycli(['--home', h, '--json', 'run', name]));
      expect(run).toMatchObject({ ok: true, result: { settings: {} } });
    }
    const wide = await tycli([
      '--home',
      h,
      'tool',
      'add',
      await manifest('wide', {}, { type: 'object', properties: { ＡＰＩＫＥＹ: { type: 'string' } } }),
    ]);
    expect(wide.code).toBe(2);
    expect(wide.stderr).toMatch(/E_INVALID_MANIFEST.*named like a secret/);
  });

  it('a Deno tool reads ctx.settings', async () => {
    const h = join(S.dir, 'deno');
    const file = join(S.dir, 'deno-settings.json');
    await writeFile(
      file,
      JSON.stringify({
        name: 'denoconv',
        description: 'd',
        parameters: { type: 'object', properties: {}, additionalProperties: false },
        settings: SETTINGS,
        execution: {
          kind: 'sandboxed-code',
          runtime: 'javascript',
          engine: 'deno',
          source: 'export default async (a, ctx) => ({ deno: typeof Deno === "object", settings: ctx.settings })',
        },
      }),
    );
    await add(h, file);
    expect((await tycli(['--home', h, 'tool', 'settings', 'denoconv', '--set', 'digits=1'])).code).toBe(0);
    expect(oneLine(await tycli(['--home', h, '--json', 'run', 'denoconv']))).toMatchObject({
      ok: true,
      result: { deno: true, settings: { units: 'metric', digits: 1 } },
    });
  });

  it("a settings change cannot widen what the revision reaches: a base URL moved to another origin is decided for that origin, not covered by the first one's grant", async () => {
    const h = join(S.dir, 'origin');
    const file = join(S.dir, 'origin-settings.json');
    const source =
      'export default async (a, ctx) => { try { await fetch(`${ctx.settings.baseUrl}/v1`); return "fetched"; } catch (e) { return e.code; } }';
    await writeFile(
      file,
      JSON.stringify({
        name: 'client',
        description: 'fetches its base URL',
        parameters: { type: 'object', properties: {}, additionalProperties: false },
        settings: {
          type: 'object',
          properties: { baseUrl: { type: 'string' } },
          required: ['baseUrl'],
          additionalProperties: false,
        },
        capabilities: {
          fetch: [
            { origin: 'https://a.example.com', access: 'read' },
            { origin: 'https://b.example.com', access: 'read' },
          ],
        },
        execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
      }),
    );
    await add(h, file);
    // Without settings the required baseUrl is missing: refused before anything runs.
    expect(oneLine(await tycli(['--home', h, '--json', 'run', 'client']))).toMatchObject({
      ok: false,
      error: { code: 'E_INVALID_SETTINGS' },
    });
    await tycli(['--home', h, 'tool', 'settings', 'client', '--set', 'baseUrl=https://b.example.com']);
    const r = oneLine(
      await tycli(['--home', h, '--json', '--allow', 'fetch(read:https://a.example.com)', 'run', 'client']),
    );
    expect(r).toMatchObject({ ok: true, result: 'E_CAPABILITY_DENIED' });
    const audit = oneLine(await tycli(['--home', h, '--json', 'audit', '--denied']));
    expect((audit.records as { kind: string; target: string }[]).map((x) => [x.kind, x.target])).toEqual([
      ['fetch', 'https://b.example.com'],
    ]);
  });

  it('a Python tool reads ctx.settings', async () => {
    const h = join(S.dir, 'py');
    await add(h, await manifest('pyconv', {}, SETTINGS, 'python'));
    expect((await tycli(['--home', h, 'tool', 'settings', 'pyconv', '--set', 'units=imperial'])).code).toBe(0);
    const r = oneLine(await tycli(['--home', h, '--json', 'run', 'pyconv']));
    expect(r).toMatchObject({ ok: true, result: { settings: { units: 'imperial', digits: 2 } } });
  }, 180_000);
});
