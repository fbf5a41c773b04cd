// Changes of the tool list as `tool/listChanged` reports them: snapshots of the name bindings, diffed whenever
// something may have changed (this process, another process sharing the store, the app's own UI); core, trusted side.
import type { ToolChange } from '../../protocol/registration.js';
import type { ToolRegistry } from '../revisions/registry.js';

/** The bindings as a snapshot: name -> its active revision and every revision installed under it. */
export type BindingSnapshot = ReadonlyMap<string, { active: string | undefined; revisions: readonly string[] }>;

/** Most changes in one `tool/listChanged` (ListChangedParamsSchema); more are sent as several notifications. */
export const MAX_CHANGES_PER_MESSAGE = 500;

/** Read the registry's bindings now (built-ins included: they never change, so they never show in a diff). */
export async function snapshotBindings(registry: Pick<ToolRegistry, 'list'>): Promise<BindingSnapshot> {
  const out = new Map<string, { active: string | undefined; revisions: readonly string[] }>();
  for (const t of await registry.list()) out.set(t.name, { active: t.active, revisions: [...t.revisions] });
  return out;
}

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * What changed from `before` to `after`, by name (UTF-16 code-unit order): each revision newly installed under a name
 * is `added`, a name whose active revision is now another one is `activated` (to it), a name that had an active
 * revision and has none (or is gone) is `removed` (naming the one that was active). A first install is `added` then
 * `activated`. Revisions dropped by garbage collection are not changes of the list a client sees.
 */
export function diffSnapshots(before: BindingSnapshot, after: BindingSnapshot): ToolChange[] {
  const out: ToolChange[] = [];
  const names = [...new Set([...before.keys(), ...after.keys()])].sort(byCodeUnits);
  for (const name of names) {
    const b = before.get(name);
    const a = after.get(name);
    if (a) {
      const had = new Set(b?.revisions ?? []);
      for (const r of a.revisions) if (!had.has(r)) out.push({ name, change: 'added', revision: r });
      if (a.active !== undefined && a.active !== b?.active) out.push({ name, change: 'activated', revision: a.active });
    }
    if (b?.active !== undefined && a?.active === undefined) out.push({ name, change: 'removed', revision: b.active });
  }
  return out;
}

/**
 * Watches one registry for changes on behalf of subscribers. Nothing is read until the first subscriber; then a
 * snapshot is the baseline and each `poke()` (debounced by `debounceMs`, default 50 ms; re-reads run one after the
 * other) takes a new snapshot and tells every subscriber the diff, in chunks of at most MAX_CHANGES_PER_MESSAGE. A poke
 * is only a hint: it costs one read of the bindings, and nothing is sent when nothing changed. Hosts poke on their own
 * writes and on their store's change signals (a folder watch, another tab's message).
 */
export class RegistryChanges {
  readonly #subs = new Set<(changes: ToolChange[]) => void>();
  #last: Promise<BindingSnapshot | undefined> = Promise.resolve(undefined);
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(
    readonly registry: Pick<ToolRegistry, 'list'>,
    readonly debounceMs = 50,
  ) {}

  /** Be told each batch of changes; returns the unsubscribe function. The first subscriber takes the baseline. */
  subscribe(fn: (changes: ToolChange[]) => void): () => void {
    if (this.#subs.size === 0 && !this.#closed) this.#last = this.#last.then(() => this.#read());
    this.#subs.add(fn);
    return () => {
      this.#subs.delete(fn);
    };
  }

  /** Number of subscribers. */
  get size(): number {
    return this.#subs.size;
  }

  /** Something may have changed: read and diff soon (debounced). Without subscribers, nothing is read. */
  poke(): void {
    if (this.#closed || this.#subs.size === 0 || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.settle();
    }, this.debounceMs);
    (this.#timer as unknown as { unref?: () => void }).unref?.();
  }

  /** Read and diff now (after any read in progress); resolves once subscribers were told. */
  settle(): Promise<void> {
    const next = this.#last.then(async (before) => {
      const after = await this.#read();
      if (before && after && !this.#closed) {
        const changes = diffSnapshots(before, after);
        for (let i = 0; i < changes.length; i += MAX_CHANGES_PER_MESSAGE)
          for (const fn of [...this.#subs]) {
            try {
              fn(changes.slice(i, i + MAX_CHANGES_PER_MESSAGE));
            } catch {
              /* a subscriber's failure is its own */
            }
          }
      }
      return after ?? before;
    });
    this.#last = next;
    return next.then(() => undefined);
  }

  /** Stop: no more reads or messages. */
  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#subs.clear();
  }

  async #read(): Promise<BindingSnapshot | undefined> {
    try {
      return await snapshotBindings(this.registry);
    } catch {
      return undefined; // a store that cannot be read now: the next poke tries again against the last good snapshot
    }
  }
}
