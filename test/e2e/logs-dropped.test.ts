// End to end through tycli: `run --logs` never drops log lines without saying how many; test side.
import { describe, expect, it } from 'vitest';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliScratch } from './helpers.js';

const cli = cliScratch('tycli-logs-dropped', 120_000);

describe('tycli run --logs: the log rate limit', () => {
  it.each(['node', 'deno'] as const)(
    '%s: 200,000 console.log calls in one call show the lines allowed and a notice counting every other one',
    async (engine) => {
      const home = join(cli.dir, `home-${engine}`);
      const file = join(cli.dir, `chatty-${engine}.json`);
      const source = `export default async () => { for (let i = 0; i < 200000; i++) console.log('l', i); return 1; }`;
      await writeFile(
        file,
        JSON.stringify({
          name: 'chatty',
          description: 'logs a lot',
          parameters: { type: 'object' },
          execution: { kind: 'sandboxed-code', runtime: 'javascript', source, engine },
        }),
      );
      await cli.add(home, file);
      const r = await cli.tycli(['--home', home, 'run', 'chatty', '--logs']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe('1');
      const shown = r.stderr.split('\n').filter((l) => l.startsWith('[tool info] l ')).length;
      const dropped = [...r.stderr.matchAll(/\[tool warn\] \[(\d+) log messages dropped: rate limit\]/g)].map((m) =>
        Number(m[1]),
      );
      expect(dropped.length, r.stderr.slice(-500)).toBeGreaterThanOrEqual(1);
      expect(shown + dropped.reduce((a, b) => a + b, 0)).toBe(200_000);
    },
  );
});
