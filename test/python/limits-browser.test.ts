// Python limits named right in the browser host: the same probe tool as on the command line
// (test/python/limits-tool.ts) in the sandbox worker in Chromium: a time limit names main() or the module, a memory
// bomb and a full /tmp are E_MEMORY_LIMIT at limits.memoryMb; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CHROMIUM_PATH,
  buildBrowserApp,
  launchChromium,
  openDiagnostics,
  serveDir,
} from '../../node/diagnostics/browser-driver.mjs';
import { limitsManifest } from './limits-tool.js';

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'tysandbox-pylimits-web-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

type Results = { revision: string; results: unknown[] };

describe.runIf(existsSync(CHROMIUM_PATH))('Python limits in the browser sandbox worker (Chromium)', () => {
  it('E_TIMEOUT names main() or the module; a bytearray bomb and a full /tmp are E_MEMORY_LIMIT, never a fatal Pyodide', async () => {
    const out = await buildBrowserApp({ outDir: join(tmp, 'browser') });
    const server = await serveDir(out);
    const browser = await launchChromium();
    const m = limitsManifest();
    let time: Results;
    let memory: Results;
    let files: Results;
    try {
      const { page } = await openDiagnostics(browser, server.origin);
      const run = (calls: unknown[], timeouts: (number | null)[] = []) =>
        page.evaluate(([mm, c, t]) => window.tyInvokeManifest(mm, c, t), [
          m,
          calls,
          timeouts,
        ] as const) as Promise<Results>;
      // warm (the start pays Pyodide), main() loops, a fresh sandbox armed, then its module loops
      time = await run([{}, { loop: true }, { arm: true }, {}], [null, 3000, null, 3000]);
      memory = await run([{ bomb: true }, {}, { catch: true }]);
      files = await run([{ fill: 4 }, { fill: 4 }, { fill: true }, { fill: 2 }]);
    } finally {
      await browser.close();
      await server.close();
    }
    expect(time.results[0]).toMatchObject({ ok: true, result: { runs: 1 } });
    expect(time.results[1]).toMatchObject({
      ok: false,
      error: {
        code: 'E_TIMEOUT',
        message: 'tool call exceeded 3000 ms while main() ran; sandbox destroyed',
        data: { phase: 'main', runtime: 'python', limitMs: 3000 },
      },
    });
    expect(time.results[2]).toMatchObject({ ok: true, result: { runs: 1 } });
    expect(time.results[3]).toMatchObject({
      ok: false,
      error: {
        code: 'E_TIMEOUT',
        message: "tool call exceeded 3000 ms while its module's top-level code ran; sandbox destroyed",
        data: { phase: 'module' },
      },
    });
    expect(memory.results[0]).toMatchObject({
      ok: false,
      error: {
        code: 'E_MEMORY_LIMIT',
        message: expect.stringMatching(/^Python reached the sandbox's memory limit .*MemoryError/),
      },
    });
    expect(memory.results[1]).toMatchObject({ ok: true, result: { runs: 1 } });
    expect(memory.results[2]).toMatchObject({ ok: true, result: { caught: 'MemoryError' } });
    expect(files.results.slice(0, 2)).toMatchObject([
      { ok: true, result: { files: 4 } },
      { ok: true, result: { files: 4 } },
    ]);
    expect(files.results[2]).toMatchObject({
      ok: false,
      error: {
        code: 'E_MEMORY_LIMIT',
        message: expect.stringContaining('OSError: [Errno 51] No space left on device'),
      },
    });
    expect(JSON.stringify(files.results[2])).not.toContain('fatally');
    expect(files.results[3]).toMatchObject({ ok: true, result: { files: 2 } });
  }, 400_000);
});
