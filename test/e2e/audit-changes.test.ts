// End-to-end: a person's changes from the command line (tool add, activate, remove, gc; secret set, grant, revoke,
// delete; tool settings) are audited like their protocol equivalents, intent first (finding 7 of issue 26); test side.
import { describe, expect, it } from 'vitest';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BIN, cliScratch, oneLine, runProcess } from './helpers.js';

const S = cliScratch('tycli-audit-changes');

async function manifest(k: number): Promise<string> {
  const file = join(S.dir, `m${k}.json`);
  await writeFile(
    file,
    JSON.stringify({
      name: 'keeper',
      description: 'reads a secret',
      parameters: { type: 'object', additionalProperties: false },
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source: `export default async () => ${k};` },
      capabilities: { secrets: ['TOK'] },
      settings: { type: 'object', properties: { units: { type: 'string' } }, additionalProperties: false },
    }),
  );
  return file;
}

describe('changes made on the command line are audited', () => {
  it('each change leaves a record naming what changed (never a value), written before the change', async () => {
    const h = join(S.dir, 'h');
    const r1 = await S.add(h, await manifest(1));
    const r2 = await S.add(h, await manifest(2));
    const t = (args: string[]) => S.tycli(['--home', h, ...args]);
    expect((await t(['tool', 'activate', 'keeper', r2, '--approve-replacement'])).code).toBe(0);
    const set = await runProcess(
      '/bin/sh',
      ['-c', `printf %s secret-value-1234 | "${process.execPath}" "${BIN}" --home "${h}" secret set TOK`],
      { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: S.dir },
      S.dir,
    );
    expect(set.code, set.stderr).toBe(0);
    expect((await t(['secret', 'grant', 'TOK', '--tool', 'keeper'])).code).toBe(0);
    expect((await t(['tool', 'settings', 'keeper', '--set', 'units=metric'])).code).toBe(0);
    expect((await t(['secret', 'revoke', 'TOK', '--tool', 'keeper'])).code).toBe(0);
    expect((await t(['secret', 'delete', 'TOK'])).code).toBe(0);
    expect((await t(['tool', 'remove', 'keeper', '--approve-removal'])).code).toBe(0);
    expect((await t(['tool', 'gc'])).code).toBe(0);
    const { records } = oneLine(await t(['--json', 'audit'])) as { records: Record<string, unknown>[] };
    expect(records.map((r) => [r.kind, r.target, r.tool, r.revision, r.rule, r.outcome])).toEqual([
      ['registry', 'add', 'keeper', r1, 'tycli tool add', 'ok'],
      ['registry', 'add', 'keeper', r2, 'tycli tool add', 'ok'],
      ['registry', 'activate', 'keeper', r2, 'tycli tool activate --approve-replacement', 'ok'],
      ['secret', 'TOK', '*', '*', 'tycli secret set', 'ok'],
      ['secret', 'TOK', 'keeper', r2, 'tycli secret grant', 'ok'],
      ['settings', expect.stringMatching(/^bagaaiera/), 'keeper', r2, expect.stringMatching(/^settings /), 'ok'],
      ['secret', 'TOK', 'keeper', '*', 'tycli secret revoke', 'ok'],
      ['secret', 'TOK', '*', '*', 'tycli secret delete', 'ok'],
      ['registry', 'remove', 'keeper', r2, 'tycli tool remove --approve-removal', 'ok'],
      ['registry', 'gc', '*', '*', 'tycli tool gc', 'ok'],
      // r2 has settings a person stored, so gc keeps it
      ['registry', 'gc', 'keeper', r1, 'tycli tool gc', 'ok'],
    ]);
    for (const r of records) expect(r).toMatchObject({ principal: 'cli:user', decision: 'allow', list: 'person' });
    expect(JSON.stringify(records)).not.toContain('secret-value-1234');
  });

  it('a change that fails is audited with its code; a dry run changes nothing and is not audited', async () => {
    const h = join(S.dir, 'fail');
    await S.add(h, await manifest(3));
    const refused = await S.tycli(['--home', h, 'tool', 'remove', 'keeper']);
    expect(refused.code).toBe(1);
    expect((await S.tycli(['--home', h, 'tool', 'gc', '--dry-run'])).code).toBe(0);
    const { records } = oneLine(await S.tycli(['--home', h, '--json', 'audit'])) as {
      records: Record<string, unknown>[];
    };
    expect(records.map((r) => [r.target, r.outcome, r.code])).toEqual([
      ['add', 'ok', undefined],
      ['remove', 'error', 'E_APPROVAL_REQUIRED'],
    ]);
  });
});
