// End to end through tycli: a tool name that does not start with a letter or digit is refused at install; test side.
import { describe, expect, it } from 'vitest';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliScratch, oneLine } from './helpers.js';

const cli = cliScratch('tycli-tool-name');

async function manifestFile(name: string): Promise<string> {
  const file = join(cli.dir, `m-${Buffer.from(name).toString('hex')}.json`);
  const parameters = { type: 'object', properties: {}, additionalProperties: false };
  await writeFile(
    file,
    JSON.stringify({
      name,
      description: 'name rule',
      parameters,
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async () => 7;' },
    }),
  );
  return file;
}

describe('tycli tool add: the tool name rule', () => {
  it('refuses "-rf" and "_x" with E_INVALID_MANIFEST naming the rule, stores nothing; names starting with a letter or digit install and run', async () => {
    const home = join(cli.dir, 'home');
    for (const name of ['-rf', '_x']) {
      const r = await cli.tycli(['--home', home, 'tool', 'add', await manifestFile(name), '--json']);
      expect(r.code, r.stderr).not.toBe(0);
      expect(oneLine(r)).toMatchObject({
        ok: false,
        error: { code: 'E_INVALID_MANIFEST', message: expect.stringContaining('start with a letter or digit') },
      });
    }
    const list = await cli.tycli(['--home', home, 'tool', 'list', '--json']);
    expect(list.stdout).not.toContain('-rf');
    expect(list.stdout).not.toContain('"_x"');
    for (const name of ['srv__get-weather', '3d']) {
      await cli.add(home, await manifestFile(name));
      const run = await cli.tycli(['--home', home, 'run', name, '--json']);
      expect(oneLine(run), run.stderr).toMatchObject({ ok: true, result: 7 });
    }
  });

  it('refuses a name differing from an installed one only in letter case (exit 2, the other named); the installed one still runs', async () => {
    const home = join(cli.dir, 'home-case');
    await cli.add(home, await manifestFile('upper'));
    const r = await cli.tycli(['--home', home, 'tool', 'add', await manifestFile('UPPER'), '--json']);
    expect(r.code, r.stderr).toBe(2);
    expect(oneLine(r)).toMatchObject({
      ok: false,
      error: { code: 'E_INVALID_MANIFEST', message: expect.stringContaining('a tool named "upper" exists') },
    });
    const list = await cli.tycli(['--home', home, 'tool', 'list', '--json']);
    expect(list.stdout).not.toContain('UPPER');
    expect(oneLine(await cli.tycli(['--home', home, 'run', 'upper', '--json']))).toMatchObject({ ok: true, result: 7 });
  });
});
