// Runs one manifest through the real browser host (IndexedDB registry, gate, pool, Pyodide) for the cross-host tests;
// test page, trusted host side.
import { createBrowserHost } from '../host.js';
import { PYODIDE_MANIFEST } from '../python/pyodide-manifest.js';
import type { ToolManifest } from '../../protocol/manifest.js';

/**
 * Install `manifest` in a fresh browser host and invoke it once per entry of `calls`; the revision id and each
 * InvokeResult. `timeouts[i]` (ms), when given, is call i's time limit (InvokeOptions.timeoutMs); the calls share the
 * host's retained sandbox, as on the command line.
 */
export async function invokeManifest(
  manifest: ToolManifest,
  calls: unknown[],
  timeouts: readonly (number | null)[] = [],
): Promise<{ revision: string; results: unknown[] }> {
  const host = await createBrowserHost({
    dbName: `ty-cross-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`,
    sandbox: { pyodide: PYODIDE_MANIFEST },
  });
  try {
    const { revision } = await host.registry.install(manifest);
    const results: unknown[] = [];
    for (let i = 0; i < calls.length; i++) {
      const timeoutMs = timeouts[i];
      results.push(
        await host.invoker.invoke(manifest.name, calls[i], typeof timeoutMs === 'number' ? { timeoutMs } : {}),
      );
    }
    return { revision, results };
  } finally {
    await host.close();
  }
}
