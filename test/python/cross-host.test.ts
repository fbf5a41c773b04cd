// One Python manifest, two hosts: the same revision id and the same results from tycli's host (Pyodide in the Node
// sandbox, bubblewrap) and from the browser host in Chromium; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNodeHost } from '../../node/host/host.js';
import { revisionId } from '../../core/revisions/registry.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import { PYTHON_PACKAGES_NS } from '../../node/python/sandbox.js';
import { tinyWheel } from '../helpers/wheel.js';
import {
  CHROMIUM_PATH,
  buildBrowserApp,
  launchChromium,
  openDiagnostics,
  serveDir,
} from '../../node/diagnostics/browser-driver.mjs';

const MANIFEST: ToolManifest = {
  name: 'pywords',
  description: 'Counts words, hashes the text and remembers the previous text (sandboxed Python).',
  parameters: {
    type: 'object',
    properties: { text: { type: 'string' } },
    required: ['text'],
    additionalProperties: false,
  },
  execution: {
    kind: 'sandboxed-code',
    runtime: 'python',
    source: [
      'import hashlib, json, sys',
      'from collections import Counter',
      'async def main(args, ctx):',
      '    text = args["text"]',
      '    previous = await ctx.storage.get("last")',
      '    await ctx.storage.set("last", {"text": text})',
      '    try:',
      '        await ctx.get_secret("NOT_GRANTED")',
      '        secret = "allowed"',
      '    except CapabilityError as e:',
      '        secret = e.code',
      '    try:',
      '        await ctx.fetch("http://example.com/")',
      '        fetched = "allowed"',
      '    except CapabilityError as e:',
      '        fetched = e.code',
      '    words = Counter(text.lower().split())',
      '    return {"sha256": hashlib.sha256(text.encode()).hexdigest(), "top": words.most_common(2), ' +
        '"previous": previous, "secret": secret, "fetch": fetched, "python": sys.version.split()[0], ' +
        '"json": json.dumps({"b": 1, "a": [1.5, None]})}',
    ].join('\n'),
  },
  capabilities: { storage: {}, secrets: ['NOT_GRANTED'] },
};
const CALLS = [{ text: 'the cat and the hat' }, { text: 'a b a' }];

// A pure-Python wheel the test builds, declared by sha-256: next to the manifest on the CLI, in the app's
// python-packages/ folder in the browser.
const WHEEL = tinyWheel();
const WHEEL_MANIFEST: ToolManifest = {
  name: 'pyshout',
  description: 'Uses a wheel.',
  parameters: { type: 'object' },
  execution: {
    kind: 'sandboxed-code',
    runtime: 'python',
    source:
      'import tinytext, sys\ndef main(args, ctx):\n    return {"out": tinytext.shout(args["s"]), "where": tinytext.__file__.startswith(sys.prefix)}',
  },
  python: { packages: [{ file: WHEEL.file, sha256: WHEEL.sha256 }] },
};
const WHEEL_CALLS = [{ s: 'wheels' }];
// A none-any wheel that holds native code: refused by the browser host before the worker gets it.
const NATIVE_SO = 'tinytext/_speed.cpython-314-wasm32-emscripten.so';
const NATIVE = {
  ...tinyWheel({ [NATIVE_SO]: new Uint8Array([0, 97, 115, 109]) }),
  file: 'nativetext-1.0-py3-none-any.whl',
};

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'tysandbox-cross-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe.runIf(existsSync(CHROMIUM_PATH))('the same Python revision on the command line and in the browser', () => {
  it('gets the same revision id and the same results (storage across calls, refusal codes, a declared wheel) on both hosts', async () => {
    // Command line: the host tycli builds, OS sandbox required.
    const host = await createNodeHost({
      home: join(tmp, 'home'),
      globals: { sandbox: 'required', allow: [], deny: [] },
      io: { stdout: new PassThrough(), stderr: new PassThrough(), stdin: new PassThrough(), interactive: false },
      python: false,
      env: {},
      cwd: tmp,
    });
    let cli: { revision: string; results: unknown[] };
    let cliWheel: { revision: string; results: unknown[] };
    const project = join(tmp, 'project');
    mkdirSync(project, { mode: 0o755 });
    chmodSync(tmp, 0o755);
    writeFileSync(join(project, WHEEL.file), WHEEL.bytes, { mode: 0o644 });
    const runAll = async (m: ToolManifest, calls: unknown[]) => {
      const { revision } = await host.registry.install(m);
      // what tycli tool add records
      if (m.python) await host.store.putJson(PYTHON_PACKAGES_NS, revision, { dir: project });
      const results: unknown[] = [];
      for (const args of calls) results.push(await host.invoker.invoke(m.name, args));
      return { revision, results };
    };
    try {
      cli = await runAll(MANIFEST, CALLS);
      cliWheel = await runAll(WHEEL_MANIFEST, WHEEL_CALLS);
    } finally {
      await host.close();
    }
    // Browser: the same manifests through the browser host in Chromium.
    const out = await buildBrowserApp({ outDir: join(tmp, 'browser') });
    mkdirSync(join(out, 'python-packages'));
    writeFileSync(join(out, 'python-packages', WHEEL.file), WHEEL.bytes);
    writeFileSync(join(out, 'python-packages', NATIVE.file), NATIVE.bytes);
    const server = await serveDir(out);
    const browser = await launchChromium();
    let web: { revision: string; results: unknown[] };
    let webWheel: { revision: string; results: unknown[] };
    let webBad: { revision: string; results: unknown[] };
    let webNative: { revision: string; results: unknown[] };
    try {
      const { page } = await openDiagnostics(browser, server.origin);
      web = (await page.evaluate(([m, c]) => window.tyInvokeManifest(m, c), [MANIFEST, CALLS] as const)) as typeof web;
      webWheel = (await page.evaluate(([m, c]) => window.tyInvokeManifest(m, c), [
        WHEEL_MANIFEST,
        WHEEL_CALLS,
      ] as const)) as typeof web;
      const bad: ToolManifest = {
        ...WHEEL_MANIFEST,
        name: 'pyshoutbad',
        python: { packages: [{ file: WHEEL.file, sha256: '0'.repeat(64) }] },
      };
      webBad = (await page.evaluate(([m, c]) => window.tyInvokeManifest(m, c), [
        bad,
        WHEEL_CALLS,
      ] as const)) as typeof web;
      const native: ToolManifest = {
        ...WHEEL_MANIFEST,
        name: 'pyshoutnative',
        python: { packages: [{ file: NATIVE.file, sha256: NATIVE.sha256 }] },
      };
      webNative = (await page.evaluate(([m, c]) => window.tyInvokeManifest(m, c), [
        native,
        WHEEL_CALLS,
      ] as const)) as typeof web;
    } finally {
      await browser.close();
      await server.close();
    }
    expect(cli.revision).toBe(await revisionId(MANIFEST));
    expect(web.revision).toBe(cli.revision);
    expect(cli.results[0]).toMatchObject({
      ok: true,
      revision: cli.revision,
      result: {
        previous: null,
        secret: 'E_SECRET_DENIED',
        fetch: 'E_FETCH_SCHEME',
        top: [
          ['the', 2],
          ['cat', 1],
        ],
      },
    });
    expect(cli.results[1]).toMatchObject({
      ok: true,
      result: {
        previous: { text: 'the cat and the hat' },
        top: [
          ['a', 2],
          ['b', 1],
        ],
      },
    });
    expect(web.results).toEqual(cli.results);
    // The wheel: same revision, loaded and verified on both hosts, same result.
    expect(webWheel.revision).toBe(cliWheel.revision);
    expect(cliWheel.results[0]).toMatchObject({ ok: true, result: { out: 'WHEELS!', where: true } });
    expect(webWheel.results).toEqual(cliWheel.results);
    // A wheel in the asset folder that does not match the declared digest is refused before the worker gets it.
    expect(webBad.results[0]).toMatchObject({
      ok: false,
      error: { code: 'E_INTEGRITY', message: expect.stringContaining(WHEEL.file) },
    });
    // One that holds native code is refused there too, in one line naming the wheel and the entry.
    expect(webNative.results[0]).toMatchObject({
      ok: false,
      error: {
        code: 'E_INVALID_MANIFEST',
        message: `the wheel ${NATIVE.file} holds native code ("${NATIVE_SO}"); only pure-Python wheels are supported`,
      },
    });
  }, 300_000);
});
