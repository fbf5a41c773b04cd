// Imported first by the browser host: switches zod to jitless before any schema is built (no eval probe under a strict CSP); browser host, trusted side.
import { config } from 'zod';

// zod 4 compiles object parsers with `new Function` when eval is allowed and probes for it when an object schema
// is built; under a page CSP without 'unsafe-eval' that probe is refused and reported as a violation (and sent to
// the page's report-uri). Jitless parsing gives the same results without the probe. It must run before the modules
// that define schemas, so browser/index.ts and browser/host.ts import it first. It applies to the whole page's zod.
config({ jitless: true });
