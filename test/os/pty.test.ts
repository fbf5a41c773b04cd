// /dev/tty and TIOCSTI from inside the sandbox while the CLI holds a pseudo-terminal (util-linux `script -qec`); Node
// host, trusted side.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');

describe.runIf(process.platform === 'linux' && existsSync('/usr/bin/script') && existsSync('/usr/bin/python3'))(
  'under a pseudo-terminal',
  () => {
    it('the CLI has a controlling tty, the sandbox has none: /dev/tty gives ENXIO and TIOCSTI is refused', () => {
      const r = spawnSync('/usr/bin/script', ['-qec', `${tsx} test/os/pty-child.mts`, '/dev/null'], {
        cwd: root,
        encoding: 'utf8',
        timeout: 120_000,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const line = r.stdout
        .replace(/\r/g, '')
        .split('\n')
        .find((l) => l.includes('RESULT {'));
      expect(line, `${r.stdout}\n${r.stderr}`).toBeDefined();
      const res = JSON.parse((line as string).slice(line!.indexOf('{'))) as Record<string, string>;
      // Controls: the terminal is really there, and unsandboxed Python could inject into it.
      expect(res.hostTty).toBe('opened');
      expect(JSON.parse(res.pythonUnsandboxed as string)).toEqual({ fd0: 'injected', devtty: 'opened' });
      // With every layer: refused by the engine first; with the engine's checks off: no controlling terminal.
      expect(res['node/full']).toBe('ERR_ACCESS_DENIED');
      expect(res['deno/full']).toBe('NotCapable');
      expect(res['node/os-only']).toBe('ENXIO');
      expect(res['deno/os-only']).toBe('ENXIO');
      // Native Python under the same wrapper, holding the pty as fd 0: TIOCSTI EPERM (not its controlling tty),
      // /dev/tty ENXIO.
      expect(JSON.parse(res.pythonSandboxed as string)).toEqual({
        fd0: 'Operation not permitted',
        devtty: 'No such device or address',
      });
    });
  },
);
