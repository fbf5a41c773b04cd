// End-to-end tests of multi-file tools: bundling at add time, refused imports, syntax errors, stack traces to the
// source; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { oneLine, runProcess, type Ran } from './helpers.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'tycli.mjs');
let tmp: string;

function tycli(args: string[], cwd = tmp): Promise<Ran> {
  return runProcess(process.execPath, [BIN, ...args], { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp }, cwd);
}

const INDEX = `import { classify } from './lib/classify.mjs';
import { shout } from './lib/text.mjs';

export default async ({ ip }) => {
  if (ip === 'log') {
    try { classify('boom'); } catch (e) { console.error(e); }
    return 'logged';
  }
  return { ...classify(ip), label: shout(ip) };
};
`;
const CLASSIFY = `import ipaddr from 'ipaddr.js';

export function classify(ip) {
  if (ip === 'boom') {
    throw new Error(\`cannot classify \${ip}\`);
  }
  const a = ipaddr.parse(ip);
  return { kind: a.kind(), range: a.range() };
}
`;

/**
 * A tool folder: two modules of its own (plus one helper), one npm dependency (ipaddr.js, copied from this repo's
 * node_modules) with a lockfile.
 */
async function toolFolder(dir: string, engine?: 'deno'): Promise<string> {
  await mkdir(join(dir, 'lib'), { recursive: true });
  await mkdir(join(dir, 'node_modules'), { recursive: true });
  await cp(join(ROOT, 'node_modules', 'ipaddr.js'), join(dir, 'node_modules', 'ipaddr.js'), { recursive: true });
  const rootLock = JSON.parse(await readFile(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version: string; integrity: string }>;
  };
  const dep = rootLock.packages['node_modules/ipaddr.js']!;
  await writeFile(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'ipinfo-tool', private: true, dependencies: { 'ipaddr.js': dep.version } }),
  );
  await writeFile(
    join(dir, 'package-lock.json'),
    JSON.stringify({
      name: 'ipinfo-tool',
      lockfileVersion: 3,
      packages: { '': { dependencies: { 'ipaddr.js': dep.version } }, 'node_modules/ipaddr.js': dep },
    }),
  );
  await writeFile(join(dir, 'index.mjs'), INDEX);
  await writeFile(join(dir, 'lib', 'classify.mjs'), CLASSIFY);
  await writeFile(join(dir, 'lib', 'text.mjs'), 'export const shout = (s) => `${s}!`;\n');
  const params = {
    type: 'object',
    properties: { ip: { type: 'string' } },
    required: ['ip'],
    additionalProperties: false,
  };
  await writeFile(
    join(dir, 'manifest.json'),
    JSON.stringify({
      name: engine ? 'ipinfo-deno' : 'ipinfo',
      description: 'Classifies an IP address.',
      parameters: params,
      execution: {
        kind: 'sandboxed-code',
        runtime: 'javascript',
        sourceFile: 'index.mjs',
        ...(engine ? { engine } : {}),
      },
    }),
  );
  return join(dir, 'manifest.json');
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'tycli-multi-'));
});
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('multi-file tools with npm dependencies', () => {
  it('are bundled at add time; the revision records every input and package; the same inputs give the same id anywhere', async () => {
    const h = join(tmp, 'home-a');
    const m = await toolFolder(join(tmp, 'tool-a'));
    const add = await tycli(['--home', h, 'tool', 'add', m]);
    expect(add.code, add.stderr).toBe(0);
    const rev = add.stdout.trim();
    const run = oneLine(await tycli(['--home', h, '--json', 'run', 'ipinfo', '--args', '{"ip":"10.1.2.3"}']));
    expect(run).toEqual({ ok: true, revision: rev, result: { kind: 'ipv4', range: 'private', label: '10.1.2.3!' } });

    const show = await tycli(['--home', h, '--json', 'tool', 'show', 'ipinfo']);
    expect(show.stdout).not.toContain(tmp); // no absolute path anywhere in the revision
    const exec = (
      oneLine(show).manifest as {
        execution: {
          source: string;
          bundle: {
            entry: string;
            bundler: string;
            inputs: { path: string; bytes: number; integrity: string }[];
            packages: unknown[];
            sourceMap: string;
          };
        };
      }
    ).execution;
    expect(exec.bundle.entry).toBe('index.mjs');
    expect(exec.bundle.bundler).toMatch(/^esbuild \d+\.\d+\.\d+$/);
    expect(exec.bundle.inputs.map((i) => i.path)).toEqual([
      'index.mjs',
      'lib/classify.mjs',
      'lib/text.mjs',
      'node_modules/ipaddr.js/lib/ipaddr.js',
    ]);
    const classify = exec.bundle.inputs[1]!;
    const { createHash } = await import('node:crypto');
    expect(classify).toEqual({
      path: 'lib/classify.mjs',
      bytes: Buffer.byteLength(CLASSIFY),
      integrity: `sha256-${createHash('sha256').update(CLASSIFY).digest('base64')}`,
    });
    const lock = JSON.parse(await readFile(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version: string; integrity: string }>;
    };
    expect(exec.bundle.packages).toEqual([
      {
        name: 'ipaddr.js',
        version: lock.packages['node_modules/ipaddr.js']!.version,
        path: 'node_modules/ipaddr.js',
        integrity: lock.packages['node_modules/ipaddr.js']!.integrity,
      },
    ]);
    expect(JSON.parse(exec.bundle.sourceMap).sources.sort()).toEqual([
      'index.mjs',
      'lib/classify.mjs',
      'lib/text.mjs',
      'node_modules/ipaddr.js/lib/ipaddr.js',
    ]);
    expect(exec.source).not.toMatch(/\bimport\b.*from/);

    // Another folder (another absolute path), another home: the same revision id.
    const m2 = await toolFolder(join(tmp, 'elsewhere', 'deeper', 'tool-b'));
    const add2 = await tycli(['--home', join(tmp, 'home-b'), 'tool', 'add', m2], join(tmp, 'elsewhere'));
    expect(add2.stdout.trim()).toBe(rev);
    // Any input changing changes the id.
    await writeFile(
      join(tmp, 'elsewhere', 'deeper', 'tool-b', 'lib', 'text.mjs'),
      'export const shout = (s) => `${s}!!`;\n',
    );
    expect((await tycli(['--home', join(tmp, 'home-b'), 'tool', 'add', m2])).stdout.trim()).not.toBe(rev);
  });

  it('refuses Node built-ins, imports outside the folder and missing packages at add time, naming the import', async () => {
    const dir = join(tmp, 'tool-bad');
    const m = await toolFolder(dir);
    const h = join(tmp, 'home-bad');
    const cases: [string, RegExp][] = [
      [
        "import fs from 'node:fs';\nexport const shout = () => fs;\n",
        /^error\[E_INVALID_MANIFEST\]: lib\/text\.mjs:1:16: import of the Node built-in "node:fs"/,
      ],
      [
        "import { spawn } from 'child_process';\nexport const shout = () => spawn;\n",
        /lib\/text\.mjs:1:23: import of the Node built-in "child_process"/,
      ],
      [
        "import x from '../../outside.mjs';\nexport const shout = () => x;\n",
        /lib\/text\.mjs:1:15: import of "\.\.\/\.\.\/outside\.mjs" \(from lib\/text\.mjs\) resolves outside the tool's folder/,
      ],
      ["import x from 'left-pad';\nexport const shout = () => x;\n", /lib\/text\.mjs:1:15: cannot resolve "left-pad"/],
    ];
    await writeFile(join(tmp, 'outside.mjs'), 'export default 1;\n');
    for (const [text, want] of cases) {
      await writeFile(join(dir, 'lib', 'text.mjs'), text);
      const r = await tycli(['--home', h, 'tool', 'add', m]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(want);
    }
    // A symlink leading out of the folder is outside too.
    const { symlink } = await import('node:fs/promises');
    await symlink(join(tmp, 'outside.mjs'), join(dir, 'lib', 'link.mjs'));
    await writeFile(join(dir, 'lib', 'text.mjs'), "import x from './link.mjs';\nexport const shout = () => x;\n");
    expect((await tycli(['--home', h, 'tool', 'add', m])).stderr).toMatch(
      /import of "\.\/link\.mjs" \(from lib\/text\.mjs\) resolves outside/,
    );
    expect((await tycli(['--home', h, 'tool', 'list', '--revisions', '--json'])).stdout).toBe(
      '{"ok":true,"revisions":[]}\n',
    );
  });

  it('refuses source that does not parse: E_INVALID_MANIFEST naming file:line:column and the parser message', async () => {
    const dir = join(tmp, 'tool-syntax');
    const m = await toolFolder(dir);
    const h = join(tmp, 'home-syntax');
    await writeFile(join(dir, 'lib', 'text.mjs'), 'export const shout = (s) => {\n  return s +;\n};\n');
    const r = await tycli(['--home', h, 'tool', 'add', m]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('error[E_INVALID_MANIFEST]: lib/text.mjs:2:13: syntax error: Unexpected ";"\n');
    // A single-file tool, and inline source in the manifest.
    const single = join(tmp, 'single');
    await mkdir(single, { recursive: true });
    await writeFile(join(single, 'tool.mjs'), 'export default async () => {\n  const x = ;\n};\n');
    await writeFile(
      join(single, 'manifest.json'),
      JSON.stringify({
        name: 'single',
        description: 'd',
        parameters: { type: 'object' },
        execution: { kind: 'sandboxed-code', runtime: 'javascript', sourceFile: 'tool.mjs' },
      }),
    );
    expect((await tycli(['--home', h, 'tool', 'add', join(single, 'manifest.json')])).stderr).toBe(
      'error[E_INVALID_MANIFEST]: tool.mjs:2:13: syntax error: Unexpected ";"\n',
    );
    await writeFile(
      join(single, 'inline.json'),
      JSON.stringify({
        name: 'inline',
        description: 'd',
        parameters: { type: 'object' },
        execution: {
          kind: 'sandboxed-code',
          runtime: 'javascript',
          source: 'export default async () => {\n  retrun 1;\n};',
        },
      }),
    );
    const j = oneLine(await tycli(['--home', h, '--json', 'tool', 'add', join(single, 'inline.json')]));
    expect(j).toEqual({
      ok: false,
      error: { code: 'E_INVALID_MANIFEST', message: 'execution.source:2:10: syntax error: Expected ";" but found "1"' },
    });
    expect((await tycli(['--home', h, 'tool', 'list', '--revisions', '--json'])).stdout).toBe(
      '{"ok":true,"revisions":[]}\n',
    );
  });
});

describe('stack traces point at the source', () => {
  for (const engine of [undefined, 'deno'] as const) {
    it(`a thrown error shows the tool's own frames as file:line:column, never host frames (${engine ?? 'node'})`, async () => {
      const h = join(tmp, `home-stack-${engine ?? 'node'}`);
      const m = await toolFolder(join(tmp, `tool-stack-${engine ?? 'node'}`), engine);
      const name = engine ? 'ipinfo-deno' : 'ipinfo';
      expect((await tycli(['--home', h, 'tool', 'add', m])).code).toBe(0);
      const r = await tycli(['--home', h, 'run', name, '--args', '{"ip":"boom"}']);
      expect(r.code).toBe(1);
      // the tool's own message and frames under "tool: " (a tool cannot print a line that passes for the host's)
      expect(r.stderr).toBe(
        `error[E_TOOL_FAILED]: ${name} failed with its own error; what it said follows, each line marked "tool:"\n` +
          'tool: Error: cannot classify boom\ntool:     at classify (lib/classify.mjs:5:11)\n' +
          'tool:     at default (index.mjs:9:15)\n',
      );
      const j = oneLine(await tycli(['--home', h, '--json', 'run', name, '--args', '{"ip":"boom"}']));
      expect(j).toMatchObject({
        ok: false,
        error: {
          code: 'E_TOOL_FAILED',
          message: 'Error: cannot classify boom',
          frames: [
            { function: 'classify', file: 'lib/classify.mjs', line: 5, column: 11 },
            { function: 'default', file: 'index.mjs', line: 9, column: 15 },
          ],
        },
      });
      const logs = await tycli(['--home', h, 'run', name, '--logs', '--args', '{"ip":"log"}']);
      expect(logs.code, logs.stderr).toBe(0);
      expect(logs.stderr).toContain('Error: cannot classify boom');
      expect(logs.stderr).toContain('at classify (lib/classify.mjs:5:11)');
      expect(logs.stderr).toContain('at default (index.mjs:6:11)');
      for (const out of [r.stderr, JSON.stringify(j), logs.stderr]) {
        expect(out).not.toMatch(/file:\/\/|node:internal|sandbox-runner|guest-core|tysandbox:\/\/|data:text/);
        expect(out).not.toContain(tmp);
      }
    });
  }
});
