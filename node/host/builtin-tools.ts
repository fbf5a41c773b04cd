// Registry with host built-in tools (e.g. the native `python` tool) held in memory beside the stored revisions; Node
// host, trusted side.
import { TyError } from '../../core/errors.js';
import {
  ToolRegistry,
  parseRef,
  revisionId,
  type NativeFunction,
  type ResolvedTool,
} from '../../core/revisions/registry.js';
import { matchesPrefix, shortId } from '../../core/revisions/refs.js';
import type { ToolManifest } from '../../protocol/manifest.js';

/** One row of `list()`: stored tools as ToolRegistry lists them; built-ins carry `builtin: true`. */
export interface ListedTool {
  name: string;
  active: string | undefined;
  revisions: string[];
  builtin?: true;
}

/**
 * The host's registry: the stored, content-addressed revisions (ToolRegistry) plus built-in tools that this
 * process offers. A built-in is never written to the store; its revision id is the CID of its manifest
 * (core/revisions/registry.ts revisionId), so it is the same on every run and every machine for the same manifest.
 * Resolution: a stored binding of the same name wins for an unpinned `NAME` (an installed tool is never
 * shadowed); `NAME@REV` with the built-in's revision always reaches the built-in.
 */
export class HostToolRegistry extends ToolRegistry {
  readonly #builtins = new Map<string, { revision: string; manifest: ToolManifest }>();

  /**
   * Offer a built-in tool for this process: validates the manifest, registers `fn` under its revision.
   * @returns the revision id
   * @throws TyError E_INVALID_MANIFEST
   */
  async addBuiltin(manifest: ToolManifest, fn: NativeFunction): Promise<string> {
    if (manifest.execution.kind !== 'trusted-native')
      throw new TyError('E_INVALID_MANIFEST', 'a built-in tool is trusted-native');
    const revision = await revisionId(manifest);
    this.#builtins.set(manifest.name, { revision, manifest });
    this.registerNative(revision, fn);
    return revision;
  }

  /**
   * As ToolRegistry.install, refusing a name that differs only in letter case from a built-in's (`Python` beside the
   * built-in `python` reads as the built-in in a list; tool names are ASCII). The built-in's own name stays allowed:
   * a person's stored tool of that exact name shadows it for an unpinned call (see the class comment).
   * @throws TyError E_INVALID_MANIFEST (data path `name`, conflictsWith the built-in's name)
   */
  override async install(input: unknown): ReturnType<ToolRegistry['install']> {
    const name = (input as { name?: unknown } | null)?.name;
    if (typeof name === 'string') {
      const folded = name.toLowerCase();
      for (const b of this.#builtins.keys())
        if (b !== name && b.toLowerCase() === folded)
          throw new TyError(
            'E_INVALID_MANIFEST',
            `invalid manifest at name: "${name.slice(0, 64)}" differs only in letter case from "${b}", a tool this host offers itself; pick another name`,
            { path: 'name', conflictsWith: b },
          );
    }
    return super.install(input);
  }

  /** Built-ins offered by this process, sorted by name. */
  builtins(): { name: string; revision: string }[] {
    return [...this.#builtins.entries()]
      .map(([name, b]) => ({ name, revision: b.revision }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** As ToolRegistry.resolve, with built-ins (see the class comment). @throws TyError E_UNKNOWN_TOOL, E_INTEGRITY */
  override async resolve(ref: string): Promise<ResolvedTool> {
    const { name, revision } = parseRef(ref);
    const b = this.#builtins.get(name);
    if (b) {
      if (revision !== undefined && revision !== b.revision && matchesPrefix(b.revision, revision)) {
        const stored = await this.candidates(name, revision);
        if (stored.length === 0)
          return { name, revision: b.revision, manifest: b.manifest, active: !(await this.#storedActive(name)) };
        throw new TyError(
          'E_UNKNOWN_TOOL',
          `the prefix ${revision} is ambiguous for "${name}": it matches ${[b.revision, ...stored].map((r) => shortId(r, 20)).join(', ')}; give more characters`,
          { name, prefix: revision, candidates: [b.revision, ...stored] },
        );
      }
      if (revision === b.revision)
        return { name, revision: b.revision, manifest: b.manifest, active: !(await this.#storedActive(name)) };
      if (revision === undefined && !(await this.#storedActive(name)))
        return { name, revision: b.revision, manifest: b.manifest, active: true };
    }
    return super.resolve(ref);
  }

  /** Stored tools plus the built-ins not shadowed by a stored binding of the same name, sorted by name. */
  override async list(): Promise<ListedTool[]> {
    const stored: ListedTool[] = await super.list();
    const names = new Set(stored.filter((t) => t.active !== undefined).map((t) => t.name));
    for (const b of this.builtins())
      if (!names.has(b.name)) stored.push({ name: b.name, active: b.revision, revisions: [b.revision], builtin: true });
    return stored.sort((a, b) => a.name.localeCompare(b.name));
  }

  async #storedActive(name: string): Promise<boolean> {
    const binding = await this.store.getJson<{ active?: string }>('bindings', name);
    return typeof binding?.active === 'string';
  }
}
