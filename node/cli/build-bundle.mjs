// Build step (npm run build): bundles the compiled command line (dist/node/cli/main.js) into dist/cli/ with esbuild; trusted side.
// One ES-module entry plus shared chunks: each command's and capability's dynamic import() stays a lazily loaded chunk,
// so `tycli run` resolves and compiles a handful of files instead of hundreds, and unused exports (zod's locales) are
// dropped. dist/cli/ sits at the same depth as dist/node/, so import.meta.url-relative lookups (package root, the web
// app folder, the package version) resolve alike. bin/tycli.mjs falls back to dist/node/cli/main.js without it.
import { build } from 'esbuild';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * zod's entry points re-export every locale (`export * as locales`, about 90 modules) and the code uses `z` as one
 * namespace object, so no bundler can drop them; the CLI only ever shows English messages (zod's default, set by its
 * schemas module), so `z.locales` is narrowed to `en` here. Library users importing tysandbox get zod unchanged.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (a) => (/[\\/]node_modules[\\/]zod[\\/]/.test(a.importer) ? { path: join(dirname(a.importer), '..', 'locales', 'index.js'), namespace: 'zod-english-only' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'zod-english-only' }, (a) => ({ contents: "export { default as en } from './en.js';\n", resolveDir: dirname(a.path), loader: 'js' }));
  },
};
/**
 * Dependencies only some commands or calls use, each with a CommonJS build: in the bundle an import of one becomes a
 * stand-in that require()s the package from node_modules on first use (the chunks' banner gives each a `require`), so
 * a `tycli run` of a tool whose parameters have no `pattern` compiles neither re2js (about 260 KB) nor source-map-js
 * (until a tool's stack frames are mapped) nor diff (until `tool add` shows a replacement's difference).
 * Source: esbuild's plugin API (onResolve/onLoad, namespaces).
 */
const LAZY_DEPS = { re2js: ['RE2JS'], 'source-map-js': ['SourceMapConsumer'], diff: ['createTwoFilesPatch'] };
const lazyDeps = {
  name: 'lazy-deps',
  setup(b) {
    b.onResolve({ filter: /^(re2js|source-map-js|diff)$/ }, (a) => ({ path: a.path, namespace: 'lazy-dep' }));
    b.onLoad({ filter: /.*/, namespace: 'lazy-dep' }, (a) => {
      const load = `const pkg = ${JSON.stringify(a.path)};\nlet m;\nconst load = () => (m ??= require(pkg));\n`;
      const names = LAZY_DEPS[a.path].map((n) => `export const ${n} = new Proxy(function () {}, { get: (_, k) => Reflect.get(load().${n}, k), construct: (_, args) => Reflect.construct(load().${n}, args), apply: (_, self, args) => Reflect.apply(load().${n}, self, args) });\n`);
      return { contents: load + names.join(''), loader: 'js', resolveDir: root };
    });
  },
};
/**
 * zod lists its compile module (`z.compile`, ahead-of-time parsers, about 90 KB) as having side effects, so esbuild keeps
 * it although nothing here calls it; it has none at its top level (only declarations), so the bundle may drop it.
 */
const zodCompileUnused = {
  name: 'zod-compile-unused',
  setup(b) {
    b.onResolve({ filter: /^\.\/compile\.js$/ }, (a) => (/[\\/]node_modules[\\/]zod[\\/]v4[\\/]core[\\/]index\.js$/.test(a.importer) ? { path: join(dirname(a.importer), 'compile.js'), sideEffects: false } : undefined));
  },
};
/**
 * The code reaches zod only as the namespace `z` (`import { z } from 'zod'`), and a namespace object that is exported
 * keeps every member, so the bundle would carry zod's JSON Schema conversions, compile and iso helpers that nothing
 * here calls. The `z` of the bundle is an object of exactly the members the compiled code names (`z.NAME`, collected
 * from dist/ at build time), so esbuild drops the rest. A file that uses `z` other than as `z.NAME` gets zod unchanged.
 */
function zodMembersUsed() {
  const names = new Set();
  let bare = false;
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.js') && !e.name.endsWith('.test.js')) {
        const text = readFileSync(p, 'utf8');
        if (!/from ['"]zod['"]/.test(text)) continue;
        for (const m of text.matchAll(/(?<![\w$.])z\s*\.\s*([A-Za-z_$][\w$]*)/g)) names.add(m[1]);
        // any other `z` (passed as a value, indexed): keep zod whole; `a-z` in a regular expression is not one
        const rest = text.replace(/import \{ z \} from ['"]zod['"];?/g, '').replace(/(?<![\w$.])z\s*\.\s*[A-Za-z_$]/g, '');
        if (/(?<![\w$.-])z(?![\w$])/.test(rest.replace(/\/\/.*$|\/\*[\s\S]*?\*\/|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`/gm, ''))) bare = true;
      }
    }
  };
  for (const d of ['core', 'node', 'protocol']) walk(join(root, 'dist', d));
  return bare ? undefined : [...names].sort();
}
const zodUsedOnly = {
  name: 'zod-used-members',
  setup(b) {
    const names = zodMembersUsed();
    if (!names) return;
    const external = join(root, 'node_modules', 'zod', 'v4', 'classic', 'external.js');
    b.onResolve({ filter: /^zod$/ }, (a) => (/[\\/]node_modules[\\/]/.test(a.importer) ? undefined : { path: 'z', namespace: 'zod-used' }));
    b.onLoad({ filter: /.*/, namespace: 'zod-used' }, () => ({
      contents: `import * as all from ${JSON.stringify(external)};\nexport const z = Object.freeze({ ${names.map((n) => `${n}: all.${n}`).join(', ')} });\nexport default z;\n`,
      loader: 'js',
      resolveDir: root,
    }));
  },
};
const outdir = join(root, 'dist', 'cli');
rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: { tycli: join(root, 'dist', 'node', 'cli', 'main.js') },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  outExtension: { '.js': '.mjs' },
  chunkNames: '[name]-[hash]',
  // Packages with native binaries, wasm or files of their own found relative to themselves stay in node_modules.
  external: ['esbuild', 'pyodide', 'playwright-core', 'deno'],
  // CommonJS dependencies bundled into ES modules call require() for node: built-ins and read __filename/__dirname
  // (write-file-atomic hashes __filename into its temp names): give every chunk module-scoped ones. The require
  // function is made on a chunk's first require() (most chunks never call it; a createRequire each costs ~0.1 ms).
  banner: {
    js: "import { createRequire as __tyCreateRequire } from 'node:module'; import { fileURLToPath as __tyFileURLToPath } from 'node:url'; let __tyRequire; function require(id) { return (__tyRequire ??= __tyCreateRequire(import.meta.url))(id); } const __filename = __tyFileURLToPath(import.meta.url); const __dirname = __tyFileURLToPath(new URL('.', import.meta.url));",
  },
  plugins: [zodEnglishOnly, zodCompileUnused, zodUsedOnly, lazyDeps],
  legalComments: 'linked',
  // Source maps for tools that read them (test/bench/profile-run.mjs attributes profile time to the original modules);
  // node reads them only with --enable-source-maps.
  sourcemap: 'linked',
  logLevel: 'warning',
});
