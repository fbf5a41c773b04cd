// Tells a RegistrationServer when the name bindings in the file store change (another `tycli serve`, `tycli tool add`
// in a terminal, any process sharing the home); Node host, trusted side.
import { mkdirSync, watch, type FSWatcher } from 'node:fs';
import { join } from 'node:path';
import type { RegistrationServer } from '../../core/registration/server.js';

/** How often the bindings are read again when no file event came (a missed inotify event, network file systems), ms. */
export const REGISTRY_POLL_MS = 5000;

/**
 * Watch `<storeRoot>/bindings` (fs.watch: inotify on Linux, FSEvents on macOS; every binding write is an atomic rename
 * into that folder) and poke `server.registryChanged()` on each event, plus once every `pollMs` (default
 * REGISTRY_POLL_MS) in case an event was missed. A poke reads the bindings only while a session subscribed to
 * `tool/listChanged`, and sends nothing when nothing changed (core/registration/changes.ts).
 * @returns a function that stops watching (idempotent)
 */
export function watchRegistry(
  storeRoot: string,
  server: Pick<RegistrationServer, 'registryChanged'>,
  opts: { pollMs?: number } = {},
): () => void {
  const dir = join(storeRoot, 'bindings');
  let w: FSWatcher | undefined;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    w = watch(dir, { persistent: false }, () => server.registryChanged());
    w.on('error', () => undefined);
  } catch {
    w = undefined; // no watch: the poll alone finds changes
  }
  const poll = setInterval(() => server.registryChanged(), opts.pollMs ?? REGISTRY_POLL_MS);
  poll.unref();
  return () => {
    clearInterval(poll);
    w?.close();
    w = undefined;
  };
}
