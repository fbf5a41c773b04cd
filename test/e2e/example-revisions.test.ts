// The example tools get the same revision id from `tycli tool add` and from the browser app's built-in examples, and
// the docs quote that id; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runProcess } from './helpers.js';
import { exampleTools } from '../../browser/app/examples.js';
import { MemoryStoreBackend } from '../../core/store/memory.js';
import { ToolRegistry } from '../../core/revisions/registry.js';
import { shortId } from '../../core/revisions/refs.js';
import { Store } from '../../core/store/contract.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'tycli.mjs');
const EXAMPLES = ['csv-stats', 'json-reshape', 'text-stats'];
let tmp: string;

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'tycli-example-revs-'));
});
afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

/** NAME -> revision, as `tycli tool add tools/NAME/manifest.json` prints it. */
async function cliRevisions(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of EXAMPLES) {
    const r = await runProcess(
      process.execPath,
      [BIN, '--home', join(tmp, 'home'), 'tool', 'add', join(ROOT, 'tools', name, 'manifest.json')],
      { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp },
      tmp,
    );
    expect(r.code, r.stderr).toBe(0);
    out[name] = r.stdout.trim();
  }
  return out;
}

/**
 * NAME -> revision, as the chat app installs its examples (browser/app/main.ts: host.registry.install of
 * exampleTools()).
 */
async function appRevisions(): Promise<Record<string, string>> {
  const registry = new ToolRegistry(new Store(new MemoryStoreBackend()));
  const out: Record<string, string> = {};
  for (const m of await exampleTools()) {
    const { revision, manifest } = await registry.install(m);
    out[manifest.name] = revision;
  }
  return out;
}

describe('example tool revisions', () => {
  let cli: Record<string, string>;

  it('tycli tool add and the browser app give each example tool the same revision id (the source file record included)', async () => {
    cli = await cliRevisions();
    const app = await appRevisions();
    expect(Object.keys(app).sort()).toEqual(EXAMPLES);
    for (const name of EXAMPLES) expect(cli[name]).toMatch(/^bagaaiera[a-z2-7]+$/);
    expect(app).toEqual(cli);
    // Both hosts keep the file's name and integrity with the revision (frames of a raising tool name index.mjs).
    for (const m of await exampleTools()) {
      const ex = (m as { execution: { source: string; bundle: unknown } }).execution;
      const bytes = await readFile(join(ROOT, 'tools', String(m.name), 'index.mjs'));
      const { createHash } = await import('node:crypto');
      expect(ex.bundle).toEqual({
        entry: 'index.mjs',
        bundler: 'none',
        inputs: [
          {
            path: 'index.mjs',
            bytes: bytes.byteLength,
            integrity: `sha256-${createHash('sha256').update(bytes).digest('base64')}`,
          },
        ],
        packages: [],
      });
      expect(ex.source).toBe(bytes.toString('utf8'));
    }
  }, 120_000);

  it('README.md and docs/ quote the example tools by their real revision ids', async () => {
    cli ??= await cliRevisions();
    const files = [
      'README.md',
      'tools/README.md',
      ...(await readdir(join(ROOT, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`),
    ];
    let quoted = 0;
    for (const f of files) {
      const text = await readFile(join(ROOT, f), 'utf8');
      for (const m of text.matchAll(/\b(csv-stats|json-reshape|text-stats)@([a-z2-7]{8,})\b/g)) {
        quoted++;
        // A whole id (`bagaaiera...`) or a prefix of its short form, as `NAME@REV` accepts.
        const real = m[2]!.startsWith('bagaaiera') ? cli[m[1]!]! : shortId(cli[m[1]!]!, 200);
        expect(`${f}: ${m[0]}`).toBe(`${f}: ${m[1]}@${real.slice(0, m[2]!.length)}`);
      }
    }
    expect(quoted).toBeGreaterThan(0);
  }, 120_000);
});
