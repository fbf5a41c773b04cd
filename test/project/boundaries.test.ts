// Checks the layer rule: core/ and protocol/ never import node:* nor touch host globals.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
function files(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((f) => {
    const p = join(dir, f);
    return statSync(join(root, p)).isDirectory() ? files(p) : p.endsWith('.ts') && !p.endsWith('.test.ts') ? [p] : [];
  });
}
const FORBIDDEN: [RegExp, string][] = [
  [/from\s+['"]node:/, 'imports node:*'],
  [/import\(\s*['"]node:/, 'imports node:*'],
  [/require\(/, 'uses require'],
  [/from\s+['"](fs|path|child_process|net|os|crypto|http|https|worker_threads|url)['"]/, 'imports a Node built-in'],
  [/\bprocess\.(env|exit|argv|cwd|pid|platform|on)\b/, 'touches process'],
  [/\b(document|window|localStorage|sessionStorage|indexedDB)\s*[.([]/, 'touches a DOM global'],
  [/\bnew\s+(Worker|SharedWorker|WebSocket|XMLHttpRequest)\b/, 'constructs a host global'],
];

describe('layer boundaries', () => {
  for (const dir of ['core', 'protocol']) {
    it(`${dir}/ is host-agnostic`, () => {
      const list = files(dir);
      expect(list.length).toBeGreaterThan(2);
      const offences = list.flatMap((f) =>
        FORBIDDEN.filter(([re]) =>
          re.test(
            readFileSync(join(root, f), 'utf8')
              .replace(/\/\*[\s\S]*?\*\//g, '')
              .replace(/^\s*\/\/.*$/gm, ''),
          ),
        ).map(([, why]) => `${f}: ${why}`),
      );
      expect(offences).toEqual([]);
    });
  }
  it('protocol/ imports only zod and itself', () => {
    for (const f of files('protocol')) {
      const imports = [...readFileSync(join(root, f), 'utf8').matchAll(/from\s+['"]([^'"]+)['"]/g)].map((m) => m[1]!);
      expect(imports.filter((i) => i !== 'zod' && !i.startsWith('./'))).toEqual([]);
    }
  });
  it('the boundary check itself catches an offence', () => {
    const sample = "import { readFileSync } from 'node:fs';\nconst x = process.env.HOME;";
    expect(FORBIDDEN.filter(([re]) => re.test(sample)).length).toBe(2);
  });
});
