// What tycli says on common mistakes: bad tool names echoed safely, tool add usage, the "__" note, a pause naming
// `tycli resume`; test side.
import { describe, expect, it } from 'vitest';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliScratch } from './helpers.js';

const s = cliScratch('tycli-messages');

function manifest(name: string): Record<string, unknown> {
  return {
    name,
    description: 'doubles x',
    parameters: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] },
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async (a) => a.x * 2;' },
  };
}

async function file(name: string, m: Record<string, unknown>): Promise<string> {
  const f = join(s.dir, `${name}.json`);
  await writeFile(f, JSON.stringify(m));
  return f;
}

describe('tycli messages', () => {
  it('an invalid tool name is echoed, cut and terminal-safe', async () => {
    const home = join(s.dir, 'names');
    for (const bad of ['we ird', 'a.b', 'a/b', '../x', 'émoji']) {
      const r = await s.tycli([
        '--home',
        home,
        'tool',
        'add',
        await file(`bad-${bad.length}-${bad.charCodeAt(0)}`, manifest(bad)),
      ]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(
        `error[E_INVALID_MANIFEST]: invalid manifest at name: tool names are 1-64 characters of a-z, A-Z, 0-9, _ and - (got ${JSON.stringify(bad)})`,
      );
    }
    const hostile = `x\u001b[2J\u202e${'y'.repeat(100)}`;
    const r = await s.tycli(['--home', home, 'tool', 'add', await file('hostile', manifest(hostile))]);
    expect(r.code).toBe(2);
    expect(r.stderr).not.toMatch(/[\u001b\u202e]/);
    expect(r.stderr).toContain('(got "x\\u001b[2J\\u202e');
    expect(r.stderr).toContain('y…")');
    expect(r.stderr).not.toContain('y'.repeat(70));
  });

  it('tool add with two arguments names both accepted forms', async () => {
    const r = await s.tycli(['--home', join(s.dir, 'usage'), 'tool', 'add', 'a', 'b']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('error[E_USAGE]: tycli tool add takes exactly one MANIFEST.json or FOLDER (got 2)');
  });

  it('tool add of a name holding "__" notes that mcp serve will not offer it; a plain name gets no such note', async () => {
    const home = join(s.dir, 'sep');
    const dir = join(s.dir, 'sep-tool');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest('my__tool')));
    const r = await s.tycli(['--home', home, 'tool', 'add', dir]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(
      'note: "my__tool" contains "__", which MCP tool names reserve for SERVER__TOOL, so tycli mcp serve does not offer it',
    );
    const plain = await s.tycli(['--home', home, 'tool', 'add', await file('plain', manifest('my_tool'))]);
    expect(plain.code).toBe(0);
    expect(plain.stderr).not.toContain('note:');
    const json = await s.tycli(['--home', home, '--json', 'tool', 'add', join(dir, 'manifest.json')]);
    expect(json.stderr).toBe(''); // --json keeps stderr free of notes
  });

  it('a paused tool: the message says it once, and the command line names tycli resume NAME', async () => {
    const home = join(s.dir, 'pause');
    await s.add(home, await file('double', manifest('double')));
    const run = () => s.tycli(['--home', home, 'run', 'double', '--args', '{"x":1}', '--deny', 'tool(double)']);
    let last = '';
    for (let i = 0; i < 10; i++) last = (await run()).stderr;
    expect(last).toContain(
      '; too many refusals: calls to "double" are now paused until a person resumes them; resume with: tycli resume double',
    );
    const paused = await run();
    expect(paused.code).not.toBe(0);
    expect(paused.stderr.trim()).toBe(
      'error[E_PAUSED]: calls to "double" are paused after 10 refusals within 60 s, until a person resumes them; resume with: tycli resume double',
    );
    expect((await s.tycli(['--home', home, 'resume', 'double'])).code).toBe(0);
  }, 120_000);
});
