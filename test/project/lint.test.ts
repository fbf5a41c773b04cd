// `npm run lint` (Biome, dependency-cruiser, line width) holds on this tree and fails on each kind of planted defect:
// an import cycle, node:fs or a host global in core/, protocol/ importing core/, innerHTML in browser/, eval on the
// trusted side, a 200-column line; test side.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..', '..');
let copy: string;

/** `npm run lint` in the copy: exit status and everything it printed. */
function lint(): { status: number | null; out: string } {
  const r = spawnSync('npm', ['run', '-s', 'lint'], { cwd: copy, encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** Run lint with `files` planted in the copy (removed afterwards). */
function withPlanted(files: Record<string, string>): { status: number | null; out: string } {
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(dirname(join(copy, p)), { recursive: true });
    writeFileSync(join(copy, p), text);
  }
  try {
    return lint();
  } finally {
    for (const p of Object.keys(files)) unlinkSync(join(copy, p));
  }
}

beforeAll(() => {
  copy = mkdtempSync(join(tmpdir(), 'tysandbox-lint-'));
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((f) => f !== '' && !f.startsWith('test/conformance/'));
  for (const f of files) {
    try {
      mkdirSync(dirname(join(copy, f)), { recursive: true });
      cpSync(join(ROOT, f), join(copy, f));
    } catch {
      /* listed but deleted in the work tree */
    }
  }
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
  // Biome and the width check ask git which files are the project's.
  execFileSync('git', ['init', '-q'], { cwd: copy });
  execFileSync('git', ['add', '-A'], { cwd: copy });
}, 120_000);
afterAll(() => rmSync(copy, { recursive: true, force: true }));

describe('npm run lint', () => {
  it('passes on this tree', () => {
    const r = lint();
    expect(r.status, r.out).toBe(0);
  });

  it('fails on an import cycle', () => {
    const r = withPlanted({
      'core/cycle-a.ts':
        "// planted; core.\nimport { b } from './cycle-b.js';\nexport const a = (): number => b + 1;\n",
      'core/cycle-b.ts':
        "// planted; core.\nimport { a } from './cycle-a.js';\nexport const b = 1;\nexport const c = a;\n",
    });
    expect(r.status).not.toBe(0);
    expect(r.out).toContain('no-cycles');
  });

  it('fails on a node:* import in core/', () => {
    const r = withPlanted({
      'core/planted-fs.ts':
        "// planted; core.\nimport { readFileSync } from 'node:fs';\nexport const f = readFileSync;\n",
    });
    expect(r.status).not.toBe(0);
    expect(r.out).toContain('core-and-protocol-never-import-node-builtins');
    expect(r.out).toContain('noRestrictedImports');
  });

  it('fails on a host global in core/', () => {
    const r = withPlanted({
      'core/planted-global.ts': '// planted; core.\nexport const home = (): unknown => process.env.HOME;\n',
    });
    expect(r.status).not.toBe(0);
    expect(r.out).toContain('noRestrictedGlobals');
  });

  it('fails on a protocol/ import of anything but zod and itself', () => {
    const r = withPlanted({
      'protocol/planted-core.ts': "// planted; protocol.\nexport { TyError } from '../core/errors.js';\n",
    });
    expect(r.status).not.toBe(0);
    expect(r.out).toContain('protocol-is-pure-data');
  });

  it('fails on innerHTML in browser/', () => {
    const r = withPlanted({
      'browser/planted-html.ts':
        '// planted; browser.\nexport function show(el: HTMLElement, text: string): void {\n  el.innerHTML = text;\n}\n',
    });
    expect(r.status).not.toBe(0);
    expect(r.out).toContain('HTML parsed from a string');
  });

  it('fails on code from a string on the trusted side', () => {
    const r = withPlanted({
      'node/planted-eval.ts': '// planted; node.\nexport const run = (s: string): unknown => new Function(s)();\n',
    });
    expect(r.status).not.toBe(0);
    expect(r.out).toContain('code from a string');
  });

  it('fails on a line of 200 columns', () => {
    const long = `// planted; node.\nexport const words = '${'word '.repeat(38)}';\n`;
    expect(long.split('\n')[1]!.length).toBeGreaterThanOrEqual(200);
    const r = withPlanted({ 'node/planted-long.ts': long });
    expect(r.status).not.toBe(0);
    expect(r.out).toContain('node/planted-long.ts:2');
  });

  it('fails on a comment over 120 columns and on unformatted code', () => {
    const r = withPlanted({
      'node/planted-comment.ts': `// planted; node. ${'a comment that goes on '.repeat(5)}\nexport const x = {a:1,b:[1,2,3]};\n`,
    });
    expect(r.status).not.toBe(0);
    expect(r.out).toContain('columns in a comment');
  });
});
