#!/usr/bin/env node
// tycli launcher: loads the compiled command line from dist/; Node host, trusted side.
import { loadBundle } from './bundle-loader.mjs';

// A reader that went away (`tycli tool list | head`) ends the command quietly, like other Unix tools.
for (const s of [process.stdout, process.stderr]) {
  s.on('error', (e) => {
    if (e && e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
}
// Ctrl-C while the command line is still loading: exit 130 (128 + SIGINT) once it has loaded; main() takes over after.
let early;
const onEarly = (sig) => (early ??= sig === 'SIGINT' ? 130 : 143);
process.on('SIGINT', onEarly);
process.on('SIGTERM', onEarly);
// dist/cli/tycli.cjs is the bundled command line (node/cli/build-bundle.mjs), compiled with its V8 code cache
// (bin/bundle-loader.mjs, for start-up time); dist/node/cli/main.js the same code as compiled modules (a build without
// the bundle, TYCLI_UNBUNDLED=1 to compare, or --enable-source-maps: node maps no vm.Script frames, and the compiled
// modules are the files the bundle's source map points to, so stack frames name the same places).
let mod = process.env.TYCLI_UNBUNDLED === '1' || process.sourceMapsEnabled === true ? undefined : loadBundle()?.exports;
// The load is synchronous: let the event loop take a signal that came meanwhile (two turns: one poll phase at least).
for (let i = 0; i < 2; i++) await new Promise((r) => setImmediate(r));
if (!mod) {
  try {
    mod = await import('../dist/node/cli/main.js');
  } catch (e) {
    if (e && e.code === 'ERR_MODULE_NOT_FOUND' && String(e.message).includes('dist/node/cli/main.js')) {
      process.stderr.write('error[E_USAGE]: tycli is not built; run `npm run build` in the tysandbox folder first\n');
      process.exit(2);
    }
    throw e;
  }
}
process.off('SIGINT', onEarly);
process.off('SIGTERM', onEarly);
if (early !== undefined) process.exit(early);
const code = await mod.main(process.argv.slice(2), { signals: true });
// Every command has closed what it opened (sandboxes are destroyed before main returns); flush the
// output, then exit so that no stray handle (a keep-alive socket, a terminal) holds the process open.
await Promise.all([process.stdout, process.stderr].map((s) => new Promise((r) => s.write('', r))));
process.exit(code);
