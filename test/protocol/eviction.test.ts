// A long-lived `tycli serve` keeps its retained sandboxes in bounds as any host does: destroyed after idleMs
// ($TYCLI_IDLE_MS) and, least recently used first, under the memory budget ($TYCLI_MEMORY_BUDGET_MB); test side.
import { spawnSync } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { connectStdio } from '../../node/client.js';
import { BIN, cleanEnv, tempHome } from './helpers.js';

/** A counter tool: each call returns its sandbox's own count (1 from a fresh sandbox). */
const counter = (name: string) => ({
  name,
  description: 'counts its calls',
  parameters: { type: 'object' },
  execution: { kind: 'sandboxed-code', runtime: 'javascript', source: 'let n = 0; export default async () => ++n;' },
});

async function serve(home: string, env: Record<string, string>) {
  return connectStdio(['setsid', process.execPath, BIN, '--home', home, '--sandbox', 'off', 'serve'], {
    env: { ...cleanEnv(home), ...env },
    cwd: home,
    name: 'eviction',
    version: '1.0.0',
  });
}

describe('tycli serve keeps retained sandboxes in bounds', () => {
  it('a sandbox idle for TYCLI_IDLE_MS is destroyed: the next call gets a fresh one', async () => {
    const home = await tempHome('idle');
    const c = await serve(home, { TYCLI_IDLE_MS: '700' });
    try {
      await c.tool.add(counter('count'));
      expect((await c.tool.run('count', {})).result).toBe(1);
      expect((await c.tool.run('count', {})).result).toBe(2); // kept between calls
      await new Promise((r) => setTimeout(r, 2000));
      expect((await c.tool.run('count', {})).result).toBe(1); // destroyed while idle
    } finally {
      await c.close();
      await rm(home, { recursive: true, force: true });
    }
  }, 60_000);

  it('TYCLI_MEMORY_BUDGET_MB: starting one more sandbox past the budget destroys the least recently used idle one', async () => {
    const home = await tempHome('budget');
    // each node sandbox with the default 256 MiB heap is charged 512 MiB: two fit in 1100, a third evicts one
    const c = await serve(home, { TYCLI_MEMORY_BUDGET_MB: '1100' });
    try {
      for (const t of ['a', 'b', 'c']) await c.tool.add(counter(`count-${t}`));
      const run = async (t: string) => (await c.tool.run(`count-${t}`, {})).result;
      expect(await run('a')).toBe(1);
      expect(await run('b')).toBe(1);
      expect(await run('a')).toBe(2);
      expect(await run('c')).toBe(1); // b was the least recently used idle one
      expect(await run('a')).toBe(3);
      expect(await run('b')).toBe(1); // fresh
    } finally {
      await c.close();
      await rm(home, { recursive: true, force: true });
    }
  }, 60_000);

  it('a TYCLI_IDLE_MS that is not a positive whole number refuses to start (E_USAGE, exit 2)', async () => {
    const home = await tempHome('idle-bad');
    try {
      const r = spawnSync(process.execPath, [BIN, '--home', home, 'serve'], {
        env: { ...cleanEnv(home), TYCLI_IDLE_MS: 'soon' },
        cwd: home,
        input: '',
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toContain('E_USAGE');
      expect(r.stderr).toContain('TYCLI_IDLE_MS must be a positive integer (ms)');
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }, 60_000);
});
