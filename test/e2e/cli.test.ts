// End-to-end tests of the tycli command line as a user drives it (built dist/, temp homes); test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { cidOfBytes } from '../../core/revisions/cid.js';
import { oneLine, runProcess, type Ran } from './helpers.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'tycli.mjs');
let tmp: string;

/**
 * Run `node bin/tycli.mjs ARGS` with a clean environment (plus `env`) in a new session (setsid: no
 * controlling terminal, so nothing can ask the person running the tests); never throws for a non-zero exit.
 */
function tycli(args: string[], opts: { env?: Record<string, string>; cwd?: string } = {}): Promise<Ran> {
  return runProcess(
    process.execPath,
    [BIN, ...args],
    { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp, ...opts.env },
    opts.cwd ?? tmp,
  );
}

async function manifest(
  dir: string,
  name: string,
  source: string,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const file = join(dir, `${name}-${Math.random().toString(36).slice(2)}.json`);
  const params = { type: 'object', properties: { x: { type: 'number' } }, additionalProperties: false };
  await writeFile(
    file,
    JSON.stringify({
      name,
      description: `test tool ${name}`,
      parameters: params,
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
      ...extra,
    }),
  );
  return file;
}

const home = (n: string) => join(tmp, `home-${n}`);

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist', 'node', 'cli', 'main.js')))
    throw new Error('dist/ is missing: run `npm run build` before the e2e tests');
  tmp = await mkdtemp(join(tmpdir(), 'tycli-e2e-'));
});
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('tycli tool add/list/show/activate', () => {
  it('adds the example tools, prints the revision id, lists and shows them', async () => {
    const h = home('basic');
    const add = await tycli(['--home', h, 'tool', 'add', join(ROOT, 'tools/csv-stats/manifest.json')]);
    expect(add.code).toBe(0);
    const rev = add.stdout.trim();
    expect(rev).toMatch(/^b[a-z2-7]{50,}$/);
    expect(add.stderr).toContain('(active)');
    const again = await tycli(['--home', h, '--json', 'tool', 'add', join(ROOT, 'tools/csv-stats/manifest.json')]);
    expect(oneLine(again)).toEqual({
      ok: true,
      name: 'csv-stats',
      revision: rev,
      created: false,
      activated: false,
      repaired: false,
    });
    expect((await tycli(['--home', h, 'tool', 'add', join(ROOT, 'tools/text-stats/manifest.json')])).code).toBe(0);

    const list = await tycli(['--home', h, 'tool', 'list', '--json']);
    expect(list.code).toBe(0);
    // Built-ins (the native python tool, when python3 is on PATH) are not installed tools.
    const rows = (oneLine(list).tools as { name: string; builtin?: boolean }[]).filter((r) => r.builtin !== true);
    expect(rows.map((r) => r.name)).toEqual(['csv-stats', 'text-stats']);
    expect(rows[0]).toEqual({ name: 'csv-stats', active: rev, revisions: [rev] });

    const show = oneLine(await tycli(['--home', h, 'tool', 'show', `csv-stats@${rev}`, '--json']));
    expect(show).toMatchObject({ ok: true, name: 'csv-stats', revision: rev, active: true });
    const source = await readFile(join(ROOT, 'tools/csv-stats/index.mjs'), 'utf8');
    expect((show.manifest as { execution: { source: string } }).execution.source).toBe(source);
    const human = await tycli(['--home', h, 'tool', 'show', 'csv-stats']);
    expect(human.stdout).toContain(`revision:     ${rev.slice(9, 21)} (active)`);
  });

  it('same manifest -> same revision id in two separate homes; any change, source included -> another id', async () => {
    const a = await tycli(['--home', home('id-a'), 'tool', 'add', join(ROOT, 'tools/json-reshape/manifest.json')]);
    const b = await tycli(['--home', home('id-b'), 'tool', 'add', join(ROOT, 'tools/json-reshape/manifest.json')]);
    expect(a.code).toBe(0);
    expect(a.stdout.trim()).toBe(b.stdout.trim());
    const copy = join(tmp, 'reshape-copy');
    await cp(join(ROOT, 'tools/json-reshape'), copy, { recursive: true });
    const c = await tycli(['--home', home('id-a'), 'tool', 'add', join(copy, 'manifest.json')]);
    expect(c.stdout.trim()).toBe(a.stdout.trim()); // the copy is the same manifest
    await writeFile(join(copy, 'index.mjs'), `${await readFile(join(copy, 'index.mjs'), 'utf8')}\n// one more line\n`);
    const d = await tycli(['--home', home('id-a'), 'tool', 'add', join(copy, 'manifest.json')]);
    expect(d.code).toBe(0);
    expect(d.stdout.trim()).not.toBe(a.stdout.trim());
    expect(d.stderr).toContain('not active'); // a new revision of a bound name waits for activation
  });

  it('refuses replacing an active binding without approval (E_APPROVAL_REQUIRED, exit 1); name@REV stays pinned', async () => {
    const h = home('activate');
    const v1 = (
      await tycli(['--home', h, 'tool', 'add', await manifest(tmp, 'ver', 'export default async () => "one"')])
    ).stdout.trim();
    const v2 = (
      await tycli(['--home', h, 'tool', 'add', await manifest(tmp, 'ver', 'export default async () => "two"')])
    ).stdout.trim();
    expect(v1).not.toBe(v2);
    expect(oneLine(await tycli(['--home', h, 'run', 'ver', '--json']))).toEqual({
      ok: true,
      revision: v1,
      result: 'one',
    });
    const refused = await tycli(['--home', h, 'tool', 'activate', 'ver', v2]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error\[E_APPROVAL_REQUIRED\]: .*--approve-replacement/);
    expect(oneLine(await tycli(['--home', h, 'run', 'ver', '--json']))).toEqual({
      ok: true,
      revision: v1,
      result: 'one',
    });
    expect((await tycli(['--home', h, 'tool', 'activate', 'ver', v2, '--approve-replacement'])).code).toBe(0);
    expect(oneLine(await tycli(['--home', h, 'run', 'ver', '--json']))).toEqual({
      ok: true,
      revision: v2,
      result: 'two',
    });
    expect(oneLine(await tycli(['--home', h, 'run', `ver@${v1}`, '--json']))).toEqual({
      ok: true,
      revision: v1,
      result: 'one',
    });
    const unknownRev = await tycli([
      '--home',
      h,
      'tool',
      'activate',
      'ver',
      'bagaaieraxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
    ]);
    expect(unknownRev.code).not.toBe(0);
  });

  it.each([
    ['not JSON', '{"name": nope', 'not valid JSON'],
    [
      'unknown field',
      JSON.stringify({
        name: 'x',
        description: '',
        parameters: { type: 'object' },
        execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 's' },
        extra: 1,
      }),
      'invalid manifest',
    ],
    [
      'bad parameters schema',
      JSON.stringify({
        name: 'x',
        description: '',
        parameters: { type: 'object', properties: { a: { $ref: 'https://example.com/s.json' } } },
        execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 's' },
      }),
      '$ref must point inside',
    ],
    [
      'no source',
      JSON.stringify({
        name: 'x',
        description: '',
        parameters: { type: 'object' },
        execution: { kind: 'sandboxed-code', runtime: 'javascript' },
      }),
      'needs "source"',
    ],
    [
      'sourceFile outside the folder',
      JSON.stringify({
        name: 'x',
        description: '',
        parameters: { type: 'object' },
        execution: { kind: 'sandboxed-code', runtime: 'javascript', sourceFile: '../outside.mjs' },
      }),
      'leaves the manifest',
    ],
  ])('tool add refuses a manifest with %s: E_INVALID_MANIFEST, exit 2, nothing stored', async (_n, text, msg) => {
    const dir = join(tmp, `bad-${Math.random().toString(36).slice(2)}`, 'in');
    await cp(join(ROOT, 'tools/csv-stats'), dir, { recursive: true });
    await writeFile(join(dir, '..', 'outside.mjs'), 'export default async () => 1');
    await writeFile(join(dir, 'bad.json'), text);
    const h = home(`bad-${Math.random().toString(36).slice(2)}`);
    const r = await tycli(['--home', h, 'tool', 'add', join(dir, 'bad.json')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error\[E_INVALID_MANIFEST\]: /);
    expect(r.stderr).toContain(msg);
    expect(r.stdout).toBe('');
    expect(existsSync(join(h, 'store', 'objects'))).toBe(false);
  });
});

describe('tycli run', () => {
  it('runs csv-stats on a file named with --arg-file; --json prints exactly one line', async () => {
    const h = home('run');
    const rev = (await tycli(['--home', h, 'tool', 'add', join(ROOT, 'tools/csv-stats/manifest.json')])).stdout.trim();
    const r = await tycli([
      '--home',
      h,
      'run',
      'csv-stats',
      '--arg-file',
      `csv=${join(ROOT, 'tools/examples/data/sales.csv')}`,
      '--args',
      '{"top":2}',
      '--json',
    ]);
    expect(r.code).toBe(0);
    const line = oneLine(r) as {
      ok: boolean;
      revision: string;
      result: { rows: number; columns: { name: string; sum?: number; median?: number }[] };
    };
    expect(line.ok).toBe(true);
    expect(line.revision).toBe(rev);
    expect(line.result.rows).toBe(12);
    expect(line.result.columns.find((c) => c.name === 'units')).toMatchObject({ sum: 108, median: 8, min: 2, max: 20 });
    // @file.json form, human output
    await writeFile(join(tmp, 'args.json'), JSON.stringify({ csv: 'a,b\n1,x\n3,y\n' }));
    const human = await tycli(['--home', h, 'run', 'csv-stats', '--args', `@${join(tmp, 'args.json')}`]);
    expect(human.code).toBe(0);
    expect(JSON.parse(human.stdout)).toMatchObject({
      rows: 2,
      columns: [
        { name: 'a', mean: 2 },
        { name: 'b', distinct: 2 },
      ],
    });
    // stdin form, in a disposable sandbox
    const piped = await runProcess(
      'bash',
      [
        '-c',
        `node ${JSON.stringify(BIN)} --home ${JSON.stringify(h)} run csv-stats --disposable --json --args @- < ${JSON.stringify(join(tmp, 'args.json'))}`,
      ],
      { PATH: process.env.PATH ?? '', HOME: tmp },
      tmp,
    );
    expect(oneLine(piped)).toMatchObject({ ok: true, revision: rev, result: { rows: 2 } });
  });

  it('the example script installs the three tools and prints csv-stats of the sample CSV', async () => {
    const r = await runProcess(
      'bash',
      [join(ROOT, 'tools/examples/run-example.sh')],
      { PATH: process.env.PATH ?? '', HOME: tmp, TYCLI_HOME: home('example') },
      tmp,
    );
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { rows: number; columns: { name: string; type: string }[] };
    expect(out.rows).toBe(12);
    expect(out.columns.map((c) => `${c.name}:${c.type}`)).toEqual([
      'date:text',
      'region:text',
      'product:text',
      'units:numeric',
      'unit_price:numeric',
      'note:text',
    ]);
    const list = await tycli(['--home', home('example'), 'tool', 'list', '--json']);
    expect(
      (oneLine(list).tools as { name: string; builtin?: boolean }[])
        .filter((r) => r.builtin !== true)
        .map((r) => r.name),
    ).toEqual(['csv-stats', 'json-reshape', 'text-stats']);
  });

  it('--logs shows what the tool writes with console.* on stderr, escaped; without it nothing is shown', async () => {
    const h = home('logs');
    const m = await manifest(
      tmp,
      'logger',
      "export default async () => { console.log('hello \\u001b[2J world'); console.error('bad'); return 1; }",
    );
    expect((await tycli(['--home', h, 'tool', 'add', m])).code).toBe(0);
    const withLogs = await tycli(['--home', h, 'run', 'logger', '--logs']);
    expect(withLogs.code).toBe(0);
    expect(withLogs.stdout.trim()).toBe('1');
    expect(withLogs.stderr).toContain('[tool info] hello \\x1b[2J world');
    expect(withLogs.stderr).toContain('[tool error] bad');
    expect(withLogs.stderr).not.toContain('\u001b');
    const without = await tycli(['--home', h, 'run', 'logger']);
    expect(without.code).toBe(0);
    expect(without.stderr).not.toContain('[tool');
  });

  it('runs a tool whose manifest picks the deno engine', async () => {
    const h = home('deno');
    await tycli([
      '--home',
      h,
      'tool',
      'add',
      await manifest(tmp, 'denotool', 'export default async (a) => ({ deno: typeof Deno === "object", x: a.x })', {}),
    ]);
    // `engine` is part of the manifest, hence of the revision id.
    const file = join(tmp, 'deno-engine.json');
    await writeFile(
      file,
      JSON.stringify({
        name: 'denotool',
        description: 'd',
        parameters: { type: 'object', properties: { x: { type: 'number' } }, additionalProperties: false },
        execution: {
          kind: 'sandboxed-code',
          runtime: 'javascript',
          engine: 'deno',
          source: 'export default async (a) => ({ deno: typeof Deno === "object", x: a.x })',
        },
      }),
    );
    const rev = (await tycli(['--home', h, 'tool', 'add', file])).stdout.trim();
    expect(oneLine(await tycli(['--home', h, 'run', 'denotool', '--args', '{"x":1}', '--json']))).toMatchObject({
      ok: true,
      result: { deno: false, x: 1 },
    });
    expect(oneLine(await tycli(['--home', h, 'run', `denotool@${rev}`, '--args', '{"x":2}', '--json']))).toEqual({
      ok: true,
      revision: rev,
      result: { deno: true, x: 2 },
    });
  });

  it.each([
    ['E_TIMEOUT', 'export default async () => { for (;;) {} }', ['--timeout', '600'], {}],
    ['E_OUTPUT_LIMIT', 'export default async () => "x".repeat(5000)', [], { limits: { outputBytes: 1000 } }],
    ['E_TOOL_FAILED', 'export default async () => { throw new Error("boom") }', [], {}],
    ['E_CAPABILITY_DENIED', 'export default async () => (await fetch("https://example.com/")).status', [], {}],
  ])('reports %s with exit 1', async (want, source, flags, extra) => {
    const h = home(`fail-${want}`);
    await tycli(['--home', h, 'tool', 'add', await manifest(tmp, 'failing', source, extra)]);
    const r = await tycli(['--home', h, 'run', 'failing', '--json', ...flags]);
    expect(r.code).toBe(1);
    const line = oneLine(r) as { ok: boolean; error: { code: string; message: string } };
    expect(line.ok).toBe(false);
    expect(line.error.code).toBe(want);
    expect(line.error.message).not.toMatch(/\/work\/|node_modules|at .*:\d+:\d+/);
    const human = await tycli(['--home', h, 'run', 'failing', ...flags]);
    expect(human.code).toBe(1);
    expect(human.stderr).toMatch(new RegExp(`^error\\[${want}\\]: `));
  });

  it('Ctrl-C (SIGINT) cancels a running call: E_ABORTED, exit 130, and tycli exits', async () => {
    const h = home('sigint');
    await tycli([
      '--home',
      h,
      'tool',
      'add',
      await manifest(tmp, 'spinner', 'export default async () => { for (;;) {} }'),
    ]);
    const child = spawn(process.execPath, [BIN, '--home', h, 'run', 'spinner', '--json', '--timeout', '60000'], {
      cwd: tmp,
      env: { PATH: process.env.PATH ?? '', HOME: tmp },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    await new Promise((r) => setTimeout(r, 1500));
    child.kill('SIGINT');
    const code = await exited;
    expect(code).toBe(130);
    expect(JSON.parse(stdout.trim())).toMatchObject({ ok: false, error: { code: 'E_ABORTED' } });
  });

  it('E_UNKNOWN_TOOL and E_USAGE exit 2', async () => {
    const h = home('usage');
    const unknown = await tycli(['--home', h, 'run', 'nothing-here']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^error\[E_UNKNOWN_TOOL\]: no tool named "nothing-here"/);
    const badCmd = await tycli(['--home', h, 'tool', 'ad', 'x.json']);
    expect(badCmd.code).toBe(2);
    expect(badCmd.stderr).toContain("did you mean 'tycli tool add'");
    const badFlag = await tycli(['--home', h, 'run', 'x', '--nope', '--json']);
    expect(badFlag.code).toBe(2);
    expect(oneLine(badFlag)).toMatchObject({ ok: false, error: { code: 'E_USAGE' } });
    expect((await tycli(['--home', h, 'run', 'x', '--timeout', '0'])).stderr).toMatch(/^error\[E_USAGE\]: --timeout/);
    expect((await tycli(['--home', h, 'run', 'x', '--arg-file', 'novalue'])).code).toBe(2);
    const twice = await tycli([
      '--home',
      h,
      'run',
      'x',
      '--args',
      '{"csv":"a"}',
      '--arg-file',
      `csv=${join(ROOT, 'tools/examples/data/sales.csv')}`,
    ]);
    expect(twice.stderr).toMatch(
      /^error\[E_USAGE\]: --arg-file sets "csv", which --args or another --arg-file already sets/,
    );
    expect((await tycli(['--home', h, 'run', 'x', '--sandbox', 'maybe'])).stderr).toMatch(
      /^error\[E_USAGE\]: --sandbox/,
    );
    expect((await tycli(['--home', h, 'tool', 'add', join(tmp, 'missing.json')])).stderr).toMatch(
      /^error\[E_USAGE\]: cannot read manifest/,
    );
    const help = await tycli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('tool add');
    expect(help.stdout).toContain('run ');
  });

  it('tool code is wrapped by the OS sandbox by default (no host network); --sandbox off is the engine alone', async () => {
    const { probeSandbox } = await import('../../node/os-sandbox/probe.js');
    const probe = await probeSandbox();
    const server = createServer((sock) => {
      sock.on('error', () => undefined); // a peer reset is not what this test is about
      sock.end('hello');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const h = home('os');
      const src = `export default async ({ port }) => { const net = await import('node:net'); const os = await import('node:os');
        const r = await new Promise((res) => { const s = net.connect(port, '127.0.0.1'); s.on('connect', () => { s.destroy(); res('connected'); }); s.on('error', (e) => res('error:' + e.code)); });
        return { net: r, host: os.hostname() }; }`;
      const file = join(tmp, 'netprobe.json');
      await writeFile(
        file,
        JSON.stringify({
          name: 'netprobe',
          description: 'tries the host network',
          parameters: {
            type: 'object',
            properties: { port: { type: 'integer' } },
            required: ['port'],
            additionalProperties: false,
          },
          execution: { kind: 'sandboxed-code', runtime: 'javascript', source: src },
        }),
      );
      await tycli(['--home', h, 'tool', 'add', file]);
      const args = JSON.stringify({ port });
      const wrapped = await tycli(['--home', h, 'run', 'netprobe', '--args', args, '--json']);
      const off = await tycli(['--home', h, 'run', 'netprobe', '--args', args, '--json', '--sandbox', 'off']);
      // Without the OS layer the engine's permission model does not stop the network: that is why `auto` wraps.
      expect(oneLine(off)).toMatchObject({ ok: true, result: { net: 'connected' } });
      expect(off.stderr).toBe('');
      if (probe.available) {
        expect(oneLine(wrapped)).toMatchObject({
          ok: true,
          result: { net: expect.stringMatching(/^error:/), host: 'tysandbox' },
        });
        expect(wrapped.stderr).toBe('');
      } else {
        expect(wrapped.stderr).toContain('warning: no OS-level sandbox');
        const req = await tycli(['--home', h, 'run', 'netprobe', '--args', args, '--json', '--sandbox', 'required']);
        expect(req.code).toBe(1);
        expect(oneLine(req)).toMatchObject({ ok: false, error: { code: 'E_SANDBOX_UNAVAILABLE' } });
      }
    } finally {
      server.close();
    }
  });

  it('external-service tools go to the MCP bridge: an undefined server is E_UNKNOWN_TOOL, before anything is contacted', async () => {
    const h = home('ext');
    const file = join(tmp, 'ext.json');
    await writeFile(
      file,
      JSON.stringify({
        name: 'remote',
        description: 'bridged',
        parameters: { type: 'object', additionalProperties: false },
        execution: { kind: 'external-service', serviceId: 'nosuchserver', tool: 'echo' },
      }),
    );
    expect((await tycli(['--home', h, 'tool', 'add', file])).code).toBe(0);
    const r = await tycli(['--home', h, 'run', 'remote', '--json']);
    expect(r.code).toBe(2);
    expect(oneLine(r)).toMatchObject({
      ok: false,
      error: { code: 'E_UNKNOWN_TOOL', message: expect.stringContaining('no MCP server "nosuchserver"') },
    });
    expect(oneLine(await tycli(['--home', h, 'run', 'remote', '--args', '{"x":1}', '--json']))).toMatchObject({
      ok: false,
      error: { code: 'E_INVALID_ARGS' },
    });
  });

  it('E_INTEGRITY when a stored revision was altered on disk (exit 1, nothing runs)', async () => {
    const h = home('tamper');
    const rev = (
      await tycli(['--home', h, 'tool', 'add', await manifest(tmp, 'tamper', 'export default async () => "original"')])
    ).stdout.trim();
    const file = join(h, 'store', 'objects', rev);
    const text = await readFile(file, 'utf8');
    await writeFile(file, text.replace('original', 'evil!!!!'));
    const r = await tycli(['--home', h, 'run', 'tamper', '--json']);
    expect(r.code).toBe(1);
    expect(oneLine(r)).toMatchObject({ ok: false, error: { code: 'E_INTEGRITY' } });
    expect((await tycli(['--home', h, 'tool', 'show', 'tamper'])).stderr).toMatch(/^error\[E_INTEGRITY\]/);
  });

  it('several tycli processes adding and activating on one store at once never corrupt it', async () => {
    const h = home('concurrent');
    const n = 6;
    const files = await Promise.all(
      Array.from({ length: n }, (_, i) => manifest(tmp, 'shared', `export default async () => ${i}`)),
    );
    const adds = await Promise.all(files.map((f) => tycli(['--home', h, 'tool', 'add', f, '--json'])));
    for (const a of adds) expect(a.code, a.stderr).toBe(0);
    const revs = adds.map((a) => (oneLine(a) as { revision: string }).revision);
    expect(new Set(revs).size).toBe(n);
    expect(adds.filter((a) => (oneLine(a) as { activated: boolean }).activated)).toHaveLength(1);
    const acts = await Promise.all(
      revs.map((r) => tycli(['--home', h, 'tool', 'activate', 'shared', r, '--approve-replacement'])),
    );
    for (const a of acts) expect(a.code, a.stderr).toBe(0);
    // Every record parses, every object re-hashes to its name, the binding lists every revision once.
    const binding = JSON.parse(await readFile(join(h, 'store', 'bindings', 'shared'), 'utf8')) as {
      active: string;
      revisions: string[];
    };
    expect([...binding.revisions].sort()).toEqual([...revs].sort());
    expect(revs).toContain(binding.active);
    const objects = await readdir(join(h, 'store', 'objects'));
    expect(objects.sort()).toEqual([...revs].sort());
    for (const o of objects)
      expect(await cidOfBytes(new Uint8Array(await readFile(join(h, 'store', 'objects', o))))).toBe(o);
    expect(await readdir(join(h, 'store', '.locks'))).toEqual([]);
    expect(await readdir(join(h, 'store', '.tmp'))).toEqual([]);
    const run = oneLine(await tycli(['--home', h, 'run', 'shared', '--json']));
    expect(run).toMatchObject({ ok: true, revision: binding.active, result: revs.indexOf(binding.active) });
  });
});
