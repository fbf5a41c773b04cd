// Tool registry: content-addressed revisions, name bindings, in-memory natives; core, trusted side.
import { ToolManifestSchema, ToolNameSchema, type ToolManifest } from '../protocol/manifest.js';
import { TyError } from './errors.js';
import { DOMAINS, contentId, documentBytes } from './cid.js';
import type { Store } from './store.js';
import { checkSchema } from './validate.js';

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

export interface ResolvedTool {
  name: string;
  revision: string;
  manifest: ToolManifest;
  /** True when `revision` is the name's active binding. */
  active: boolean;
}

export type NativeFunction = (args: unknown, ctx: unknown) => Promise<unknown>;

const decoder = new TextDecoder();

/**
 * Validate a manifest: schema (protocol/manifest.ts) and its JSON Schemas (ajv, draft 2020-12).
 * @throws TyError E_INVALID_MANIFEST naming the field and the fix.
 */
export function parseManifest(input: unknown): ToolManifest {
  const r = ToolManifestSchema.safeParse(input);
  if (!r.success) {
    const issue = r.error.issues[0];
    const at = issue && issue.path.length ? issue.path.join('.') : '(root)';
    throw new TyError('E_INVALID_MANIFEST', `invalid manifest at ${at}: ${issue?.message ?? 'invalid'}`, { path: at });
  }
  checkSchema(r.data.parameters, 'parameters');
  if (r.data.outputSchema) checkSchema(r.data.outputSchema, 'outputSchema');
  return r.data;
}

/**
 * The revision id of a manifest: CIDv1 (json codec, sha2-256) over the canonical JSON of
 * `{"body": MANIFEST, "domain": "tysandbox/tool-revision/v1"}` (keys sorted, undefined omitted; core/canonical.ts).
 * Same manifest -> same id on every host; any change, source included, -> another id.
 */
export async function revisionId(manifest: ToolManifest): Promise<string> {
  return contentId(DOMAINS.toolRevision, manifest, 'E_INVALID_MANIFEST');
}

/** A full revision id (base32 CIDv1). */
const FULL_REV_RE = /^b[a-z2-7]{20,200}$/;
/** A revision id prefix as accepted in references: at least 6 characters of a base32 CID. */
const REV_PREFIX_RE = /^b[a-z2-7]{5,200}$/;

/**
 * Split `name` or `name@REV`; REV is a full revision id or a prefix of one (at least 6 characters, resolved
 * against that name's revisions). @throws TyError E_UNKNOWN_TOOL for a malformed reference.
 */
export function parseRef(ref: string): { name: string; revision?: string } {
  const at = ref.indexOf('@');
  const name = at < 0 ? ref : ref.slice(0, at);
  const revision = at < 0 ? undefined : ref.slice(at + 1);
  if (!ToolNameSchema.safeParse(name).success) throw new TyError('E_UNKNOWN_TOOL', `"${ref.slice(0, 100)}" is not a tool reference; use NAME or NAME@REVISION`);
  if (revision !== undefined && !REV_PREFIX_RE.test(revision)) throw new TyError('E_UNKNOWN_TOOL', `"${revision.slice(0, 100)}" is not a revision id (a base32 CID starting with "b") nor a prefix of one`);
  return revision === undefined ? { name } : { name, revision };
}

/** The one revision in `revisions` starting with `prefix`. @throws TyError E_UNKNOWN_TOOL when none or several do. */
function uniquePrefix(prefix: string, revisions: readonly string[], what: string): string {
  const hits = [...new Set(revisions.filter((r) => r.startsWith(prefix)))];
  if (hits.length === 1) return hits[0]!;
  if (hits.length === 0) throw new TyError('E_UNKNOWN_TOOL', `no installed revision of ${what} starts with ${prefix.slice(0, 100)}`);
  throw new TyError('E_UNKNOWN_TOOL', `${prefix.slice(0, 100)} is ambiguous: ${hits.length} revisions of ${what} start with it; give more characters`, { candidates: hits.slice(0, 8) });
}

/**
 * The tool manager: installs immutable revisions in the store, keeps name bindings,
 * resolves `name` or `name@REV`, and holds trusted-native functions in memory by revision.
 */
export class ToolRegistry {
  readonly #natives = new Map<string, NativeFunction>();
  constructor(readonly store: Store) {}

  /**
   * Validate, hash and store a manifest; activate it when the name has no binding yet. Installing a manifest
   * whose stored copy was altered replaces the bad copy (`repaired`).
   * @throws TyError E_INVALID_MANIFEST
   */
  async install(input: unknown): Promise<{ revision: string; manifest: ToolManifest; created: boolean; activated: boolean; repaired: boolean }> {
    const manifest = parseManifest(input);
    const bytes = documentBytes(DOMAINS.toolRevision, manifest, 'E_INVALID_MANIFEST');
    const { cid: revision, created, repaired } = await this.store.putObjectChecked(bytes);
    let activated = false;
    await this.store.update<Binding>('bindings', manifest.name, (b) => {
      const next: Binding = b ? { ...b, revisions: [...b.revisions] } : { name: manifest.name, revisions: [] };
      if (!next.revisions.includes(revision)) {
        next.revisions.push(revision);
        next.addedAt = { ...next.addedAt, [revision]: new Date().toISOString() };
      }
      if (!next.active) {
        next.active = revision;
        activated = true;
      }
      return next;
    });
    return { revision, manifest, created, activated, repaired };
  }

  /**
   * Bind `name` to `revision`. Replacing a different active binding needs `approveReplacement`.
   * @throws TyError E_UNKNOWN_TOOL, E_APPROVAL_REQUIRED, E_INTEGRITY
   */
  async activate(name: string, revision: string, opts: { approveReplacement?: boolean } = {}): Promise<void> {
    const tool = await this.#load(name, revision);
    await this.store.update<Binding>('bindings', name, (b) => {
      const next: Binding = b ? { ...b, revisions: [...b.revisions] } : { name, revisions: [] };
      if (next.active && next.active !== revision && !opts.approveReplacement) {
        throw new TyError('E_APPROVAL_REQUIRED', `"${name}" is bound to ${next.active}; replacing the active binding needs explicit approval (tycli tool activate ${name} ${revision} --approve-replacement)`);
      }
      if (!next.revisions.includes(tool.revision)) {
        next.revisions.push(tool.revision);
        next.addedAt = { ...next.addedAt, [tool.revision]: new Date().toISOString() };
      }
      next.active = tool.revision;
      return next;
    });
  }

  /**
   * Remove the name binding's active revision: `NAME` no longer resolves; stored revisions stay, so calls
   * pinned as `NAME@REV` keep working and `activate` can bind one again. Returns the revision that was active.
   * @throws TyError E_UNKNOWN_TOOL when the name has no active binding.
   */
  async removeBinding(name: string): Promise<string> {
    let previous: string | undefined;
    await this.store.update<Binding>('bindings', name, (b) => {
      if (!b?.active) throw new TyError('E_UNKNOWN_TOOL', `no tool named "${name.slice(0, 64)}" is active`);
      previous = b.active;
      const { active: _drop, ...rest } = b;
      return { ...rest, revisions: [...b.revisions] };
    });
    return previous!;
  }

  /** The stored binding of a name, if any (read-only copy). */
  async binding(name: string): Promise<Binding | undefined> {
    return ToolNameSchema.safeParse(name).success ? this.store.getJson<Binding>('bindings', name) : undefined;
  }

  /**
   * Resolve `name` (the active binding), `name@REV` (that exact revision, active or not; REV may be a unique
   * prefix among that name's revisions) or a bare revision prefix (unique among every installed revision; a
   * name binding of the same spelling wins). The stored manifest is re-hashed on read.
   * @throws TyError E_UNKNOWN_TOOL (also for an ambiguous prefix), E_INTEGRITY
   */
  async resolve(ref: string): Promise<ResolvedTool> {
    const parsed = parseRef(ref);
    const { name } = parsed;
    let binding = await this.store.getJson<Binding>('bindings', name);
    let revision = parsed.revision;
    if (revision !== undefined && !(FULL_REV_RE.test(revision) && (await this.store.getObject(revision)))) {
      revision = uniquePrefix(revision, binding?.revisions ?? [], `"${name}"`);
    }
    if (revision === undefined && !binding?.active && REV_PREFIX_RE.test(name)) {
      // a bare revision (prefix): find its name among every binding
      const all = await ToolRegistry.prototype.list.call(this); // stored revisions only
      const revs = all.flatMap((t) => t.revisions);
      if (revs.some((r) => r.startsWith(name))) {
        const hit = uniquePrefix(name, revs, 'any tool');
        const owner = all.find((t) => t.revisions.includes(hit))!;
        binding = await this.store.getJson<Binding>('bindings', owner.name);
        const t = await this.#load(owner.name, hit);
        return { ...t, active: binding?.active === hit };
      }
    }
    const rev = revision ?? binding?.active;
    if (!rev) throw new TyError('E_UNKNOWN_TOOL', `no tool named "${name}" is installed; add it with: tycli tool add MANIFEST.json`);
    const t = await this.#load(name, rev);
    return { ...t, active: binding?.active === rev };
  }

  /** Every name with its active revision and installed revisions, sorted by name. */
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

  async #load(name: string, revision: string): Promise<{ name: string; revision: string; manifest: ToolManifest }> {
    const bytes = await this.store.getObject(revision);
    if (!bytes) throw new TyError('E_UNKNOWN_TOOL', `revision ${revision} of "${name}" is not installed; see: tycli tool list`);
    let doc: { domain?: unknown; body?: unknown };
    try {
      doc = JSON.parse(decoder.decode(bytes));
    } catch {
      throw new TyError('E_INTEGRITY', `stored revision ${revision} is not a manifest document`);
    }
    if (doc.domain !== DOMAINS.toolRevision) throw new TyError('E_UNKNOWN_TOOL', `${revision} is not a tool revision`);
    const parsed = ToolManifestSchema.safeParse(doc.body);
    if (!parsed.success) throw new TyError('E_INTEGRITY', `stored revision ${revision} holds an invalid manifest`);
    if (parsed.data.name !== name) throw new TyError('E_UNKNOWN_TOOL', `revision ${revision} belongs to "${parsed.data.name}", not "${name}"`);
    return { name, revision, manifest: parsed.data };
  }
}
