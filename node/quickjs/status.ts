// What `tycli sandbox status` and diagnostics show of the quickjs engine: the QuickJS binary checked against its pinned
// digest and the sandbox host bundle; Node host, trusted side.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { QUICKJS_PACKAGE, QUICKJS_WASM_SHA256 } from '../../core/quickjs/wasm.js';
import { packageRoot } from '../sandbox/engines.js';
import { SANDBOX_HOST_BUNDLE, quickJsWasmPath } from './runtime.js';

/** The quickjs engine on this machine. */
export interface QuickJsStatus {
  /** Whether quickjs revisions can run: the binary matches its digest and the sandbox host is built. */
  available: boolean;
  /** The QuickJS release inside the binary. */
  version: string;
  /** The npm package the binary comes from, with its version. */
  package: string;
  /** The .wasm file, and whether its sha-256 is the pinned one. */
  wasm?: { path: string; verified: boolean };
  /** The sandbox host bundle (dist/quickjs/sandbox-host.cjs). */
  host?: string;
  /** Why it is not available. */
  reason?: string;
}

/** Check the binary (sha-256 of the file, synchronous) and that the sandbox host is built. Never throws. */
export function quickJsStatus(root: string = packageRoot()): QuickJsStatus {
  const out: QuickJsStatus = { available: false, version: 'QuickJS 2025-09-13', package: QUICKJS_PACKAGE };
  let wasm: string;
  try {
    wasm = quickJsWasmPath();
  } catch {
    out.reason = `${QUICKJS_PACKAGE} is not installed`;
    return out;
  }
  let verified = false;
  try {
    verified = createHash('sha256').update(readFileSync(wasm)).digest('hex') === QUICKJS_WASM_SHA256;
  } catch {
    /* unreadable: not verified */
  }
  out.wasm = { path: wasm, verified };
  const host = join(root, SANDBOX_HOST_BUNDLE);
  if (existsSync(host)) out.host = host;
  if (!verified) out.reason = `the QuickJS binary does not match its pinned sha-256 (E_INTEGRITY)`;
  else if (!out.host) out.reason = `${SANDBOX_HOST_BUNDLE} is missing: run npm run build`;
  out.available = out.reason === undefined;
  return out;
}
