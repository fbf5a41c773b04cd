// Tool registry: content-addressed revisions, name bindings, in-memory natives; core, trusted side.
import type { ToolManifest } from '../../protocol/manifest.js';
import { isToolName } from '../../protocol/names.js';
import { TyError } from '../errors.js';
import { DOMAINS, contentId, documentBytes, isContentId } from './cid.js';
import type { Store } from '../store/contract.js';
import { NO, plainManifest } from '../manifest/check.js';
import {
  CID_HEADER,
  MIN_PREFIX_CHARS,
  REVISION_PREFIX_RE,
  matchesPrefix,
  revisionReferences,
  shortId,
  type RevisionReference,
} from './refs.js';

/** A name binding as stored (record `bindings/NAME`). */
export interface Binding {
  name: string;
  /** The active revision, if any. */
  active?: string;
  /** Every revision installed under this name, oldest first. */
  revisions: string[];
  /** When each revision was installed under this name (ISO 8601 UTC); absent for stores written before it was kept. */
  addedAt?: Record<string, string>;
}

/** One stored tool revision, as `revisions()` lists it. */
export interface StoredRevision {
  name: string;
  revision: string;
  /** When the revision was installed under its name (ISO 8601 UTC), when known. */
  addedAt?: string;
  /** True when it is its name's active binding. */
  active: boolean;
  /**
   * `active`; `installed`: listed under a name bound to another revision; `unbound`: its name has no active binding
   * (removed) or no longer lists it.
   */
  status: 'active' | 'installed' | 'unbound';
}

/** What `gc()` did (or, with `dryRun`, would do). */
export interface GcResult {
  removed: { name: string; revision: string }[];
  kept: { name: string; revision: string; reasons: RevisionReference[] }[];
}

export interface ResolvedTool {
  name: string;
  revision: string;
  manifest: ToolManifest;
  /** True when `revision` is the name's active binding. */
  active: boolean;
}

export type NativeFunction = (args: unknown, ctx: unknown) => Promise<unknown>;

const decoder = new TextDecoder();
/** Lock held while revision objects are written or collected. */
const OBJECTS_LOCK = 'registry.objects';

/**
 * The revision id of a manifest: CIDv1 (json codec, sha2-256) over the canonical JSON of
 * `{"body": MANIFEST, "domain": "tysandbox/tool-revision/v1"}` (keys sorted, undefined omitted;
 * core/revisions/canonical.ts).
 * Same manifest -> same id on every host; any change, source included, -> another id.
 */
export async function revisionId(manifest: ToolManifest): Promise<string> {
  return contentId(DOMAINS.toolRevision, manifest, 'E_INVALID_MANIFEST');
}

/** Tool names that passed ToolNameSchema's test (a pure check: looked up on every call, so remembered; bounded). */
const validNames = new Set<string>();
const VALID_NAMES_MAX = 1024;

/**
 * Split `name`, `name@REV` or `name@PREFIX` (PREFIX: 8 or more characters of a revision id, with or without
 * its constant `bagaaiera` head; see core/revisions/refs.ts). Does not look anything up.
 * @throws TyError E_UNKNOWN_TOOL for a malformed reference.
 */
export function parseRef(ref: string): { name: string; revision?: string } {
  const at = ref.indexOf('@');
  const name = at < 0 ? ref : ref.slice(0, at);
  const revision = at < 0 ? undefined : ref.slice(at + 1);
  if (!validNames.has(name)) {
    if (!isToolName(name))
      throw new TyError(
        'E_UNKNOWN_TOOL',
        `"${ref.slice(0, 100)}" is not a tool reference; use NAME, NAME@REVISION or NAME@PREFIX`,
        { ref: ref.slice(0, 100) },
      );
    if (validNames.size >= VALID_NAMES_MAX) validNames.clear();
    validNames.add(name);
  }
  if (revision !== undefined && !REVISION_PREFIX_RE.test(revision)) {
    throw new TyError(
      'E_UNKNOWN_TOOL',
      `"${revision.slice(0, 100)}" is not a revision id or a prefix of one (at least ${MIN_PREFIX_CHARS} lowercase base32 characters)`,
      { ref: ref.slice(0, 100) },
    );
  }
  return revision === undefined ? { name } : { name, revision };
}

/**
 * The tool manager: installs immutable revisions in the store, keeps name bindings,
 * resolves `name` or `name@REV`, and holds trusted-native functions in memory by revision.
 */
/** Most verified revisions a registry keeps in memory (ToolRegistry #verified). */
const VERIFIED_MAX = 256;

export class ToolRegistry {
  readonly #natives = new Map<string, NativeFunction>();
  /**
   * Revisions already read from the store and verified (re-hashed to their content id, manifest parsed), by id.
   * A content id names one byte string forever, so the verified copy stays valid: later resolves of the same
   * revision skip the object read, hash and parse (the binding is still read on every resolve, so a binding
   * moved by another process is seen at once; a revision its binding no longer lists, e.g. after gc, is read
   * again). Bounded; the oldest entry goes first.
   */
  readonly #verified = new Map<string, ToolManifest>();
  readonly #onUpdate = new Set<(e: { name: string; active: string; revision: string }) => void>();
  readonly #onChange = new Set<() => void>();
  constructor(readonly store: Store) {}

  /**
   * Be told after this registry changed a name binding (install, activate, remove, gc); another process's changes are
   * not seen here (hosts watch their store for those). Returns the unsubscribe function; a listener's failure is its
   * own.
   */
  onChange(fn: () => void): () => void {
    this.#onChange.add(fn);
    return () => {
      this.#onChange.delete(fn);
    };
  }

  #changed(): void {
    for (const fn of [...this.#onChange]) {
      try {
        fn();
      } catch {
        /* a listener's failure is its own */
      }
    }
  }

  /**
   * Be told when `install` adds a revision under a name whose active revision is another one (an update the person
   * may activate). Returns the unsubscribe function; a listener's failure is its own.
   */
  onUpdateAvailable(fn: (e: { name: string; active: string; revision: string }) => void): () => void {
    this.#onUpdate.add(fn);
    return () => {
      this.#onUpdate.delete(fn);
    };
  }

  /**
   * Validate, hash and store a manifest; activate it when the name has no binding yet. Installing a manifest
   * whose stored copy was altered replaces the bad copy (`repaired`). A JavaScript source that does not parse is
   * refused naming line and column (core/manifest/source-check.ts; nothing runs). `updateAvailable` (with `active`, the
   * revision the name still runs): the name was bound to another revision, which stays active until `activate`.
   * @throws TyError E_INVALID_MANIFEST
   */
  async install(input: unknown): Promise<{
    revision: string;
    manifest: ToolManifest;
    created: boolean;
    activated: boolean;
    repaired: boolean;
    updateAvailable: boolean;
    active?: string;
  }> {
    // the manifest schema (zod) and the parser (acorn) are loaded by the commands that install, not by every call
    const [{ parseManifest }, { checkToolSource }] = await Promise.all([
      import('../manifest/parse.js'),
      import('../manifest/source-check.js'),
    ]);
    const manifest = parseManifest(input);
    checkToolSource(manifest);
    const bytes = documentBytes(DOMAINS.toolRevision, manifest, 'E_INVALID_MANIFEST');
    const out = await this.store.backend.withLock(OBJECTS_LOCK, async () => {
      await this.#refuseCaseTwin(manifest.name);
      const { cid: revision, created, repaired } = await this.store.putObjectChecked(bytes);
      let activated = false;
      let active: string | undefined;
      await this.store.update<Binding>('bindings', manifest.name, (b) => {
        // a case-insensitive file system hands back another name's record for this key
        if (b && b.name !== manifest.name) throw caseTwinError(manifest.name, b.name);
        const next: Binding = b ? { ...b, revisions: [...b.revisions] } : { name: manifest.name, revisions: [] };
        if (!next.revisions.includes(revision)) {
          next.revisions.push(revision);
          next.addedAt = { ...next.addedAt, [revision]: new Date().toISOString() };
        }
        if (!next.active) {
          next.active = revision;
          activated = true;
        }
        active = next.active;
        return next;
      });
      const updateAvailable = active !== undefined && active !== revision;
      return {
        revision,
        manifest,
        created,
        activated,
        repaired,
        updateAvailable,
        ...(updateAvailable ? { active } : {}),
      };
    });
    this.#changed();
    if (out.updateAvailable && out.active !== undefined) {
      for (const fn of [...this.#onUpdate]) {
        try {
          fn({ name: manifest.name, active: out.active, revision: out.revision });
        } catch {
          /* a listener's failure is its own */
        }
      }
    }
    return out;
  }

  /**
   * Bind `name` to `revision`. Replacing a different active binding needs `approveReplacement`.
   * @throws TyError E_UNKNOWN_TOOL, E_APPROVAL_REQUIRED, E_INTEGRITY
   */
  async activate(name: string, revision: string, opts: { approveReplacement?: boolean } = {}): Promise<void> {
    const tool = await this.#resolveStored(name, revision);
    await this.store.update<Binding>('bindings', name, (b) => {
      const next: Binding = b ? { ...b, revisions: [...b.revisions] } : { name, revisions: [] };
      if (next.active && next.active !== tool.revision && !opts.approveReplacement) {
        throw new TyError(
          'E_APPROVAL_REQUIRED',
          `"${name}" is bound to ${next.active}; replacing the active binding with ${tool.revision} needs explicit approval`,
          { name, active: next.active, revision: tool.revision, approval: 'replacement' },
        );
      }
      if (!next.revisions.includes(tool.revision)) {
        next.revisions.push(tool.revision);
        next.addedAt = { ...next.addedAt, [tool.revision]: new Date().toISOString() };
      }
      next.active = tool.revision;
      return next;
    });
    this.#changed();
  }

  /**
   * Resolve `name` (the active binding), `name@REV` (that exact revision, active or not, bound or not) or
   * `name@PREFIX` (the one stored revision of that name the prefix abbreviates; see core/revisions/refs.ts).
   * The stored manifest is re-hashed on read.
   * @throws TyError E_UNKNOWN_TOOL (unknown name or revision; an ambiguous prefix, `data.candidates` listing the
   *   matching revision ids), E_INTEGRITY
   */
  async resolve(ref: string): Promise<ResolvedTool> {
    const { name, revision } = parseRef(ref);
    if (revision === undefined && REVISION_PREFIX_RE.test(name)) {
      const binding = await this.store.getJsonFresh<Binding>('bindings', name);
      if (!binding?.active) {
        const bare = await this.#bare(name);
        if (bare) return bare;
        // a ref that reads as a revision id (the CID head every id starts with) was not meant as a name
        if (name.startsWith(CID_HEADER))
          throw new TyError('E_UNKNOWN_TOOL', `no stored revision starts with ${name}`, { prefix: name });
        if (!binding)
          throw new TyError(
            'E_UNKNOWN_TOOL',
            `no tool named "${name}" is installed, and no stored revision starts with ${name}`,
            { name },
          );
      }
    }
    return this.#resolveStored(name, revision);
  }

  /** A bare revision prefix, unique among every stored tool revision; undefined when none matches. */
  async #bare(prefix: string): Promise<ResolvedTool | undefined> {
    const hits = (await this.revisions()).filter((r) => matchesPrefix(r.revision, prefix));
    if (hits.length === 0) return undefined;
    if (hits.length > 1) {
      const all = hits.map((h) => h.revision);
      throw new TyError(
        'E_UNKNOWN_TOOL',
        `the prefix ${prefix} is ambiguous: it matches ${hits.map((h) => `${h.name}@${shortId(h.revision, 20)}`).join(', ')}; give more characters`,
        { prefix, candidates: all },
      );
    }
    return this.#resolveStored(hits[0]!.name, hits[0]!.revision);
  }

  async #resolveStored(name: string, revision: string | undefined): Promise<ResolvedTool> {
    // read on every call: kept in memory while its stamp holds (a change by any process is seen at once; frozen)
    const binding = await this.store.getJsonFresh<Binding>('bindings', name);
    let rev = revision ?? binding?.active;
    if (!rev) throw new TyError('E_UNKNOWN_TOOL', `no tool named "${name}" is installed`, { name });
    if (revision !== undefined && !(revision.startsWith('b') && isContentId(revision)))
      rev = await this.#expand(name, revision, binding);
    const t = await this.#load(name, rev, binding?.revisions.includes(rev) === true || binding?.active === rev);
    return { ...t, active: binding?.active === rev };
  }

  /**
   * The stored revisions of `name` that `prefix` abbreviates (revisions installed under the name, and stored
   * revision documents of that name that no binding lists any more), sorted.
   */
  async candidates(name: string, prefix: string): Promise<string[]> {
    const binding = await this.store.getJson<Binding>('bindings', name);
    const found = new Set((binding?.revisions ?? []).filter((r) => matchesPrefix(r, prefix)));
    for (const key of await this.store.backend.list('objects')) {
      if (found.has(key) || !matchesPrefix(key, prefix)) continue;
      const doc = await this.#peek(key);
      if (doc?.name === name) found.add(key);
    }
    return [...found].sort();
  }

  async #expand(name: string, prefix: string, binding: Binding | undefined): Promise<string> {
    const found = (binding?.revisions ?? []).filter((r) => matchesPrefix(r, prefix));
    const all =
      found.length === 1 && (await this.store.backend.get('objects', found[0]!)) !== undefined
        ? found
        : await this.candidates(name, prefix);
    if (all.length === 1) return all[0]!;
    if (all.length === 0)
      throw new TyError('E_UNKNOWN_TOOL', `no revision of "${name}" starts with ${prefix}`, { name, prefix });
    throw new TyError(
      'E_UNKNOWN_TOOL',
      `the prefix ${prefix} is ambiguous for "${name}": it matches ${all.map((r) => shortId(r, 20)).join(', ')}; give more characters`,
      { name, prefix, candidates: all },
    );
  }

  /**
   * Remove the name binding of `name`: the name no longer resolves, and its revisions stay stored (calls pinned
   * as NAME@REV keep working, `activate` can bind one again) until `gc()` removes the unreferenced ones. Needs
   * `approveRemoval`, like replacing an active binding.
   * @returns the binding that was removed
   * @throws TyError E_UNKNOWN_TOOL (no such binding), E_APPROVAL_REQUIRED (without `approveRemoval`)
   */
  async remove(name: string, opts: { approveRemoval?: boolean } = {}): Promise<Binding> {
    if (!isToolName(name))
      throw new TyError('E_UNKNOWN_TOOL', `"${name.slice(0, 100)}" is not a tool name`, { name: name.slice(0, 100) });
    let removed: Binding | undefined;
    await this.store.update<Binding>('bindings', name, (b) => {
      if (!b?.active) throw new TyError('E_UNKNOWN_TOOL', `no tool named "${name}" is active`, { name });
      if (!opts.approveRemoval) {
        throw new TyError('E_APPROVAL_REQUIRED', `removing "${name}" (bound to ${b.active}) needs explicit approval`, {
          name,
          active: b.active,
          approval: 'removal',
        });
      }
      removed = b;
      const { active: _drop, ...rest } = b;
      return { ...rest, revisions: [...b.revisions] };
    });
    this.#changed();
    return removed!;
  }

  /**
   * remove(name) for callers that obtained approval their own way (the registration protocol gates it):
   * unbinds `name`, keeping its revisions. Returns the revision that was active.
   * @throws TyError E_UNKNOWN_TOOL when the name has no active binding.
   */
  async removeBinding(name: string): Promise<string> {
    return (await this.remove(name, { approveRemoval: true })).active!;
  }

  /** The stored binding of a name, if any (read-only copy). */
  async binding(name: string): Promise<Binding | undefined> {
    return isToolName(name) ? this.store.getJson<Binding>('bindings', name) : undefined;
  }

  /**
   * Every stored tool revision: those listed by a binding (with their install date) and stored revision
   * documents no binding lists (after `remove`), sorted by name, then install date, then id.
   */
  async revisions(): Promise<StoredRevision[]> {
    const out = new Map<string, StoredRevision>();
    for (const key of await this.store.backend.list('bindings')) {
      const b = await this.store.getJson<Binding>('bindings', key);
      if (!b || !Array.isArray(b.revisions)) continue;
      for (const r of b.revisions) {
        const addedAt = b.addedAt?.[r];
        const status = b.active === r ? 'active' : b.active ? 'installed' : 'unbound';
        out.set(r, {
          name: b.name,
          revision: r,
          active: b.active === r,
          status,
          ...(typeof addedAt === 'string' ? { addedAt } : {}),
        });
      }
    }
    for (const key of await this.store.backend.list('objects')) {
      if (out.has(key)) continue;
      const doc = await this.#peek(key);
      if (doc) out.set(key, { name: doc.name, revision: key, active: false, status: 'unbound' });
    }
    return [...out.values()].sort(
      (a, b) =>
        a.name.localeCompare(b.name) ||
        (a.addedAt ?? '').localeCompare(b.addedAt ?? '') ||
        a.revision.localeCompare(b.revision),
    );
  }

  /**
   * Garbage-collect tool revisions: delete every stored tool revision that nothing references (no active
   * binding, permanent decision, stored task, secret grant, tool storage or stored settings; core/revisions/refs.ts
   * revisionReferences), and drop it from its name's revision list. Other stored objects are left alone.
   * With `dryRun`, reports what would be removed and changes nothing. Runs under the objects lock, so an
   * install of the same revision meanwhile is never lost.
   */
  async gc(opts: { dryRun?: boolean } = {}): Promise<GcResult> {
    return this.store.backend.withLock(OBJECTS_LOCK, async () => {
      const refs = await revisionReferences(this.store);
      const result: GcResult = { removed: [], kept: [] };
      for (const r of await this.revisions()) {
        const why = refs.get(r.revision);
        if (why && why.size > 0) result.kept.push({ name: r.name, revision: r.revision, reasons: [...why].sort() });
        else result.removed.push({ name: r.name, revision: r.revision });
      }
      if (opts.dryRun) return result;
      for (const r of result.removed) {
        await this.store.backend.delete('objects', r.revision);
        this.#verified.delete(r.revision);
        await this.store.update<Binding>('bindings', r.name, (b) => {
          if (!b) return undefined;
          const addedAt = { ...(b.addedAt ?? {}) };
          delete addedAt[r.revision];
          const revisions = b.revisions.filter((x) => x !== r.revision);
          // A name with no active revision and none left is forgotten entirely.
          if (!b.active && revisions.length === 0) return undefined;
          return { ...b, revisions, addedAt };
        });
      }
      return result;
    });
  }

  /**
   * Refuse a new name that differs from a bound one only in letter case (`upper` next to `UPPER`): the two read
   * alike to a person approving a call, and on a case-insensitive file system (macOS, Windows) they are one record.
   * @throws TyError E_INVALID_MANIFEST (data `{ path: 'name', conflictsWith }`)
   */
  async #refuseCaseTwin(name: string): Promise<void> {
    const folded = name.toLowerCase();
    for (const key of await this.store.backend.list('bindings')) {
      if (key !== name && key.toLowerCase() === folded) throw caseTwinError(name, key);
    }
  }

  /** Every name with its active revision and installed revisions (oldest first), sorted by name. */
  async list(): Promise<{ name: string; active: string | undefined; revisions: string[] }[]> {
    const out = [];
    for (const key of await this.store.backend.list('bindings')) {
      const b = await this.store.getJson<Binding>('bindings', key);
      if (b) out.push({ name: b.name, active: b.active, revisions: b.revisions });
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Register a trusted-native implementation for a revision; kept in memory only, never stored. */
  registerNative(revision: string, fn: NativeFunction): void {
    this.#natives.set(revision, fn);
  }
  getNative(revision: string): NativeFunction | undefined {
    return this.#natives.get(revision);
  }

  /** The name of a stored tool revision document, or undefined for another kind of object or an unreadable one. */
  async #peek(cid: string): Promise<{ name: string } | undefined> {
    try {
      const bytes = await this.store.backend.get('objects', cid);
      if (!bytes) return undefined;
      const doc = JSON.parse(decoder.decode(bytes)) as { domain?: unknown; body?: { name?: unknown } };
      return doc.domain === DOMAINS.toolRevision && typeof doc.body?.name === 'string'
        ? { name: doc.body.name }
        : undefined;
    } catch {
      return undefined;
    }
  }

  /** `bound`: the name's binding lists the revision (a revision dropped by gc, here or elsewhere, is read again). */
  async #load(
    name: string,
    revision: string,
    bound: boolean,
  ): Promise<{ name: string; revision: string; manifest: ToolManifest }> {
    const known = bound ? this.#verified.get(revision) : undefined;
    if (known) {
      if (known.name !== name)
        throw new TyError('E_UNKNOWN_TOOL', `revision ${revision} belongs to "${known.name}", not "${name}"`);
      return { name, revision, manifest: known };
    }
    const loaded = await this.#read(name, revision);
    if (this.#verified.size >= VERIFIED_MAX) this.#verified.delete(this.#verified.keys().next().value as string);
    this.#verified.set(revision, loaded.manifest);
    return loaded;
  }

  async #read(name: string, revision: string): Promise<{ name: string; revision: string; manifest: ToolManifest }> {
    const bytes = await this.store.getObject(revision);
    if (!bytes)
      throw new TyError('E_UNKNOWN_TOOL', `revision ${revision} of "${name}" is not installed`, { name, revision });
    let doc: { domain?: unknown; body?: unknown };
    try {
      doc = JSON.parse(decoder.decode(bytes));
    } catch {
      throw new TyError('E_INTEGRITY', `stored revision ${revision} is not a manifest document`);
    }
    if (doc.domain !== DOMAINS.toolRevision) throw new TyError('E_UNKNOWN_TOOL', `${revision} is not a tool revision`);
    // A manifest as the store holds it (plain JSON) is checked by hand (core/manifest/check.ts); anything else by the
    // schema.
    let manifest = plainManifest(doc.body);
    if (manifest === NO) {
      const { ToolManifestSchema } = await import('../../protocol/manifest.js');
      const parsed = ToolManifestSchema.safeParse(doc.body);
      if (!parsed.success) throw new TyError('E_INTEGRITY', `stored revision ${revision} holds an invalid manifest`);
      manifest = parsed.data;
    }
    if (manifest.name !== name)
      throw new TyError('E_UNKNOWN_TOOL', `revision ${revision} belongs to "${manifest.name}", not "${name}"`);
    return { name, revision, manifest };
  }
}

function caseTwinError(name: string, other: string): TyError {
  return new TyError(
    'E_INVALID_MANIFEST',
    `invalid manifest at name: "${name}": a tool named "${other}" exists; names that differ only in letter case are refused (remove "${other}" first, or pick another name)`,
    { path: 'name', conflictsWith: other },
  );
}
