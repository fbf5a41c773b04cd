// End-to-end tests of the bundled command line's lazily loaded dependencies (re2js for schema patterns): built
// dist/cli, temp homes; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { oneLine, runProcess, type Ran } from './helpers.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'tycli.mjs');
let tmp: string;

function tycli(args: string[]): Promise<Ran> {
  return runProcess(process.execPath, [BIN, ...args], { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp }, tmp);
}

async function patternTool(name: string, pattern: string): Promise<string> {
  const file = join(tmp, `${name}.json`);
  const parameters = {
    type: 'object',
    properties: { code: { type: 'string', pattern } },
    required: ['code'],
    additionalProperties: false,
  };
  await writeFile(
    file,
    JSON.stringify({
      name,
      description: 'pattern tool',
      parameters,
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async (a) => a.code.length' },
    }),
  );
  return file;
}

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist', 'cli', 'tycli.cjs')))
    throw new Error('dist/cli/ is missing: run `npm run build` before the e2e tests');
  tmp = await mkdtemp(join(tmpdir(), 'tycli-lazy-'));
});
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('the bundled tycli loads re2js on first use', () => {
  it('a parameter pattern is checked on the linear-time engine at tool add and at run; a backreference is refused at add', async () => {
    const h = join(tmp, 'home');
    expect((await tycli(['--home', h, 'tool', 'add', await patternTool('coded', '^[A-Z]{2}-\\d+$')])).code).toBe(0);
    expect(
      oneLine(await tycli(['--home', h, '--sandbox', 'off', 'run', 'coded', '--args', '{"code":"AB-12"}', '--json'])),
    ).toMatchObject({ ok: true, result: 5 });
    const bad = await tycli(['--home', h, '--sandbox', 'off', 'run', 'coded', '--args', '{"code":"ab-12"}', '--json']);
    expect(bad.code).toBe(2);
    expect(oneLine(bad)).toMatchObject({
      ok: false,
      error: { code: 'E_INVALID_ARGS', message: expect.stringContaining('/code') },
    });
    const refused = await tycli(['--home', h, 'tool', 'add', await patternTool('backref', '^(a)\\1$'), '--json']);
    expect(refused.code).toBe(2);
    expect(oneLine(refused)).toMatchObject({
      ok: false,
      error: { code: 'E_INVALID_MANIFEST', message: expect.stringContaining('backreference') },
    });
  });
});

describe('the bundled command line', () => {
  it('names no absolute path of the checkout it was built in (the same sources give the same bundle in any folder)', async () => {
    const { readFile } = await import('node:fs/promises');
    const text = await readFile(join(ROOT, 'dist', 'cli', 'tycli.cjs'), 'utf8');
    expect(text.includes(ROOT)).toBe(false);
  });
});
