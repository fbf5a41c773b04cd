// Watches MCP server definitions and namespaces so the bridge can tell clients their lists changed; Node host, trusted
// side.
import { mkdirSync, watch, type FSWatcher } from 'node:fs';
import { definitionsDir, fingerprint, listDefinitions, loadDefinition } from './definitions.js';
import { namespacesDir } from './namespaces.js';

/** What a client's lists depend on: each defined server's fingerprint (or why it cannot load), per name. */
async function snapshot(home: string, only: string | undefined): Promise<string> {
  const parts: string[] = [];
  for (const n of only !== undefined ? [only] : await listDefinitions(home).catch(() => [])) {
    try {
      const d = await loadDefinition(home, n);
      parts.push(`${n}=${d === undefined ? '-' : fingerprint(d)}`);
    } catch {
      parts.push(`${n}=!`);
    }
  }
  return parts.join('\n');
}

/**
 * Call `changed` (debounced by `debounceMs`, default 150) whenever a server is added, removed or defined
 * again (another command, folder or environment), or a namespace file changes; with `only`, just that
 * server. Uses fs.watch (inotify on Linux, FSEvents on macOS) on the definitions and namespaces folders.
 * @returns a function that stops watching.
 */
export function watchDefinitions(
  home: string,
  changed: () => void,
  opts: { only?: string; debounceMs?: number } = {},
): () => void {
  const watchers: FSWatcher[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let last: Promise<string> = snapshot(home, opts.only);
  let stopped = false;
  const check = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      last = last.then(async (before) => {
        const now = await snapshot(home, opts.only);
        if (!stopped && now !== before) changed();
        return now;
      });
    }, opts.debounceMs ?? 150);
    timer.unref();
  };
  const dirs = opts.only !== undefined ? [definitionsDir(home)] : [definitionsDir(home), namespacesDir(home)];
  for (const dir of dirs) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const w = watch(dir, { persistent: false }, () => {
        if (dir !== definitionsDir(home)) {
          // a namespace changed: its offered tools did; no fingerprint to compare
          if (!stopped) changed();
          return;
        }
        check();
      });
      w.on('error', () => undefined);
      watchers.push(w);
    } catch {
      /* a folder that cannot be watched: lists are still right on the next request */
    }
  }
  return () => {
    stopped = true;
    if (timer !== undefined) clearTimeout(timer);
    for (const w of watchers) w.close();
  };
}
