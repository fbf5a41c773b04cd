// Fault suite child, run inside `unshare -rm` with HOME on a small tmpfs: audit appends until the disk is full, then
// after space returns; test side.
// argv: STORE_DIR FILLER_PATH. Prints one JSON line: { okBefore, failedFull, okAfter, corruptAfter, unreadable, codes
// }.
import { openSync, writeSync, closeSync, rmSync } from 'node:fs';
import { FileStoreBackend } from '../../dist/node/store/file-store.js';
import { Store } from '../../dist/core/store/contract.js';
import { StoreAuditLog } from '../../dist/core/audit/trail.js';

const [dir, filler] = process.argv.slice(2);
const store = new Store(new FileStoreBackend(dir));
const log = new StoreAuditLog(store);
const rec = (i, phase) => ({
  v: 1,
  time: new Date().toISOString(),
  principal: 'cli:user',
  tool: `t-${phase}-${i}`,
  revision: 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy',
  kind: 'tool',
  decision: 'allow',
  rule: `mode standard ${'p'.repeat(900)}`,
  list: 'mode',
  scope: 'default',
  durationMs: 1,
  outcome: 'ok',
});
const out = { okBefore: 0, failedFull: 0, okAfter: 0, corruptAfter: 0, unreadable: 0, codes: {} };
await log.append(rec(0, 'before'));
out.okBefore++;
// Fill the disk with a file, chunk by chunk, until the file system refuses.
const fd = openSync(filler, 'w');
const chunk = Buffer.alloc(4096, 1);
try {
  for (;;) writeSync(fd, chunk);
} catch {
  /* ENOSPC */
}
try {
  for (;;) writeSync(fd, chunk, 0, 1);
} catch {
  /* ENOSPC: not a byte left */
}
closeSync(fd);
// Appends while full: each fails (E_STORE), some after writing part of the line.
for (let i = 0; i < 8; i++) {
  try {
    await log.append(rec(i, 'full'));
    out.okBefore++;
  } catch (e) {
    out.failedFull++;
    out.codes[e.code] = (out.codes[e.code] ?? 0) + 1;
  }
}
rmSync(filler);
const after = 20;
for (let i = 0; i < after; i++) {
  await log.append(rec(i, 'after'));
  out.okAfter++;
}
const { entries, corrupt } = await log.read();
const seen = new Set(entries.map((e) => e.tool));
for (let i = 0; i < after; i++) if (!seen.has(`t-after-${i}`)) out.corruptAfter++;
out.unreadable = corrupt;
process.stdout.write(`${JSON.stringify(out)}\n`);
