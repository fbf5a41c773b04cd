// Browser host security contracts in real Chromium (vite build, loopback server, playwright-core driving
// /usr/bin/chromium); test code, trusted side.
import { beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { CHROMIUM_PATH, runBrowserContracts, type ContractRow } from '../../node/diagnostics/browser-driver.mjs';

const haveChromium = existsSync(CHROMIUM_PATH);
let rows: ContractRow[] = [];

/** Contracts the harness must report (a missing row is a failure, not a skip). */
const EXPECTED = [
  'sandbox frame: sandbox attribute is exactly allow-scripts',
  'worker: network, storage and worker constructors are removed or blocked',
  'worker: CSP alone (no JavaScript lock-down) blocks every network path',
  'control: the same fetch probe in a sandboxed frame without the CSP does reach the beacon server',
  'origin is "null" (opaque) in the sandbox frame and in its worker',
  'frame: top navigation and window.open are blocked; a self-navigation is noticed',
  'host: messages from other windows (fake handshakes, forged ports) are ignored',
  'js-escape: Function constructor',
  'js-escape: hostile errors',
  'js-escape: a Proxy result or a Proxy fetch init',
  'js-escape: an endless loop is stopped at the time limit',
  'js-escape: a 50 MiB result is refused with E_OUTPUT_LIMIT',
  'lifecycle: calls to one sandbox are serialized; abort destroys it',
  'lifecycle (core pool): retained per revision',
  'python: Pyodide computes in the worker; its own network paths fail',
  'python: escape cases fail closed',
  'python: the in-memory file system and module state are reset',
  'python: a Pyodide file that does not match its built-in digest',
  'ask dialog: shows the sanitized question with server hints',
  'popups: only trusted host tools, only after the gate allows',
  'host end to end: registry on IndexedDB',
  'bundled revision: the browser host runs a multi-file tool bundled by tycli',
  'fetch transport: no cookies or referrer sent, redirects refused',
  'capabilities: ctx.storage/getSecret requests reach the host handler',
  'fetch (worker): URL credentials are E_FETCH_CREDENTIALS',
  'store (IndexedDB): content-addressed objects are re-hashed on read',
  'store (IndexedDB): withLock serializes read-modify-write',
  'quickjs: one opaque frame per principal holds its sandboxes',
  'quickjs: a memory bomb is E_MEMORY_LIMIT; the worker, the frame and a sibling sandbox go on',
  'quickjs: an endless loop is E_TIMEOUT; the frame and a sibling sandbox go on',
  'quickjs: js-escape cases',
  'quickjs: deep recursion is a RangeError the tool catches',
  'quickjs: the QuickJS binary must match the digest compiled into the app',
  'no request from a sandbox reached the network (loopback beacon server)',
];

describe.skipIf(!haveChromium)('browser host in Chromium', () => {
  beforeAll(async () => {
    rows = await runBrowserContracts({});
  }, 240_000);

  for (const name of EXPECTED) {
    it(name, () => {
      const row = rows.find((r) => r.name.startsWith(name));
      expect(row, `no row for "${name}"`).toBeDefined();
      expect(row!.detail).toBeTypeOf('string');
      expect({ name: row!.name, ok: row!.ok, detail: row!.detail }).toMatchObject({ ok: true });
    });
  }
  it('every row the harness reported passed', () => {
    expect(rows.length).toBeGreaterThanOrEqual(EXPECTED.length);
    expect(rows.filter((r) => !r.ok)).toEqual([]);
  });
});
