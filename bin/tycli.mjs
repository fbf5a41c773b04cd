#!/usr/bin/env node
// tycli launcher: loads the compiled command line from dist/; Node host, trusted side.
// A reader that went away (`tycli tool list | head`) ends the command quietly, like other Unix tools.
for (const s of [process.stdout, process.stderr]) {
  s.on('error', (e) => {
    if (e && e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
}
let mod;
try {
  mod = await import('../dist/node/cli/main.js');
} catch (e) {
  if (e && e.code === 'ERR_MODULE_NOT_FOUND' && String(e.message).includes('dist/node/cli/main.js')) {
    process.stderr.write('error[E_USAGE]: tycli is not built; run `npm run build` in the tysandbox folder first\n');
    process.exit(2);
  }
  throw e;
}
const code = await mod.main(process.argv.slice(2));
// Every command has closed what it opened (sandboxes are destroyed before main returns); flush the
// output, then exit so that no stray handle (a keep-alive socket, a terminal) holds the process open.
await Promise.all([process.stdout, process.stderr].map((s) => new Promise((r) => s.write('', r))));
process.exit(code);
