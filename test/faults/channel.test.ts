// Fault suite: a top-level endless loop answers E_TIMEOUT at the call's own limit; a sandbox that closes its channel
// fails the call within a second; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { cliEnv, jsTool, runCli, tempDir, writeManifest } from './helpers.js';

let tmp: string;
let home: string;
beforeAll(async () => {
  tmp = await tempDir('channel');
  home = join(tmp, 'home');
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function add(m: Record<string, unknown>): Promise<void> {
  const r = await runCli(['--home', home, 'tool', 'add', await writeManifest(tmp, m)], cliEnv(tmp), tmp);
  expect(r.code, r.stderr).toBe(0);
}

async function timedRun(
  name: string,
  timeoutMs: number,
): Promise<{ code: string | undefined; ms: number; message: string }> {
  const t0 = Date.now();
  const r = await runCli(['--home', home, '--json', 'run', name, '--timeout', String(timeoutMs)], cliEnv(tmp), tmp);
  const line = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as { error?: { code: string; message: string } };
  return { code: line.error?.code, message: line.error?.message ?? '', ms: Date.now() - t0 };
}

describe('bounded waits', () => {
  // The old fixed load budget was 15 s: "promptly" here is well under it, with room for a loaded machine.
  it.each(['node', 'deno'])(
    'a top-level endless loop (%s) with --timeout 500 answers E_TIMEOUT at the call limit, not at a fixed load budget',
    async (engine) => {
      await add(
        jsTool(`loop-${engine}`, 'while (true) {}\nexport default async () => 1;', {
          execution: {
            kind: 'sandboxed-code',
            runtime: 'javascript',
            engine,
            source: 'while (true) {}\nexport default async () => 1;',
          },
        }),
      );
      const r = await timedRun(`loop-${engine}`, 500);
      expect(r.code).toBe('E_TIMEOUT');
      expect(r.message).toContain('module loaded');
      expect(r.ms).toBeLessThan(8000);
    },
  );

  const closers: [string, string, string][] = [
    [
      'node',
      'closes fd 1',
      "export default async () => { const fs = await import('node:fs'); fs.closeSync(1); await new Promise(() => {}); }",
    ],
    [
      'node',
      'closes fd 0',
      "export default async () => { const fs = await import('node:fs'); fs.closeSync(0); await new Promise(() => {}); }",
    ],
    [
      'node',
      'closes fd 1 and returns',
      "export default async () => { const fs = await import('node:fs'); fs.closeSync(1); return 1; }",
    ],
    ['deno', 'closes stdout', 'export default async () => { Deno.stdout.close(); await new Promise(() => {}); }'],
  ];
  it.each(closers)(
    'a %s sandbox that %s fails the call with E_SANDBOX_FAILED within a second, not at the call timeout',
    async (engine, what, source) => {
      const name = `closer-${engine}-${what.replace(/\W+/g, '-')}`;
      await add(jsTool(name, source, { execution: { kind: 'sandboxed-code', runtime: 'javascript', engine, source } }));
      const r = await timedRun(name, 60_000);
      expect(r.code).toBe('E_SANDBOX_FAILED');
      expect(r.message).toContain('channel');
      // Whole CLI run (start-up, sandbox start, detection) far below the 60 s timeout; detection itself is 200-450 ms.
      expect(r.ms).toBeLessThan(10_000);
    },
  );
});
