// Fault suite: 10,000 calls submitted at once under `ulimit -n 1024` complete or get E_BUSY (audited in aggregate),
// never EMFILE; test side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT, tempDir } from './helpers.js';

const run = promisify(execFile);
let tmp: string;
beforeAll(async () => {
  tmp = await tempDir('load');
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

interface LoadOutcome {
  completed: number;
  busy: number;
  other: Record<string, number>;
  emfile: number;
  outOfOrder: number;
  ms: number;
  /** The refusals the audit log's admission records count, and how many records they are. */
  auditedBusy: number;
  admissionRecords: number;
}

/**
 * Run test/faults/load-child.mjs under `ulimit -n 1024` (the built dist/, a real Node host with its OS sandbox
 * posture).
 */
export async function loadRun(home: string, calls: number, tools: number, maxQueued?: number): Promise<LoadOutcome> {
  const child = join(ROOT, 'test', 'faults', 'load-child.mjs');
  const args = [home, String(calls), String(tools), ...(maxQueued ? [String(maxQueued)] : [])]
    .map((a) => `'${a}'`)
    .join(' ');
  const { stdout } = await run('/bin/sh', ['-c', `ulimit -n 1024 && exec '${process.execPath}' '${child}' ${args}`], {
    cwd: tmp,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp },
    timeout: 240_000,
    maxBuffer: 1 << 20,
  });
  return JSON.parse(stdout.trim().split('\n').pop()!) as LoadOutcome;
}

describe('admission control under a descriptor limit', () => {
  it('10,000 calls at once, default bound: each completes or gets E_BUSY; none fails otherwise (no EMFILE); FIFO kept', async () => {
    const r = await loadRun(join(tmp, 'a'), 10_000, 4);
    expect(r.other).toEqual({});
    expect(r.emfile).toBe(0);
    expect(r.completed + r.busy).toBe(10_000);
    expect(r.completed).toBeGreaterThanOrEqual(1024);
    expect(r.outOfOrder).toBe(0);
    // finding 7 of issue 26: every refusal is in the audit, in aggregate (a handful of records, not one per refusal)
    expect(r.auditedBusy).toBe(r.busy);
    if (r.busy > 0) expect(r.admissionRecords).toBeGreaterThanOrEqual(1);
    expect(r.admissionRecords).toBeLessThanOrEqual(Math.max(1, Math.ceil(r.ms / 1000) + 1));
  });

  it('2,000 calls at once, all admitted (maxQueuedCalls 20,000) across 8 sandboxes: every one completes (store descriptors bounded)', async () => {
    const r = await loadRun(join(tmp, 'b'), 2000, 8, 20_000);
    expect(r.other).toEqual({});
    expect(r.completed).toBe(2000);
    expect(r.outOfOrder).toBe(0);
  });
});
