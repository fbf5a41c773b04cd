// `npm run openrpc`: writes docs/openrpc.json, the committed copy of what `rpc.discover` answers, from the zod schemas
// (core/registration/discover.ts); test side (a development script).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openRpcDocument } from '../../core/registration/discover.js';

export const OPENRPC_FILE = join(import.meta.dirname, '..', '..', 'docs', 'openrpc.json');

/** The committed copy's exact text: the document, two-space indented, one newline at the end. */
export const openRpcText = (): string => `${JSON.stringify(openRpcDocument(), null, 2)}\n`;

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  writeFileSync(OPENRPC_FILE, openRpcText());
  process.stdout.write(`wrote ${OPENRPC_FILE}\n`);
}
