// Build step (npm run build): bundles the QuickJS sandbox host process (node/quickjs/sandbox-host.ts, the QuickJS
// driver in core/quickjs/, quickjs-emscripten-core and the release-sync variant's Node glue) into one CommonJS file,
// dist/quickjs/sandbox-host.cjs, with the guest script compiled in; build time, trusted side.
// One file because the sandbox host runs under Node's permission model and bubblewrap, which grant and bind the files
// it reads one by one (node/quickjs/runtime.ts): this bundle and the QuickJS .wasm, nothing else of the package.
import { build } from 'esbuild';
import { minifiedGuestScript } from '../../browser/build/quickjs.mjs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Where the bundle goes, relative to the package root. */
export const SANDBOX_HOST_BUNDLE = 'dist/quickjs/sandbox-host.cjs';

/**
 * Bundle the sandbox host into `outFile` (default SANDBOX_HOST_BUNDLE under the package root).
 * @returns {Promise<string>} the absolute path written
 */
export async function buildSandboxHost(outFile = join(root, SANDBOX_HOST_BUNDLE)) {
  const require = createRequire(import.meta.url);
  const variantDir = dirname(require.resolve('@jitl/quickjs-wasmfile-release-sync/package.json'));
  await build({
    entryPoints: [join(root, 'node', 'quickjs', 'sandbox-host.ts')],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    outfile: outFile,
    logLevel: 'warning',
    legalComments: 'inline',
    define: { __TYSANDBOX_QUICKJS_GUEST__: JSON.stringify(await minifiedGuestScript()) },
    plugins: [
      {
        // The variant loads its emscripten glue with import(); under the `import` condition that is the ES module
        // build, which needs import.meta.url (empty in a CommonJS bundle). The CommonJS build is the same glue.
        name: 'quickjs-cjs-glue',
        setup(b) {
          b.onResolve({ filter: /^@jitl\/quickjs-wasmfile-release-sync\/emscripten-module$/ }, () => ({
            path: join(variantDir, 'dist', 'emscripten-module.cjs'),
          }));
        },
      },
    ],
  });
  return outFile;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildSandboxHost();
