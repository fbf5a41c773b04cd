// Secret values on disk (0600 file) and the `tycli secret` commands; test side.
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TyError } from '../../core/errors.js';
import { SecretsFile } from '../../node/store/secrets.js';
import { main } from '../../node/cli/main.js';
import { createNodeHost } from '../../node/host/host.js';
import type { CliIO } from '../../node/cli/types.js';

const VALUE = 'sup3r-secret-VALUE-Δ';
let home: string;

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'tysecrets-'));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

function io(stdinText?: string): { io: CliIO; out: () => string; err: () => string } {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let o = '';
  let e = '';
  stdout.on('data', (d: Buffer) => (o += d.toString()));
  stderr.on('data', (d: Buffer) => (e += d.toString()));
  const stdin = Readable.from(stdinText === undefined ? [] : [Buffer.from(stdinText)]);
  return { io: { stdout, stderr, stdin, interactive: false }, out: () => o, err: () => e };
}

async function tycli(args: string[], stdinText?: string): Promise<{ code: number; out: string; err: string }> {
  const t = io(stdinText);
  const code = await main(['--home', home, ...args], { io: t.io, env: {}, cwd: home });
  return { code, out: t.out(), err: t.err() };
}

describe('SecretsFile', () => {
  it('stores values 0600 in a 0700 folder and reads them back', async () => {
    const f = new SecretsFile(join(home, 'config', 'secrets.json'));
    await f.set('A', VALUE);
    await f.set('B', 'other');
    expect(await f.get('A')).toBe(VALUE);
    expect(await f.names()).toEqual(['A', 'B']);
    expect((await stat(f.path)).mode & 0o777).toBe(0o600);
    expect((await stat(join(home, 'config'))).mode & 0o777).toBe(0o700);
    expect(await f.delete('A')).toBe(true);
    expect(await f.get('A')).toBeUndefined();
    expect(await f.delete('A')).toBe(false);
  });

  it('refuses a file other users can read, without echoing its contents', async () => {
    const f = new SecretsFile(join(home, 'secrets.json'));
    await f.set('A', VALUE);
    await chmod(f.path, 0o644);
    const e = await f.get('A').catch((x: TyError) => x);
    expect((e as TyError).code).toBe('E_STORE');
    expect((e as TyError).message).toMatch(/chmod 600/);
    expect((e as TyError).message).not.toContain(VALUE);
  });

  it('reports a corrupt file without its contents', async () => {
    const p = join(home, 'secrets.json');
    await writeFile(p, `{"v":1,"secrets":{"A":"${VALUE}"`, { mode: 0o600 });
    const e = await new SecretsFile(p).get('A').catch((x: TyError) => x);
    expect((e as TyError).code).toBe('E_STORE');
    expect((e as TyError).message).not.toContain(VALUE);
  });

  it('refuses bad names and values with E_USAGE', async () => {
    const f = new SecretsFile(join(home, 'secrets.json'));
    for (const n of ['', '.hidden', 'a/b', 'x'.repeat(65), 'sp ace'])
      expect(await f.set(n, 'v').catch((x: TyError) => x.code)).toBe('E_USAGE');
    expect(await f.set('A', '').catch((x: TyError) => x.code)).toBe('E_USAGE');
    expect(await f.set('A', 'x'.repeat(70_000)).catch((x: TyError) => x.code)).toBe('E_USAGE');
  });
});

describe('tycli secret', () => {
  it('set reads the value from stdin, never from argv, and never prints it', async () => {
    const argv = await tycli(['secret', 'set', 'TOKEN', VALUE]);
    expect(argv.code).toBe(2);
    expect(argv.err).toMatch(/E_USAGE/);
    expect(argv.err).not.toContain(VALUE);
    const r = await tycli(['secret', 'set', 'TOKEN'], `${VALUE}\n`);
    expect(r.code).toBe(0);
    expect(r.out + r.err).not.toContain(VALUE);
    const file = join(home, 'config', 'secrets.json');
    expect(JSON.parse(await readFile(file, 'utf8')).secrets.TOKEN).toBe(VALUE);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('set on a terminal prompts without echo (raw mode), and backspace edits', async () => {
    const t = io();
    const tty = new PassThrough() as PassThrough & { isTTY: boolean; setRawMode: (b: boolean) => void };
    const modes: boolean[] = [];
    tty.isTTY = true;
    tty.setRawMode = (b) => void modes.push(b);
    const p = main(['--home', home, 'secret', 'set', 'TTYSECRET'], {
      io: { ...t.io, stdin: tty, interactive: true },
      env: {},
      cwd: home,
    });
    await new Promise((r) => setTimeout(r, 50));
    tty.write('hunter22x\u007f\r');
    expect(await p).toBe(0);
    expect(modes).toEqual([true, false]);
    expect(t.err()).toContain('input hidden');
    expect(t.err() + t.out()).not.toContain('hunter2');
    expect(JSON.parse(await readFile(join(home, 'config', 'secrets.json'), 'utf8')).secrets.TTYSECRET).toBe('hunter22');
  });

  it('grant / list / revoke bind a secret to an exact revision and never show values', async () => {
    await tycli(['secret', 'set', 'TOKEN'], VALUE);
    const host = await createNodeHost({ home, startSandboxes: false });
    const mk = (salt: string) => ({
      name: 'reader',
      description: salt,
      parameters: { type: 'object' },
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source: `export default async () => 1 // ${salt}` },
      capabilities: { secrets: ['TOKEN'] },
    });
    const v1 = (await host.registry.install(mk('v1'))).revision;
    const v2 = (await host.registry.install(mk('v2'))).revision;
    await host.close();

    const g = await tycli(['secret', 'grant', 'TOKEN', '--tool', 'reader', '--origin', 'https://api.example.com']);
    expect(g.code).toBe(0);
    expect(g.out).toContain(v1); // NAME alone = the active revision (v1)
    const g2 = await tycli(['secret', 'grant', 'TOKEN', '--tool', `reader@${v2}`]);
    expect(g2.code).toBe(0);

    const l = await tycli(['--json', 'secret', 'list']);
    expect(l.code).toBe(0);
    expect(l.out).not.toContain(VALUE);
    const row = (
      JSON.parse(l.out.trim()) as {
        ok: true;
        secrets: { name: string; hasValue: boolean; grants: { tool: string; revision: string; origins: string[] }[] }[];
      }
    ).secrets[0]!;
    expect(row.name).toBe('TOKEN');
    expect(row.hasValue).toBe(true);
    expect(row.grants).toEqual([
      { tool: 'reader', revision: v1, origins: ['https://api.example.com'] },
      { tool: 'reader', revision: v2, origins: [] },
    ]);

    const bad = await tycli(['secret', 'grant', 'TOKEN', '--tool', 'reader', '--origin', 'http://api.example.com']);
    expect(bad.code).toBe(2);
    const unknown = await tycli(['secret', 'grant', 'TOKEN', '--tool', 'nosuch']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/E_UNKNOWN_TOOL/);
    // a secret the manifest does not request: no grant is stored (it could never be used, and would keep the revision
    // from gc)
    const unrequested = await tycli(['secret', 'grant', 'OTHER', '--tool', 'reader']);
    expect(unrequested.code).toBe(2);
    expect(unrequested.err).toMatch(
      /E_USAGE.*does not request the secret OTHER in its manifest \(capabilities\.secrets: TOKEN\)/,
    );
    expect(
      (
        JSON.parse((await tycli(['--json', 'secret', 'list'])).out.trim()) as { secrets: { name: string }[] }
      ).secrets.map((x) => x.name),
    ).not.toContain('OTHER');

    const rv = await tycli(['secret', 'revoke', 'TOKEN', '--tool', `reader@${v1}`]);
    expect(rv.code).toBe(0);
    const l2 = (
      JSON.parse((await tycli(['--json', 'secret', 'list'])).out.trim()) as { secrets: { grants: unknown[] }[] }
    ).secrets[0]!;
    expect(l2.grants).toEqual([{ tool: 'reader', revision: v2, origins: [] }]);

    const d = await tycli(['secret', 'delete', 'TOKEN']);
    expect(d.code).toBe(0);
    expect((await tycli(['--json', 'secret', 'list'])).out).toBe('{"ok":true,"secrets":[]}\n');
  });
});
