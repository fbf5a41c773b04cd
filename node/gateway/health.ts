// Readiness of a gateway instance (/readyz): the store reachable and the sandbox engine usable, each check bounded in
// time; Node host, trusted side.
import { access, constants } from 'node:fs/promises';
import type { StoreBackend } from '../../core/store/contract.js';

/** One check: resolves when it passes, throws (with a short reason) when it does not. */
export type ReadinessCheck = () => Promise<void>;

export interface Readiness {
  ok: boolean;
  checks: Record<string, { ok: boolean; reason?: string }>;
}

/**
 * Run every check at once, each within `timeoutMs` (default 2000): ready when all pass. Reasons are short and name no
 * secret (a store URL's password never appears: checks report a category, not the error text of the driver).
 */
export async function readiness(checks: Record<string, ReadinessCheck>, timeoutMs = 2000): Promise<Readiness> {
  const out: Readiness = { ok: true, checks: {} };
  await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      try {
        await Promise.race([
          check(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error('timed out')), timeoutMs);
          }),
        ]);
        out.checks[name] = { ok: true };
      } catch (e) {
        out.ok = false;
        out.checks[name] = { ok: false, reason: reasonOf(e) };
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return out;
}

function reasonOf(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  if (/timed out/.test(msg)) return 'timed out';
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' ? code.slice(0, 32) : 'failed';
}

/**
 * The store check: on PostgreSQL one `SELECT 1` through the pool (and the instance session connected, when given); on
 * the file store the folder is writable.
 */
export function storeCheck(backend: StoreBackend, session?: { readonly connected: boolean }): ReadinessCheck {
  return async () => {
    const pool = (backend as { pool?: { query(t: string): Promise<unknown> } }).pool;
    if (pool) {
      await pool.query('SELECT 1');
      if (session && !session.connected) throw Object.assign(new Error('session lost'), { code: 'session-lost' });
      return;
    }
    const root = (backend as { root?: string }).root;
    if (root) await access(root, constants.W_OK);
  };
}
