// End-to-end tests of short revisions and the tool lifecycle (remove, gc, list --revisions, diff) through tycli; test
// side.
import { describe, expect, it } from 'vitest';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ROOT, cliScratch, oneLine } from './helpers.js';

const S = cliScratch('tycli-life');
const tycli = S.tycli;
const add = S.add;

async function manifest(name: string, factor: number, description = `multiplies x by ${factor}`): Promise<string> {
  const file = join(S.dir, `${name}-${factor}-${Math.random().toString(36).slice(2)}.json`);
  const params = {
    type: 'object',
    properties: { x: { type: 'number' } },
    required: ['x'],
    additionalProperties: false,
  };
  await writeFile(
    file,
    JSON.stringify({
      name,
      description,
      parameters: params,
      execution: {
        kind: 'sandboxed-code',
        runtime: 'javascript',
        source: `export default async (a) => {\n  const f = ${factor};\n  return a.x * f;\n};\n`,
      },
    }),
  );
  return file;
}

describe('short revisions', () => {
  it('tool list and tool show print short ids; any unique prefix of 8+ characters works as NAME@PREFIX', async () => {
    const h = join(S.dir, 'short');
    const r1 = await add(h, await manifest('mul', 2));
    const r2 = await add(h, await manifest('mul', 3));
    const short1 = r1.slice(9, 21);
    const list = await tycli(['--home', h, 'tool', 'list']);
    expect(list.stdout).toMatch(new RegExp(`^mul\\s+${short1}\\s+2$`, 'm'));
    expect(list.stdout).not.toContain(r1);
    expect((await tycli(['--home', h, 'tool', 'list', '--full'])).stdout).toContain(r1);
    const show = await tycli(['--home', h, 'tool', 'show', 'mul']);
    expect(show.stdout).toMatch(new RegExp(`^revision:\\s+${short1} \\(active\\)$`, 'm'));

    // 8 characters of the short form, and a prefix of the whole id, both resolve.
    const run = await tycli(['--home', h, 'run', `mul@${r2.slice(9, 17)}`, '--args', '{"x":5}']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('15');
    const shown = oneLine(await tycli(['--home', h, '--json', 'tool', 'show', `mul@${r2.slice(0, 22)}`]));
    expect(shown).toMatchObject({ ok: true, revision: r2, active: false });

    // Ambiguous (every id starts with "bagaaier"): refused, candidates listed.
    const amb = await tycli(['--home', h, 'tool', 'show', 'mul@bagaaier']);
    expect(amb.code).toBe(2);
    expect(amb.stderr).toMatch(/^error\[E_UNKNOWN_TOOL\]: .*ambiguous/);
    expect(amb.stderr).toContain(r1.slice(9, 29));
    expect(amb.stderr).toContain(r2.slice(9, 29));
    const ambJson = oneLine(await tycli(['--home', h, '--json', 'tool', 'show', 'mul@bagaaier']));
    expect(ambJson).toMatchObject({ ok: false, error: { code: 'E_UNKNOWN_TOOL' } });
    // Too short: malformed.
    expect((await tycli(['--home', h, 'tool', 'show', `mul@${short1.slice(0, 7)}`])).stderr).toMatch(/at least 8/);
    // activate by prefix binds the whole id.
    const act = oneLine(
      await tycli(['--home', h, '--json', 'tool', 'activate', 'mul', r2.slice(9, 19), '--approve-replacement']),
    );
    expect(act).toEqual({ ok: true, name: 'mul', revision: r2 });
  });
});

describe('tool add', () => {
  it('takes a folder holding manifest.json as that manifest; a folder without one is a usage error', async () => {
    const h = join(S.dir, 'folder');
    const byFile = await add(h, join(ROOT, 'tools', 'csv-stats', 'manifest.json'));
    const byFolder = await add(join(S.dir, 'folder2'), join(ROOT, 'tools', 'csv-stats'));
    expect(byFolder).toBe(byFile);
    const none = await tycli(['--home', h, 'tool', 'add', join(ROOT, 'tools')]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/E_USAGE.*is a folder without a manifest\.json/);
  });
});

describe("piped output of a tool's own text", () => {
  it('an object result and tool show carry no raw hidden character when piped (\\u escapes in the JSON, visible escapes in tool show); a string result stays exact', async () => {
    const h = join(S.dir, 'inert');
    const file = join(S.dir, 'bidi.json');
    const src =
      'export default async (a) => (a.s ? "raw\\u202e\\u001b[2J" : { "na\\u202eme": "x\\u200by\\u001b]52;c;Zm9v\\u0007" });\n';
    await writeFile(
      file,
      JSON.stringify({
        name: 'bidi',
        description: 'says \u202etxt.exe',
        parameters: { type: 'object', properties: { s: { type: 'boolean' } }, additionalProperties: false },
        execution: { kind: 'sandboxed-code', runtime: 'javascript', source: src },
      }),
    );
    await add(h, file);
    const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e]/u;
    const obj = await tycli(['--home', h, 'run', 'bidi']);
    expect(obj.code, obj.stderr).toBe(0);
    expect(obj.stdout).not.toMatch(HIDDEN);
    expect(JSON.parse(obj.stdout)).toEqual({ 'na\u202eme': 'x\u200by\u001b]52;c;Zm9v\u0007' });
    const shown = await tycli(['--home', h, 'tool', 'show', 'bidi']);
    expect(shown.stdout).not.toMatch(HIDDEN);
    expect(shown.stdout).toContain('says \\u202etxt.exe');
    const str = await tycli(['--home', h, 'run', 'bidi', '--args', '{"s":true}']);
    expect(str.stdout).toBe('raw\u202e\u001b[2J\n');
  });
});

describe('tool activate', () => {
  it("takes REV as a full id, a unique prefix or NAME@REV as other commands print it; another tool's NAME@ is refused", async () => {
    const h = join(S.dir, 'activate');
    const r1 = await add(h, await manifest('mul', 2));
    const r2 = await add(h, await manifest('mul', 3));
    const other = await add(h, await manifest('add1', 1));
    const byRef = oneLine(
      await tycli([
        '--home',
        h,
        '--json',
        'tool',
        'activate',
        'mul',
        `mul@${r2.slice(9, 21)}`,
        '--approve-replacement',
      ]),
    );
    expect(byRef).toEqual({ ok: true, name: 'mul', revision: r2 });
    expect(
      oneLine(await tycli(['--home', h, '--json', 'tool', 'activate', 'mul', `mul@${r1}`, '--approve-replacement'])),
    ).toEqual({ ok: true, name: 'mul', revision: r1 });
    expect(
      oneLine(
        await tycli(['--home', h, '--json', 'tool', 'activate', 'mul', r2.slice(9, 17), '--approve-replacement']),
      ),
    ).toEqual({ ok: true, name: 'mul', revision: r2 });
    const wrong = await tycli([
      '--home',
      h,
      'tool',
      'activate',
      'mul',
      `add1@${other.slice(9, 21)}`,
      '--approve-replacement',
    ]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(/^error\[E_USAGE\]: REV add1@\w+ names the tool "add1", not "mul"/);
    expect(oneLine(await tycli(['--home', h, '--json', 'tool', 'show', 'mul'])).revision).toBe(r2);
  });
});

describe('lifecycle', () => {
  it('remove asks for approval, unbinds the name, keeps pinned revisions until gc; gc deletes the unreferenced', async () => {
    const h = join(S.dir, 'life');
    const r1 = await add(h, await manifest('mul', 2));
    const r2 = await add(h, await manifest('mul', 3));
    const other = await add(h, await manifest('keep', 4));

    const revs = oneLine(await tycli(['--home', h, '--json', 'tool', 'list', '--revisions']));
    const rows = revs.revisions as { name: string; revision: string; addedAt: string; status: string }[];
    expect(rows.map((r) => [r.name, r.revision, r.status])).toEqual([
      ['keep', other, 'active'],
      ['mul', r1, 'active'],
      ['mul', r2, 'installed'],
    ]);
    for (const r of rows) expect(Number.isNaN(Date.parse(r.addedAt))).toBe(false);
    const human = await tycli(['--home', h, 'tool', 'list', '--revisions']);
    expect(human.stdout).toMatch(
      new RegExp(`^mul\\s+${r2.slice(9, 21)}\\s+\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ\\s+installed$`, 'm'),
    );

    const refused = await tycli(['--home', h, 'tool', 'remove', 'mul']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error\[E_APPROVAL_REQUIRED\]: .*tycli tool remove mul --approve-removal/);
    expect((await tycli(['--home', h, 'run', 'mul', '--args', '{"x":1}'])).code).toBe(0);

    const removed = oneLine(await tycli(['--home', h, '--json', 'tool', 'remove', 'mul', '--approve-removal']));
    expect(removed).toEqual({ ok: true, name: 'mul', removed: r1 });
    const gone = await tycli(['--home', h, 'run', 'mul', '--args', '{"x":1}']);
    expect(gone.code).toBe(2);
    expect(gone.stderr).toMatch(/E_UNKNOWN_TOOL/);
    expect(
      (oneLine(await tycli(['--home', h, '--json', 'tool', 'list'])).tools as { name: string; builtin?: boolean }[])
        .filter((t) => !t.builtin)
        .map((t) => t.name),
    ).toEqual(['keep']);
    const pinned = await tycli(['--home', h, 'run', `mul@${r1.slice(9, 21)}`, '--args', '{"x":7}']);
    expect(pinned.stdout.trim()).toBe('14');

    // A permanent decision keeps r2 alive; r1 has none.
    const { Store } = await import('../../core/store/contract.js');
    const { FileStoreBackend } = await import('../../node/store/file-store.js');
    const { StoreDecisions } = await import('../../core/policy/gate.js');
    await new StoreDecisions(new Store(new FileStoreBackend(join(h, 'store')))).add({
      kind: 'fetch',
      revision: r2,
      toolName: 'mul',
      target: 'https://a.example',
      access: 'read',
      allow: true,
      scope: 'permanent',
    });

    const dry = oneLine(await tycli(['--home', h, '--json', 'tool', 'gc', '--dry-run']));
    expect(dry).toMatchObject({ ok: true, dryRun: true, removed: [{ name: 'mul', revision: r1 }] });
    expect((await tycli(['--home', h, 'run', `mul@${r1}`, '--args', '{"x":1}'])).code).toBe(0);
    const gc = await tycli(['--home', h, 'tool', 'gc']);
    expect(gc.code, gc.stderr).toBe(0);
    expect(gc.stdout).toContain(`deleted mul@${r1.slice(9, 21)}`);
    expect(gc.stderr).toContain(`kept mul@${r2.slice(9, 21)} (decision)`);
    expect(gc.stderr).toContain(`kept keep@${other.slice(9, 21)} (binding)`);
    expect((await tycli(['--home', h, 'run', `mul@${r1}`, '--args', '{"x":1}'])).code).toBe(2);
    const after = oneLine(await tycli(['--home', h, '--json', 'tool', 'list', '--revisions']));
    expect((after.revisions as { revision: string; status: string }[]).map((r) => [r.revision, r.status])).toEqual([
      [other, 'active'],
      [r2, 'unbound'],
    ]);
    // activate binds a kept revision again.
    expect((await tycli(['--home', h, 'tool', 'activate', 'mul', r2.slice(9, 21)])).code).toBe(0);
    expect((await tycli(['--home', h, 'run', 'mul', '--args', '{"x":2}'])).stdout.trim()).toBe('6');
  });

  it('tool diff NAME@A NAME@B shows the manifest and code changes as a unified diff', async () => {
    const h = join(S.dir, 'diff');
    const r1 = await add(h, await manifest('mul', 2));
    const r2 = await add(h, await manifest('mul', 3, 'triples x'));
    const d = await tycli(['--home', h, 'tool', 'diff', `mul@${r1.slice(9, 21)}`, `mul@${r2.slice(9, 21)}`]);
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout).toContain(`--- mul@${r1.slice(9, 21)}/manifest.json`);
    expect(d.stdout).toMatch(/^-\s+"description": "multiplies x by 2",$/m);
    expect(d.stdout).toMatch(/^\+\s+"description": "triples x",$/m);
    expect(d.stdout).toMatch(/^- {2}const f = 2;$/m);
    expect(d.stdout).toMatch(/^\+ {2}const f = 3;$/m);
    expect(d.stdout).not.toContain('\u001b['); // piped: no colour
    const forced = await tycli(['--home', h, 'tool', 'diff', `mul@${r1.slice(9, 21)}`, `mul@${r2.slice(9, 21)}`], {
      FORCE_COLOR: '1',
    });
    expect(forced.stdout).toContain('\u001b[32m+  const f = 3;\u001b[0m');
    const same = oneLine(await tycli(['--home', h, '--json', 'tool', 'diff', 'mul', `mul@${r1}`]));
    expect(same).toMatchObject({ ok: true, same: true, patch: '' });
    const j = oneLine(await tycli(['--home', h, '--json', 'tool', 'diff', `mul@${r1}`, `mul@${r2}`]));
    expect(j).toMatchObject({ ok: true, same: false, a: { revision: r1 }, b: { revision: r2 } });
  });
});
