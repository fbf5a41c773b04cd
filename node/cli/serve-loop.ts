// What `tycli serve` and `tycli mcp serve|proxy` share: the --http port option, the stop, the 0600 token file;
// Node host, trusted side.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { CliContext } from './types.js';
import { usage } from './output.js';
import { writeFileAtomic } from '../store/atomic.js';

/** `--http PORT` as a number (0: any free port), undefined when absent; a usage error (exit 2) otherwise. */
export function httpPortOption(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!/^[0-9]{1,5}$/.test(String(value)) || port > 65535) usage('--http takes a port number (0 for any free port)');
  return port;
}

/**
 * Resolves when ctx.signal aborts (main() aborts it on the first SIGINT or SIGTERM); never without one. On stdio
 * (`closeStdin`) it also destroys stdin so that a serve loop reading it ends.
 */
export function untilStopped(ctx: CliContext, closeStdin: boolean): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = (): void => {
      if (closeStdin) (ctx.io.stdin as NodeJS.ReadStream).destroy?.();
      resolve();
    };
    if (ctx.signal?.aborted) stop();
    else ctx.signal?.addEventListener('abort', stop, { once: true });
  });
}

/** Writes `token` atomically, mode 0600, to `runDir/fileName` (runDir created 0700); returns the file's path. */
export async function writeTokenFile(runDir: string, fileName: string, token: string): Promise<string> {
  await mkdir(runDir, { recursive: true, mode: 0o700 });
  const tokenFile = join(runDir, fileName);
  await writeFileAtomic(tokenFile, `${token}\n`, { mode: 0o600 });
  return tokenFile;
}
