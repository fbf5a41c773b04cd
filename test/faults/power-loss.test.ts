// A power loss right after the file store reported a write done keeps the write, in a home whose folders the write
// itself made: the interposer's strict POSIX model (test/faults/crash/interpose.mjs) drops every change not fsync'd,
// folder entries included; test side.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript module shared with test/bench/faults.bench.mjs
import { ROOT, jsonLines, restoreImage, runCommand, scratch } from './crash/harness.mjs';

const CHILD = join(ROOT, 'test', 'faults', 'crash', 'store-child.mjs');
let dir: string;
beforeAll(async () => {
  dir = await scratch('power');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Run one store write on a fresh home, then lose power as the process exits; resolves to the rebuilt home. */
async function afterPowerLoss(op: string): Promise<{ home: string; reported: boolean }> {
  const home = join(dir, op);
  const image = join(dir, `${op}.image.json`);
  // the home exists (its own entry is durable); nothing under it does
  const { mkdirSync } = await import('node:fs');
  mkdirSync(home, { mode: 0o700 });
  const r = await runCommand(
    home,
    { script: CHILD, args: [op] },
    { log: join(dir, `${op}.trace`), at: 1_000_000, mode: 'power', image },
  );
  expect(r.code).toBe(0);
  restoreImage(home, image);
  return { home, reported: jsonLines(r.stdout).some((l: { ok?: boolean }) => l.ok) };
}

describe('power loss after a reported write', () => {
  it('an entry put into a namespace folder the store just made survives (the new folders fsync their parents)', async () => {
    const { home, reported } = await afterPowerLoss('put');
    expect(reported).toBe(true);
    expect(readFileSync(join(home, 'store', 'objects', 'entry'), 'utf8')).toBe('{"durable":true}');
  });

  it('a record appended to a log the store just created survives (its folder fsync’d after the file)', async () => {
    const { home, reported } = await afterPowerLoss('append');
    expect(reported).toBe(true);
    expect(readFileSync(join(home, 'store', '.logs', 'audit'), 'utf8')).toBe('{"durable":true}\n');
  });

  it('a record longer than PIPE_BUF (the locked append path) on a new log survives', async () => {
    const { home, reported } = await afterPowerLoss('append-long');
    expect(reported).toBe(true);
    expect(JSON.parse(readFileSync(join(home, 'store', '.logs', 'audit'), 'utf8')).durable).toBe(true);
  });

  it('a secret stored in a config folder the store just made survives', async () => {
    const { home, reported } = await afterPowerLoss('secret');
    expect(reported).toBe(true);
    expect(existsSync(join(home, 'config', 'secrets.json'))).toBe(true);
    expect(JSON.parse(readFileSync(join(home, 'config', 'secrets.json'), 'utf8')).secrets.TOK).toBe('a-durable-secret');
  });
});
