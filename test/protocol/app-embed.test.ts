// `tycli app --embed-origin`: the page origins that may frame the app (CSP frame-ancestors), refused when not an
// origin; test side.
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { runProcess } from '../e2e/helpers.js';
import { BIN, ROOT, cleanEnv, tempHome } from './helpers.js';

describe.skipIf(!existsSync(join(ROOT, 'dist', 'browser', 'browser', 'app', 'index.html')))(
  'tycli app --embed-origin',
  () => {
    it('lists the given origins in frame-ancestors and refuses a value that is not an origin', async () => {
      const home = await tempHome('app');
      const child = spawn(
        'setsid',
        [
          process.execPath,
          BIN,
          '--home',
          home,
          '--json',
          'app',
          '--port',
          '0',
          '--embed-origin',
          'http://127.0.0.1:4321',
          '--embed-origin',
          'https://embedder.example',
        ],
        { env: cleanEnv(home), cwd: home, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      try {
        const line = await new Promise<string>((res, rej) => {
          let out = '';
          child.stdout.on('data', (d) => {
            out += String(d);
            if (out.includes('\n')) res(out.split('\n')[0]!);
          });
          child.once('exit', (c) => rej(new Error(`tycli app exited ${c}`)));
        });
        const { url } = JSON.parse(line) as { url: string };
        const csp = (await fetch(url)).headers.get('content-security-policy') ?? '';
        expect(csp).toContain('frame-ancestors http://127.0.0.1:4321 https://embedder.example');
      } finally {
        child.kill('SIGTERM');
      }
      const bad = await runProcess(
        process.execPath,
        [BIN, '--home', home, 'app', '--port', '0', '--embed-origin', 'https://a.example/path'],
        cleanEnv(home),
        home,
      );
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--embed-origin takes an origin');
    });
  },
);
