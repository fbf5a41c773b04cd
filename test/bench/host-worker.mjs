// Benchmark child: one Node host process serving calls over its stdio (NDJSON `{id, tool, args}` in, `{id, ok}` out),
// for the several-host-processes rows of test/bench/throughput.bench.mjs; test side.
// Argument: the home (shared with the other host processes; its tools are installed by the parent). Prints `ready`
// once its host is built, then answers calls until its input ends.
import { createInterface } from 'node:readline';
import { load } from './host-fixtures.mjs';

const home = process.argv[2];
const mod = await load();
const host = await mod.createNodeHost({
  home,
  env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home },
  cwd: home,
  python: false,
  globals: { allow: [] },
});
const out = [];
let scheduled = false;
const flush = () => {
  scheduled = false;
  process.stdout.write(out.join(''));
  out.length = 0;
};
const answer = (line) => {
  out.push(line);
  if (!scheduled) {
    scheduled = true;
    setImmediate(flush);
  }
};
createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  host.invoker.invoke(m.tool, m.args).then((r) => answer(`${JSON.stringify({ id: m.id, ok: r.ok })}\n`));
});
process.stdin.on('end', async () => {
  await host.close();
  process.exit(0);
});
process.stdout.write('ready\n');
