// End-to-end: `tycli secret set` refuses values under 8 bytes unless --allow-short, and a one-byte secret leaves the
// audit of `tycli run` intact (finding 1 of issue 26); test side.
import { describe, expect, it } from 'vitest';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ROOT, cliScratch, oneLine, runProcess, BIN } from './helpers.js';

const S = cliScratch('tycli-secret-short');

/** `printf VALUE | tycli ARGS` in the scratch folder. */
function piped(value: string, args: string[]) {
  return runProcess(
    '/bin/sh',
    ['-c', `printf %s "$V" | "${process.execPath}" "${BIN}" "$@"`, 'sh', ...args],
    { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: S.dir, V: value },
    S.dir,
  );
}

describe('short secret values', () => {
  it('are refused under 8 bytes, saying why and how to store one anyway; nothing is stored', async () => {
    const h = join(S.dir, 'refuse');
    for (const v of ['e', 'ta', '1234567']) {
      const r = await piped(v, ['--home', h, 'secret', 'set', 'TOK']);
      expect(r.code, v).toBe(2);
      expect(r.stderr).toMatch(
        /^error\[E_USAGE\]: a secret value of \d bytes? is refused: values under 8 bytes can be guessed, .*--allow-short/,
      );
    }
    expect(oneLine(await S.tycli(['--home', h, '--json', 'secret', 'list']))).toEqual({ ok: true, secrets: [] });
    const ok = await piped('12345678', ['--home', h, 'secret', 'set', 'TOK']);
    expect(ok.code, ok.stderr).toBe(0);
  });

  it('printf e | tycli secret set TOK --allow-short, then tycli run: the call works and its audit records are intact', async () => {
    const h = join(S.dir, 'one-byte');
    const rev = await S.add(h, join(ROOT, 'tools', 'text-stats', 'manifest.json'));
    const set = await piped('e', ['--home', h, 'secret', 'set', 'TOK', '--allow-short']);
    expect(set.code, set.stderr).toBe(0);
    for (const v of ['x', 'ta', '0', 't']) {
      const r = await piped(v, ['--home', h, 'secret', 'set', `S${v.length}${v === '0' ? 'z' : v}`, '--allow-short']);
      expect(r.code, r.stderr).toBe(0);
    }
    const run = oneLine(await S.tycli(['--home', h, '--json', 'run', 'text-stats', '--args', '{"text":"the test"}']));
    expect(run).toMatchObject({ ok: true, revision: rev });
    const audit = oneLine(await S.tycli(['--home', h, '--json', 'audit']));
    const call = (audit.records as Record<string, unknown>[]).find((r) => r.kind === 'tool');
    expect(call).toMatchObject({
      principal: 'cli:user',
      tool: 'text-stats',
      revision: rev,
      decision: 'allow',
      outcome: 'ok',
      rule: 'mode standard',
    });
    const raw = await readFile(join(h, 'store', '.logs', 'audit'), 'utf8');
    expect(raw).not.toContain('<withheld>');
    for (const line of raw.trim().split('\n')) {
      const r = JSON.parse(line) as { time: string; principal: string };
      expect(new Date(r.time).toISOString()).toBe(r.time);
      expect(r.principal).toBe('cli:user');
    }
  });

  it('what a tool logs is its own text: a granted value it logs is withheld on --logs, as a token only', async () => {
    const h = join(S.dir, 'logs');
    const file = join(S.dir, 'logger.json');
    await writeFile(
      file,
      JSON.stringify({
        name: 'logger',
        description: 'logs its secret',
        parameters: { type: 'object', additionalProperties: false },
        execution: {
          kind: 'sandboxed-code',
          runtime: 'javascript',
          source:
            "export default async (_a, ctx) => { const v = await ctx.getSecret('TOK'); console.log('token=' + v + ' in the log'); return v.length; };",
        },
        capabilities: { secrets: ['TOK'] },
      }),
    );
    await S.add(h, file);
    expect((await piped('log-value-9Zq', ['--home', h, 'secret', 'set', 'TOK'])).code).toBe(0);
    expect((await S.tycli(['--home', h, 'secret', 'grant', 'TOK', '--tool', 'logger'])).code).toBe(0);
    const r = await S.tycli(['--home', h, 'run', 'logger', '--logs']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('token=<withheld> in the log');
    expect(r.stderr).not.toContain('log-value-9Zq');
  });
});
