// The example tools from tools/ (manifest + sandboxed source inlined at build time), offered on first start; browser app, trusted side.
import csvStats from '../../tools/csv-stats/manifest.json' with { type: 'json' };
import csvStatsSource from '../../tools/csv-stats/index.mjs?raw';
import jsonReshape from '../../tools/json-reshape/manifest.json' with { type: 'json' };
import jsonReshapeSource from '../../tools/json-reshape/index.mjs?raw';
import textStats from '../../tools/text-stats/manifest.json' with { type: 'json' };
import textStatsSource from '../../tools/text-stats/index.mjs?raw';

/** A manifest as `tycli tool add` would hash it: `execution.sourceFile` replaced by the inlined `source`. */
function inline(m: { execution: Record<string, unknown> } & Record<string, unknown>, source: string): Record<string, unknown> {
  const { sourceFile: _file, ...execution } = m.execution;
  void _file;
  return { ...m, execution: { ...execution, source } };
}

/** The example tools' manifests (same revision ids as `tycli tool add tools/NAME/manifest.json`). */
export const EXAMPLE_TOOLS: Record<string, unknown>[] = [inline(csvStats, csvStatsSource), inline(jsonReshape, jsonReshapeSource), inline(textStats, textStatsSource)];
