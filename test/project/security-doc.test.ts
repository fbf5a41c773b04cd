// SECURITY.md stays honest: every ENFORCED row names test files that exist and test names found in them.
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, statSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
const doc = readFileSync(join(root, 'SECURITY.md'), 'utf8');
const rows = doc.split('\n').filter((l) => l.startsWith('| ENFORCED |'));

/** `a.test.ts > name one; b.test.ts > name two` -> [[file, name?], ...] */
function proofs(cell: string): [string, string | undefined][] {
  const out: [string, string | undefined][] = [];
  for (const part of cell.split(/;\s+(?=[\w./-]+\.test\.ts|[\w./-]+\/$|[\w./-]+\.(?:ts|mjs))/)) {
    const m = /^\s*([\w./-]+)(?:\s*>\s*(.*))?$/.exec(part.trim());
    if (m) out.push([m[1]!, m[2]?.trim()]);
  }
  return out;
}
function text(path: string): string {
  const p = join(root, path);
  if (statSync(p).isDirectory())
    return readdirSync(p)
      .filter((f) => f.endsWith('.ts'))
      .map((f) => readFileSync(join(p, f), 'utf8'))
      .join('\n');
  return readFileSync(p, 'utf8');
}
/** The first words of a test name as the test file spells them (placeholders and quotes vary). */
function probe(name: string): string {
  const first = name
    .split(/\s*>\s*/)
    .pop()!
    .split(/[%…"'`(]/)[0]!
    .trim();
  return first.slice(0, 24).trim();
}

describe('SECURITY.md', () => {
  it('has ENFORCED and NOT-GUARANTEED rows', () => {
    expect(rows.length).toBeGreaterThan(50);
    expect(doc.split('\n').filter((l) => l.startsWith('| NOT-GUARANTEED |')).length).toBeGreaterThan(10);
  });
  it('every ENFORCED row names an existing test file, and the named tests are in it', () => {
    const problems: string[] = [];
    for (const row of rows) {
      const cells = row.split(' | ');
      const proof = cells[cells.length - 1]!.replace(/\s*\|\s*$/, '');
      const list = proofs(proof);
      if (list.length === 0) problems.push(`no proof: ${row.slice(0, 80)}`);
      for (const [file, name] of list) {
        if (!existsSync(join(root, file))) {
          problems.push(`missing file ${file}`);
          continue;
        }
        if (name) {
          const src = text(file);
          for (const alt of name.split(/\s*[;/]\s*(?=[a-z])/i)) {
            const p = probe(alt);
            if (p.length >= 8 && !src.includes(p)) problems.push(`${file}: no test named like "${p}"`);
          }
        }
      }
    }
    expect(problems).toEqual([]);
  });
});
