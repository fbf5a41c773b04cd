// `npm run lint`: Biome (format and lint rules), dependency-cruiser (layers, cycles) and the line-width check, each run
// whatever the others found; exits 1 when any of them fails. Trusted tooling, never shipped.
import { spawnSync } from 'node:child_process';

const steps = [
  ['biome', ['ci', '.']],
  [
    'depcruise',
    [
      'core',
      'node',
      'browser',
      'protocol',
      'bin',
      'tools',
      'test',
      '--config',
      '.dependency-cruiser.cjs',
      '--output-type',
      'err',
    ],
  ],
  [process.execPath, ['.ci/lint/line-width.mjs']],
];
let failed = 0;
for (const [cmd, args] of steps) {
  const bin = cmd === process.execPath ? cmd : `node_modules/.bin/${cmd}`;
  const r = spawnSync(bin, args, { stdio: 'inherit' });
  if (r.status !== 0) {
    failed++;
    console.error(`lint: ${cmd.includes('/') ? 'line width' : cmd} failed`);
  }
}
process.exit(failed > 0 ? 1 : 0);
