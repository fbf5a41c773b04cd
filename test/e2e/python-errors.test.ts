// End-to-end: a Python tool that raises gets E_TOOL_FAILED with `TYPE: message` and its own frames as file:line:column
// of its source file, never host frames; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { oneLine, runProcess, type Ran } from './helpers.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'tycli.mjs');
let tmp: string;

function tycli(args: string[]): Promise<Ran> {
  return runProcess(
    process.execPath,
    [BIN, ...args],
    { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp },
    tmp,
    180_000,
  );
}

const SOURCE = [
  'import json',
  '',
  'def ratio(a, b):',
  '    return a / b',
  '',
  'async def main(args, ctx):',
  '    if args.get("secret"):',
  '        return await ctx.get_secret("NOPE")',
  '    if args.get("bad"):',
  '        json.loads("{")',
  '    return ratio(1, args["x"])',
  '',
].join('\n');

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'tycli-pyerr-'));
  const dir = join(tmp, 'tool');
  await mkdir(join(dir, 'src'), { recursive: true });
  await writeFile(join(dir, 'src', 'ratio.py'), SOURCE);
  await writeFile(
    join(dir, 'manifest.json'),
    JSON.stringify({
      name: 'ratio',
      description: 'divides',
      parameters: {
        type: 'object',
        properties: { x: { type: 'number' }, bad: { type: 'boolean' }, secret: { type: 'boolean' } },
      },
      capabilities: { secrets: ['NOPE'] },
      execution: { kind: 'sandboxed-code', runtime: 'python', sourceFile: 'src/ratio.py' },
    }),
  );
  await writeFile(
    join(dir, 'module.py'),
    'x = 1\nraise RuntimeError("broken at import")\n\ndef main(args, ctx):\n    return x\n',
  );
  await writeFile(
    join(dir, 'module.json'),
    JSON.stringify({
      name: 'broken',
      description: 'raises at import',
      parameters: { type: 'object' },
      execution: { kind: 'sandboxed-code', runtime: 'python', sourceFile: 'module.py' },
    }),
  );
});
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('Python tool errors', () => {
  it('a raising Python tool gets E_TOOL_FAILED with its own frames in its own file (innermost first), no traceback text, no host frames; the text form shows them', async () => {
    const h = join(tmp, 'h');
    const add = await tycli(['--home', h, 'tool', 'add', join(tmp, 'tool', 'manifest.json')]);
    expect(add.code, add.stderr).toBe(0);
    const r = oneLine(await tycli(['--home', h, '--json', 'run', 'ratio', '--args', '{"x":0}']));
    expect(r).toEqual({
      ok: false,
      error: {
        code: 'E_TOOL_FAILED',
        message: 'ZeroDivisionError: division by zero',
        frames: [
          { function: 'ratio', file: 'src/ratio.py', line: 4, column: 12 },
          { function: 'main', file: 'src/ratio.py', line: 11, column: 12 },
        ],
      },
    });
    // A frame inside the standard library is not the tool's: only the tool's own line is reported.
    const lib = oneLine(await tycli(['--home', h, '--json', 'run', 'ratio', '--args', '{"x":1,"bad":true}']));
    expect(lib.error).toMatchObject({
      code: 'E_TOOL_FAILED',
      message: expect.stringMatching(/^JSONDecodeError: /),
      frames: [{ function: 'main', file: 'src/ratio.py', line: 10 }],
    });
    expect(JSON.stringify(lib)).not.toMatch(/Traceback|\/lib\/python|_pyodide|site-packages|<tool>|tysandbox:/);
    // An uncaught capability refusal is reported as the host's refusal (as for a JavaScript tool).
    const sec = oneLine(await tycli(['--home', h, '--json', 'run', 'ratio', '--args', '{"secret":true}']));
    expect(sec.error).toMatchObject({ code: 'E_SECRET_DENIED' });
    const text = await tycli(['--home', h, 'run', 'ratio', '--args', '{"x":0}']);
    expect(text.stderr).toContain(
      'error[E_TOOL_FAILED]: ratio failed with its own error; what it said follows, each line marked "tool:"\n' +
        'tool: ZeroDivisionError: division by zero\ntool:     at ratio (src/ratio.py:4:12)\n' +
        'tool:     at main (src/ratio.py:11:12)\n',
    );
  }, 180_000);

  it('an exception at import time names the module line', async () => {
    const h = join(tmp, 'h2');
    expect((await tycli(['--home', h, 'tool', 'add', join(tmp, 'tool', 'module.json')])).code).toBe(0);
    const r = oneLine(await tycli(['--home', h, '--json', 'run', 'broken']));
    expect(r.error).toMatchObject({
      code: 'E_TOOL_FAILED',
      message: 'RuntimeError: broken at import',
      frames: [{ function: '<module>', file: 'module.py', line: 2, column: 1 }],
    });
  }, 180_000);
});
