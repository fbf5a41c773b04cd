// Evaluated before any schema is built: switches zod to jitless (no eval probe under a strict CSP); browser host,
// trusted side.
// zod 4 compiles object parsers with `new Function` when eval is allowed and probes for it when an object schema is
// built; under a page CSP without 'unsafe-eval' that probe is refused and reported as a violation (and sent to the
// page's report-uri). Jitless parsing gives the same results without the probe. zod keeps its configuration in
// `globalThis.__zod_globalConfig` (zod/v4/core/core.js, `config()` assigns into it), so setting the flag there works
// whether zod's core was evaluated before or after this module; the build puts this module in the chunk of zod's core
// (browser/build/config.mjs), so it runs before any chunk that builds a schema. It applies to the whole page's zod.
const g = globalThis as { __zod_globalConfig?: { jitless?: boolean } };
(g.__zod_globalConfig ??= {}).jitless = true;
export {};
