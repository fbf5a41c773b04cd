// `npm run build` step: bundles the browser entry of `tysandbox/client` (browser/client.ts) into one ES module,
// dist/client/browser.js, with esbuild; build tooling, trusted side.
//
// The bundle must hold no Node built-in and no zod (the client imports only protocol/registration-names.ts and types):
// the build fails when one slipped in, so a browser integrator never gets a bundle that needs `node:*` made external.
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CLIENT_BUNDLE = join(root, 'dist', 'client', 'browser.js');

/** Bundle browser/client.ts to dist/client/browser.js (ES2022, minified, with a source map). @throws on a leak. */
export async function buildClientBundle() {
  const r = await build({
    entryPoints: [join(root, 'browser', 'client.ts')],
    outfile: CLIENT_BUNDLE,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    sourcemap: true,
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
  });
  const inputs = Object.keys(r.metafile.inputs);
  const leaked = inputs.filter((f) => f.startsWith('node:') || f.includes('node_modules/zod/'));
  const text = readFileSync(CLIENT_BUNDLE, 'utf8');
  if (leaked.length > 0 || /\bfrom\s*["']node:|import\(["']node:/.test(text))
    throw new Error(`the browser client bundle must not hold Node built-ins or zod: ${leaked.join(', ')}`);
  return { file: CLIENT_BUNDLE, bytes: Buffer.byteLength(text), inputs };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildClientBundle();
