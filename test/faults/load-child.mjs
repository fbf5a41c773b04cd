// Fault suite child: N calls submitted at once to one Node host (built dist/), counting outcomes; run under `ulimit
// -n`; test side.
// argv: HOME CALLS TOOLS [MAX_QUEUED]. Prints one JSON line: { completed, busy, other: {code: n}, emfile, ms,
// auditedBusy, admissionRecords }.
import { createNodeHost } from '../../dist/node/host/host.js';

const [home, callsArg, toolsArg, maxQueuedArg] = process.argv.slice(2);
const calls = Number(callsArg);
const tools = Number(toolsArg);
const host = await createNodeHost({
  home,
  globals: { allow: [], deny: [] },
  python: false,
  ...(maxQueuedArg ? { maxQueuedCalls: Number(maxQueuedArg) } : {}),
});
try {
  for (let t = 0; t < tools; t++) {
    await host.registry.install({
      name: `load${t}`,
      description: 'load test tool',
      parameters: { type: 'object' },
      execution: {
        kind: 'sandboxed-code',
        runtime: 'javascript',
        source: 'let n = 0; export default async (a) => ({ i: a.i, at: n++ });',
      },
    });
  }
  const t0 = Date.now();
  const results = await Promise.all(
    Array.from({ length: calls }, (_, i) => host.invoker.invoke(`load${i % tools}`, { i })),
  );
  const ms = Date.now() - t0;
  const out = { completed: 0, busy: 0, other: {}, emfile: 0, outOfOrder: 0, ms };
  const seen = new Map();
  results.forEach((r, i) => {
    if (r.ok) {
      out.completed++;
      // FIFO per tool: positions within one sandbox rise with call order
      const t = i % tools;
      const prev = seen.get(t) ?? -1;
      if (r.result.at <= prev) out.outOfOrder++;
      seen.set(t, r.result.at);
    } else if (r.error.code === 'E_BUSY') out.busy++;
    else out.other[r.error.code] = (out.other[r.error.code] ?? 0) + 1;
    if (!r.ok && /EMFILE|too many open files/i.test(r.error.message)) out.emfile++;
  });
  // every E_BUSY refusal is audited, in aggregate (kind admission, one record per principal and second, with count)
  await host.close();
  const lines = await host.store.backend.readLog('audit');
  const admission = lines.map((l) => JSON.parse(l)).filter((r) => r.kind === 'admission');
  out.auditedBusy = admission.reduce((n, r) => n + r.count, 0);
  out.admissionRecords = admission.length;
  process.stdout.write(`${JSON.stringify(out)}\n`);
} finally {
  await host.close();
}
