// Bundling is deterministic: the example multi-file tool bundles to the committed fixture on every machine; Node host,
// test side.
import { describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { loadManifestFile } from './file.js';
import { revisionId } from '../../core/revisions/registry.js';
import { parseManifest } from '../../core/manifest/parse.js';

const ROOT = resolve(import.meta.dirname, '..', '..');

describe('bundleTool', () => {
  it('the example multi-file tool bundles to exactly the committed fixture (the browser contracts install that fixture)', async () => {
    const made = await loadManifestFile(join(ROOT, 'tools/examples/multi-file/manifest.json'));
    const fixture = JSON.parse(await readFile(join(ROOT, 'browser/diagnostics/multi-file-bundled.json'), 'utf8'));
    expect(made).toEqual(fixture);
    expect(await revisionId(parseManifest(made))).toBe(await revisionId(parseManifest(fixture)));
    expect(JSON.stringify(made)).not.toContain(ROOT);
  });
});
