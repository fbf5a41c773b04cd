// The quickjs engine through tycli (built dist/, temp homes, bubblewrap required): tool add --engine, the revision it
// makes, run, the limits, and what sandbox status says; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, ROOT, oneLine, runProcess, type Ran } from './helpers.js';
import { probeSandbox } from '../../node/os-sandbox/probe.js';

const PATH = process.env.PATH ?? '/usr/bin:/bin';
let tmp: string;
const tycli = (args: string[]): Promise<Ran> => runProcess(process.execPath, [BIN, ...args], { PATH, HOME: tmp }, tmp);

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist', 'quickjs', 'sandbox-host.cjs')))
    throw new Error('dist/ is missing: run `npm run build` before the e2e tests');
  tmp = await mkdtemp(join(tmpdir(), 'tycli-quickjs-e2e-'));
});
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe.skipIf(!(await probeSandbox()).available)('tycli with the quickjs engine', () => {
  const home = () => join(tmp, 'home');

  it('tool add --engine quickjs makes another revision than the node one; run gives the node answer', async () => {
    const node = await tycli(['--home', home(), 'tool', 'add', join(ROOT, 'tools', 'csv-stats'), '--json']);
    const qjs = await tycli([
      '--home',
      home(),
      'tool',
      'add',
      join(ROOT, 'tools', 'csv-stats'),
      '--engine',
      'quickjs',
      '--json',
    ]);
    expect(qjs.code, qjs.stderr).toBe(0);
    const [a, b] = [oneLine(node), oneLine(qjs)];
    expect(b.revision).not.toBe(a.revision);
    const show = oneLine(await tycli(['--home', home(), 'tool', 'show', `csv-stats@${b.revision}`, '--json']));
    expect(JSON.stringify(show)).toContain('"engine":"quickjs"');
    const csv = join(ROOT, 'tools', 'examples', 'data', 'sales.csv');
    const run = async (rev: unknown) =>
      tycli([
        '--home',
        home(),
        '--sandbox',
        'required',
        'run',
        `csv-stats@${String(rev)}`,
        '--arg-file',
        `csv=${csv}`,
        '--json',
      ]);
    const [rn, rq] = [await run(a.revision), await run(b.revision)];
    expect(rq.code, rq.stderr).toBe(0);
    expect(oneLine(rq).result).toEqual(oneLine(rn).result);
  });

  it('a memory bomb and an endless loop fail with their codes; the next call answers', async () => {
    const dir = join(tmp, 'bomb');
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, 'manifest.json'),
      JSON.stringify({
        name: 'bomb',
        description: 'misbehaves on request',
        parameters: { type: 'object', properties: { mode: { type: 'string' } }, additionalProperties: false },
        execution: {
          kind: 'sandboxed-code',
          runtime: 'javascript',
          engine: 'quickjs',
          source:
            "export default async ({ mode }) => { if (mode === 'memory') { const a = []; for (;;) a.push(new Array(1e6).fill(1)); } if (mode === 'loop') for (;;) {} return 'ok'; }",
        },
        limits: { memoryMb: 32, timeoutMs: 30000 },
      }),
    );
    expect((await tycli(['--home', home(), 'tool', 'add', dir])).code).toBe(0);
    const call = (mode: string, extra: string[] = []) =>
      tycli([
        '--home',
        home(),
        '--sandbox',
        'required',
        'run',
        'bomb',
        '--args',
        JSON.stringify({ mode }),
        '--json',
        ...extra,
      ]);
    const mem = oneLine(await call('memory'));
    expect((mem.error as { code: string }).code).toBe('E_MEMORY_LIMIT');
    const loop = oneLine(await call('loop', ['--timeout', '3000']));
    expect((loop.error as { code: string }).code).toBe('E_TIMEOUT');
    expect(oneLine(await call('fine')).result).toBe('ok');
  });

  it('refuses --engine quickjs for a Python tool and an unknown engine', async () => {
    const dir = join(tmp, 'py');
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, 'manifest.json'),
      JSON.stringify({
        name: 'py',
        description: '',
        parameters: { type: 'object' },
        execution: { kind: 'sandboxed-code', runtime: 'python', source: 'def main(a, c):\n    return 1\n' },
      }),
    );
    const r = await tycli(['--home', home(), 'tool', 'add', dir, '--engine', 'quickjs', '--json']);
    expect(r.code).not.toBe(0);
    expect((oneLine(r).error as { code: string }).code).toBe('E_INVALID_MANIFEST');
    const u = await tycli(['--home', home(), 'tool', 'add', dir, '--engine', 'v8']);
    expect(u.code).not.toBe(0);
    expect(u.stderr).toMatch(/--engine takes node, deno or quickjs/);
  });

  it('sandbox status names the QuickJS binary, checked, and the sandbox host', async () => {
    const s = await tycli(['sandbox', 'status', '--json']);
    const q = oneLine(s).quickjs as Record<string, unknown>;
    expect(q).toMatchObject({ available: true, version: 'QuickJS 2025-09-13', wasm: { verified: true } });
    expect(String(q.host)).toMatch(/dist\/quickjs\/sandbox-host\.cjs$/);
    expect((await tycli(['sandbox', 'status'])).stdout).toMatch(/^quickjs: {3}QuickJS 2025-09-13 .*sha-256 checked/m);
  });
});
