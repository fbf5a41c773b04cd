// Browser contract: the browser host installs and runs the same bundled multi-file revision as tycli, with frames
// mapped to its files; test code, trusted side.
import { createBrowserHost } from '../host.js';
import { revisionId } from '../../core/revisions/registry.js';
import { parseManifest } from '../../core/manifest/parse.js';
import BUNDLED from './multi-file-bundled.json' with { type: 'json' };

/**
 * Installs browser/diagnostics/multi-file-bundled.json (what `tycli tool add tools/examples/multi-file` makes;
 * node/manifest/bundle.test.ts keeps them equal).
 */
export const bundledContract = {
  name: 'bundled revision: the browser host runs a multi-file tool bundled by tycli, same revision id, thrown errors point at its source files',
  async run(): Promise<string> {
    const host = await createBrowserHost({ dbName: `ty-bundle-${Date.now().toString(36)}` });
    try {
      const want = await revisionId(parseManifest(BUNDLED));
      const { revision } = await host.registry.install(BUNDLED);
      if (revision !== want) throw new Error(`revision ${revision} is not ${want}`);
      const ok = await host.invoker.invoke('unit-convert', { value: 3, from: 'mi', to: 'km' });
      if (!ok.ok || JSON.stringify(ok.result) !== JSON.stringify({ value: 4.828032, text: '3 mi is 4.82803 km' }))
        throw new Error(`run: ${JSON.stringify(ok)}`);
      const bad = await host.invoker.invoke('unit-convert', { value: -1, from: 'm', to: 'ft' });
      if (bad.ok || bad.error.code !== 'E_TOOL_FAILED') throw new Error(`throw: ${JSON.stringify(bad)}`);
      const frames = JSON.stringify(bad.error.frames ?? []);
      const want2 = JSON.stringify([
        { function: 'convert', file: 'lib/convert.mjs', line: 6, column: 11 },
        { function: 'default', file: 'index.mjs', line: 6, column: 18 },
      ]);
      if (frames !== want2) throw new Error(`frames ${frames}, wanted ${want2}`);
      if (/blob:|tysandbox:|http:/.test(frames + bad.error.message)) throw new Error('a host frame or URL leaked');
      return `same id ${revision.slice(9, 21)}; result ok; frames ${bad.error.frames!.map((f) => `${f.file}:${f.line}:${f.column}`).join(', ')}`;
    } finally {
      await host.close();
    }
  },
};
