// The example tools from tools/ (manifest + sandboxed source inlined at build time), offered on first start; browser
// app, trusted side.
import csvStats from '../../tools/csv-stats/manifest.json' with { type: 'json' };
import csvStatsSource from '../../tools/csv-stats/index.mjs?raw';
import jsonReshape from '../../tools/json-reshape/manifest.json' with { type: 'json' };
import jsonReshapeSource from '../../tools/json-reshape/index.mjs?raw';
import textStats from '../../tools/text-stats/manifest.json' with { type: 'json' };
import textStatsSource from '../../tools/text-stats/index.mjs?raw';
import { inlineSourceFile } from '../../core/manifest/source-file.js';

/**
 * The example tools' manifests as `tycli tool add tools/NAME/manifest.json` stores them (the source inlined with its
 * file record, core/manifest/source-file.ts), hence with the same revision ids (test/e2e/example-revisions.test.ts).
 */
export function exampleTools(): Promise<Record<string, unknown>[]> {
  return Promise.all([
    inlineSourceFile(csvStats, csvStatsSource),
    inlineSourceFile(jsonReshape, jsonReshapeSource),
    inlineSourceFile(textStats, textStatsSource),
  ]);
}
