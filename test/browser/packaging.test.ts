// The published browser package: a TypeScript app type-checks against its declarations, and an app built with vite and
// the tysandboxAssets plugin runs a tool in Chromium under a strict CSP; test code, trusted side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHROMIUM_PATH, REPO_ROOT, launchChromium, serveDir } from '../../node/diagnostics/browser-driver.mjs';
import { STRICT_CSP } from './app-page.js';

const haveChromium = existsSync(CHROMIUM_PATH);
let dir: string;

beforeAll(() => {
  if (!existsSync(join(REPO_ROOT, 'dist/browser/index.d.ts')))
    execFileSync('npm', ['run', 'build'], { cwd: REPO_ROOT, stdio: 'ignore' });
  dir = mkdtempSync(join(tmpdir(), 'ty-pkg-app-'));
  mkdirSync(join(dir, 'node_modules'));
  // the package as an app would install it: resolved through package.json "exports"
  symlinkSync(REPO_ROOT, join(dir, 'node_modules', 'tysandbox'), 'dir');
}, 300_000);
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const APP_TS = `import { createBrowserHost, PYODIDE_MANIFEST, type ApprovalQuestion, type HostEventMap } from 'tysandbox/browser';
export async function start(root: HTMLElement): Promise<string> {
  const host = await createBrowserHost({ dialog: false, sandbox: { pyodide: PYODIDE_MANIFEST, pyodideBaseUrl: '/pyodide/' }, maxRetained: 4 });
  host.approvals.subscribe((q: ApprovalQuestion) => {
    const b = document.createElement('button');
    b.textContent = q.title;
    b.onclick = () => q.answer('once');
    root.append(b);
  });
  const off = host.on('call-end', (e: HostEventMap['call-end']) => console.log(e.callId, e.ok, e.durationMs));
  await host.registry.install({
    name: 'hi',
    description: 'd',
    parameters: { type: 'object' },
    execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'export default async () => "hi from the sandbox"' },
  });
  const r = await host.invoke('hi', {});
  await host.registry.install({
    name: 'hiq',
    description: 'd',
    parameters: { type: 'object' },
    execution: { kind: 'sandboxed-code', runtime: 'javascript', engine: 'quickjs', source: 'export default async () => "and from QuickJS"' },
  });
  const q = await host.invoke('hiq', {});
  off();
  const paused: { tool: string; until?: number }[] = await host.paused();
  void paused;
  const text = (x: typeof r) => (x.ok ? String(x.result) : x.error.code + ': ' + x.error.message);
  return text(r) + '; ' + text(q);
}
`;
const WRONG_TS = `import { createBrowserHost } from 'tysandbox/browser';
export async function wrong(): Promise<void> {
  const host = await createBrowserHost();
  // @ts-expect-error not a choice
  host.approvals.subscribe((q) => q.answer('maybe'));
  // @ts-expect-error not an event
  host.on('no-such-event', () => {});
  // @ts-expect-error pyodideBaseUrl is a string
  await createBrowserHost({ sandbox: { pyodideBaseUrl: 1 } });
}
`;

describe('the tysandbox/browser package', () => {
  it('a strict TypeScript app type-checks against the published declarations (types resolved through "exports")', () => {
    writeFileSync(join(dir, 'app.ts'), APP_TS);
    writeFileSync(join(dir, 'wrong.ts'), WRONG_TS);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'ESNext',
          moduleResolution: 'bundler',
          strict: true,
          noEmit: true,
          lib: ['ES2023', 'DOM', 'DOM.Iterable'],
          skipLibCheck: true,
          types: [],
        },
        files: ['app.ts', 'wrong.ts'],
      }),
    );
    const r = spawnSync(process.execPath, [join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(`${r.stdout}${r.stderr}`).toBe('');
    expect(r.status).toBe(0);
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      private?: boolean;
      exports: Record<string, { types?: string }>;
    };
    expect(pkg.private).toBeUndefined();
    expect(pkg.exports['./browser']?.types).toBe('./dist/browser/index.d.ts');
  }, 180_000);

  it.skipIf(!haveChromium)(
    'an app built with vite and tysandboxAssets() serves the frame, Pyodide and QuickJS assets and runs a tool on each JavaScript engine in Chromium under a strict CSP',
    async () => {
      writeFileSync(
        join(dir, 'index.html'),
        '<!doctype html><html><head><meta charset="utf-8"><title>pkg app</title></head><body><main id="root"></main><script type="module" src="/main.ts"></script></body></html>',
      );
      writeFileSync(
        join(dir, 'main.ts'),
        `import { start } from './app.js';\nvoid start(document.getElementById('root')!).then((t) => { (window as unknown as { done: string }).done = t; });\n`,
      );
      const { build } = await import('vite');
      const { tysandboxAssets } = await import('../../browser/build/vite-plugin.mjs');
      const out = join(dir, 'out');
      await build({
        root: dir,
        configFile: false,
        logLevel: 'warn',
        build: { outDir: out, emptyOutDir: true, target: 'es2022' },
        plugins: [tysandboxAssets()],
      });
      for (const f of [
        'sandbox-frame.html',
        'sandbox-frame.js',
        'pyodide/pyodide.asm.wasm',
        'pyodide/python_stdlib.zip',
        'quickjs/emscripten-module.wasm',
      ])
        expect(existsSync(join(out, f)), f).toBe(true);
      expect(readFileSync(join(out, 'sandbox-frame.js'))).toEqual(
        readFileSync(join(REPO_ROOT, 'browser/sandbox/sandbox-frame.js')),
      );
      const server = await serveDir(out, {
        headers: (p): Record<string, string> =>
          p.endsWith('/sandbox-frame.html') ? {} : { 'content-security-policy': STRICT_CSP },
      });
      const browser = await launchChromium();
      try {
        const page = await browser.newPage();
        await page.goto(`${server.origin}/index.html`);
        await page.waitForFunction(() => typeof (window as unknown as { done?: string }).done === 'string', undefined, {
          timeout: 60_000,
        });
        expect(await page.evaluate(() => (window as unknown as { done: string }).done)).toBe(
          'hi from the sandbox; and from QuickJS',
        );
      } finally {
        await browser.close();
        await server.close();
      }
    },
    240_000,
  );
});
