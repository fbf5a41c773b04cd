// Build step (npm run build): bundles the compiled command line (dist/node/cli/main.js) into dist/cli/tycli.cjs with
// esbuild and writes its V8 code cache; trusted side.
// One CommonJS file: each command's and capability's dynamic import() becomes a module wrapper (esbuild's __esm /
// __commonJS) evaluated on first use, so `tycli run` evaluates only what it needs, and unused exports (zod's locales)
// are dropped. bin/bundle-loader.mjs compiles it through vm.Script with the code cache (node/cli/build-code-cache.mjs),
// which Node 20 cannot give ES modules. dist/cli/ sits at the same depth as dist/node/, so import.meta.url-relative
// lookups (package root, the web app folder, the package version) resolve alike. bin/tycli.mjs falls back to
// dist/node/cli/main.js without the bundle.
import { build } from 'esbuild';
import { BUNDLE_CLOSE, BUNDLE_OPEN, ID_PREFIX } from '../../bin/bundle-loader.mjs';
import { Parser } from 'acorn';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
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
    // the path relative to the package root: it is written into the bundle, which must not depend on the checkout's
    // place
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (a) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(a.importer)
        ? {
            path: relative(root, join(dirname(a.importer), '..', 'locales', 'index.js')),
            namespace: 'zod-english-only',
          }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-english-only' }, (a) => ({
      contents: "export { default as en } from './en.js';\n",
      resolveDir: dirname(join(root, a.path)),
      loader: 'js',
    }));
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
      const names = LAZY_DEPS[a.path].map(
        (n) =>
          `export const ${n} = new Proxy(function () {}, { get: (_, k) => Reflect.get(load().${n}, k), ` +
          `construct: (_, args) => Reflect.construct(load().${n}, args), apply: (_, self, args) => Reflect.apply(load().${n}, ` +
          `self, args) });\n`,
      );
      return { contents: load + names.join(''), loader: 'js', resolveDir: root };
    });
  },
};
/**
 * zod lists its compile module (`z.compile`, ahead-of-time parsers, about 90 KB) as having side effects, so esbuild
 * keeps
 * it although nothing here calls it; it has none at its top level (only declarations), so the bundle may drop it.
 */
const zodCompileUnused = {
  name: 'zod-compile-unused',
  setup(b) {
    b.onResolve({ filter: /^\.\/compile\.js$/ }, (a) =>
      /[\\/]node_modules[\\/]zod[\\/]v4[\\/]core[\\/]index\.js$/.test(a.importer)
        ? { path: join(dirname(a.importer), 'compile.js'), sideEffects: false }
        : undefined,
    );
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
        const rest = text
          .replace(/import \{ z \} from ['"]zod['"];?/g, '')
          .replace(/(?<![\w$.])z\s*\.\s*[A-Za-z_$]/g, '');
        if (
          /(?<![\w$.-])z(?![\w$])/.test(
            rest.replace(/\/\/.*$|\/\*[\s\S]*?\*\/|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`/gm, ''),
          )
        )
          bare = true;
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
    b.onResolve({ filter: /^zod$/ }, (a) =>
      /[\\/]node_modules[\\/]/.test(a.importer) ? undefined : { path: 'z', namespace: 'zod-used' },
    );
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
  absWorkingDir: root,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  outExtension: { '.js': '.cjs' },
  charset: 'ascii',
  // Packages with native binaries, wasm or files of their own found relative to themselves stay in node_modules.
  external: ['esbuild', 'pyodide', 'playwright-core', 'deno'],
  // bin/bundle-loader.mjs compiles the file as the body of a function of (exports, require, module, __filename,
  // __dirname, __tyImportMetaUrl): the bundle's URL stands in for each module's import.meta.url (the file sits in
  // dist/cli/ at the depth of dist/node/, so relative lookups resolve alike).
  define: { 'import.meta.url': '__tyImportMetaUrl' },
  plugins: [zodEnglishOnly, zodCompileUnused, zodUsedOnly, lazyDeps],
  legalComments: 'linked',
  // Source maps for tools that read them (test/bench/profile-run.mjs attributes profile time to the original modules);
  // node reads them only with --enable-source-maps.
  sourcemap: 'linked',
  logLevel: 'warning',
});

/**
 * vm.Script has no import() on Node 20 (it needs --experimental-vm-modules), so every dynamic import() esbuild leaves
 * in the bundle (an external package, a specifier computed at run time) calls the loader's `_tyimp` instead: the same
 * length as `import`, so the source map's columns stay right. Found with acorn (ImportExpression nodes), not by text.
 * Comments keep their non-ASCII characters (esbuild escapes them in code only): each becomes `?`, one UTF-16 unit for
 * one, so the text is ASCII (the loader reads it as latin1) and the columns stay right.
 */
function routeDynamicImports(text) {
  const at = [];
  const comments = [];
  const walk = (n) => {
    if (!n || typeof n.type !== 'string') return;
    if (n.type === 'ImportExpression') at.push(n.start);
    for (const k in n) {
      const v = n[k];
      if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object' && typeof v.type === 'string') walk(v);
    }
  };
  walk(
    Parser.parse(text, {
      ecmaVersion: 'latest',
      sourceType: 'script',
      allowReturnOutsideFunction: true,
      allowHashBang: true,
      onComment: (_b, _t, start, end) => comments.push([start, end]),
    }),
  );
  const out = text.split('');
  for (const i of at) {
    if (text.slice(i, i + 6) !== 'import') throw new Error(`dynamic import at ${i} is not spelled import(`);
    out.splice(i, 6, ...'_tyimp');
  }
  for (const [a, b] of comments) for (let i = a; i < b; i++) if (text.charCodeAt(i) > 0x7f) out[i] = '?';
  return out.join('');
}
const file = join(outdir, 'tycli.cjs');
let text = routeDynamicImports(readFileSync(file, 'utf8'));
// The loader reads the bundle as latin1 when its cache fits: that is only right for ASCII (esbuild escapes the rest).
if (/[^\x00-\x7f]/.test(text)) throw new Error('dist/cli/tycli.cjs has non-ASCII characters outside comments');
// The file is the body of the function bin/bundle-loader.mjs calls (BUNDLE_OPEN on the first line, before esbuild's
// "use strict", so line numbers stay those of the source map), compiled as it is read: no copy of 4 MB joined.
text = `${BUNDLE_OPEN}${text}${text.endsWith('\n') ? '' : '\n'}${BUNDLE_CLOSE}\n`;
// Last line: the content's SHA-256, which the code cache's header repeats (bin/bundle-loader.mjs binds the two).
text += `${ID_PREFIX}${createHash('sha256').update(text, 'latin1').digest('hex')}\n`;
writeFileSync(`${file}.tmp`, text, 'latin1');
renameSync(`${file}.tmp`, file);

// The code cache: a failure leaves the bundle without one (it then compiles from source), never fails the build.
const gen = spawnSync(process.execPath, [join(root, 'node', 'cli', 'build-code-cache.mjs')], {
  stdio: ['ignore', 'inherit', 'inherit'],
  timeout: 180_000,
});
if (gen.status !== 0)
  process.stderr.write(
    `warning: no code cache for dist/cli/tycli.cjs (build-code-cache exited ${gen.status ?? gen.signal}); the command line compiles from source\n`,
  );
