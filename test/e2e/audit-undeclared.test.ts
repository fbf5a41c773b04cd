// End to end through tycli: a capability use the manifest does not request is refused and leaves its own deny audit
// record; test side.
import { describe, expect, it } from 'vitest';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliScratch, oneLine } from './helpers.js';

const cli = cliScratch('tycli-audit-undeclared', 90_000);

async function tool(name: string, source: string): Promise<string> {
  const file = join(cli.dir, `${name}.json`);
  const parameters = {
    type: 'object',
    properties: { url: { type: 'string' }, key: { type: 'string' } },
    additionalProperties: false,
  };
  await writeFile(
    file,
    JSON.stringify({
      name,
      description: `undeclared ${name}`,
      parameters,
      execution: { kind: 'sandboxed-code', runtime: 'javascript', source },
    }),
  );
  return file;
}

describe('tycli run: undeclared capability uses are audited', () => {
  it.each(['standard', 'unrestricted'] as const)(
    '--mode %s: an undeclared fetch and storage use each leave a DENY record (kind, origin, access, the manifest), without arguments',
    async (mode) => {
      const home = join(cli.dir, `home-${mode}`);
      const rev = await cli.add(home, await tool('fetcher', 'export default async (a, ctx) => ctx.fetch(a.url);'));
      await cli.add(home, await tool('keeper', 'export default async (a, ctx) => ctx.storage.get(a.key);'));
      const r = await cli.tycli([
        '--home',
        home,
        'run',
        'fetcher',
        '--mode',
        mode,
        '--args',
        '{"url":"https://example.com/path?q=canary-5521"}',
      ]);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toContain('E_CAPABILITY_DENIED');
      expect(r.stderr).toContain('fetcher does not declare fetch(read:https://example.com)');
      const s = await cli.tycli(['--home', home, 'run', 'keeper', '--mode', mode, '--args', '{"key":"canary-5522"}']);
      expect(s.code, s.stderr).toBe(1);
      expect(s.stderr).toContain('keeper does not request storage');

      const a = await cli.tycli(['--home', home, 'audit', '--denied', '--json']);
      expect(a.code, a.stderr).toBe(0);
      const records = oneLine(a).records as Record<string, unknown>[];
      expect(records).toEqual([
        expect.objectContaining({
          tool: 'fetcher',
          revision: rev,
          kind: 'fetch',
          target: 'https://example.com',
          access: 'read',
          decision: 'deny',
          list: 'manifest',
          rule: 'manifest upper bound',
          code: 'E_CAPABILITY_DENIED',
        }),
        expect.objectContaining({
          tool: 'keeper',
          kind: 'storage',
          target: 'get',
          access: 'read',
          decision: 'deny',
          list: 'manifest',
          code: 'E_CAPABILITY_DENIED',
        }),
      ]);
      const text = await cli.tycli(['--home', home, 'audit', '--denied']);
      expect(text.stdout).toMatch(/DENY.*fetch.*https:\/\/example\.com/);
      const all = await cli.tycli(['--home', home, 'audit', '--json']);
      expect(all.stdout).not.toContain('canary-55');
      expect(all.stdout).not.toContain('/path');
    },
  );
});
