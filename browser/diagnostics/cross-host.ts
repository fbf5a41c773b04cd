// Runs one manifest through the real browser host (IndexedDB registry, gate, pool, Pyodide) for the cross-host tests;
// test page, trusted host side.
import { createBrowserHost } from '../host.js';
import { PYODIDE_MANIFEST } from '../python/pyodide-manifest.js';
import type { ToolManifest } from '../../protocol/manifest.js';

/**
 * Install `manifest` in a fresh browser host and invoke it once per entry of `calls`; the revision id and each
 * InvokeResult.
 */
export async function invokeManifest(
  manifest: ToolManifest,
  calls: unknown[],
): Promise<{ revision: string; results: unknown[] }> {
  const host = await createBrowserHost({
    dbName: `ty-cross-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`,
    sandbox: { pyodide: PYODIDE_MANIFEST },
  });
  try {
    const { revision } = await host.registry.install(manifest);
    const results: unknown[] = [];
    for (const args of calls) results.push(await host.invoker.invoke(manifest.name, args));
    return { revision, results };
  } finally {
    await host.close();
  }
}
