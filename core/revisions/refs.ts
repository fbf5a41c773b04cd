// Revision id helpers: short ids, unique-prefix matching, and what in the store still references a revision; core,
// trusted side.
import type { Store } from '../store/contract.js';

/**
 * The characters every revision id (and every other content id of this project) starts with: multibase `b`
 * (base32) + the CIDv1 header for the json codec and sha2-256 (bytes 01 80 04 12 20). They carry no
 * information, so short ids leave them out and prefix matching accepts a prefix with or without them.
 */
export const CID_HEADER = 'bagaaiera';

/** Fewest characters a revision prefix may have (git-style abbreviation, but never shorter than 8). */
export const MIN_PREFIX_CHARS = 8;

/** Characters of a short id: 12 base32 characters of the digest (60 bits). */
export const SHORT_ID_CHARS = 12;

/** A revision prefix as a person types it: 8-200 lowercase base32 characters. */
export const REVISION_PREFIX_RE = /^[a-z2-7]{8,200}$/;

/**
 * The short form of a revision (or any content id): the first `chars` characters after CID_HEADER, e.g.
 * `udnpizzxp2fd` for `bagaaieraudnpizzxp2fd...`. Accepted back by prefix matching. Ids not starting with the
 * header are cut to `chars` characters as they are; an external revision (`mcp:SERVER`) is returned whole.
 */
export function shortId(id: string, chars = SHORT_ID_CHARS): string {
  // An external revision (`mcp:SERVER`) is a name, not a content id: cutting it would make it unreadable.
  if (EXTERNAL_REVISION_RE.test(id)) return id;
  const body = id.startsWith(CID_HEADER) ? id.slice(CID_HEADER.length) : id;
  return body.slice(0, Math.max(MIN_PREFIX_CHARS, chars));
}

/** An external revision: `SCHEME:NAME` (e.g. `mcp:github` for a remote MCP server's tools), never a CID. */
const EXTERNAL_REVISION_RE = /^[a-z][a-z0-9-]*:/;

/**
 * True when `prefix` (at least MIN_PREFIX_CHARS characters) abbreviates `id`: a prefix of the full id, or a
 * prefix of the id without CID_HEADER (what shortId prints).
 */
export function matchesPrefix(id: string, prefix: string): boolean {
  if (prefix.length < MIN_PREFIX_CHARS) return false;
  if (id.startsWith(prefix)) return true;
  return id.startsWith(CID_HEADER) && id.slice(CID_HEADER.length).startsWith(prefix);
}

/**
 * Short ids for a set of ids: SHORT_ID_CHARS characters, lengthened where two ids of the set would share one
 * (git's abbreviation rule), so every printed short id is a unique prefix within the set.
 */
export function uniqueShortIds(ids: readonly string[]): Map<string, string> {
  const uniq = [...new Set(ids)];
  const out = new Map<string, string>();
  for (const id of uniq) {
    let n = SHORT_ID_CHARS;
    const body = id.startsWith(CID_HEADER) ? id.slice(CID_HEADER.length) : id;
    while (n < body.length && uniq.some((o) => o !== id && matchesPrefix(o, body.slice(0, n)))) n++;
    out.set(id, shortId(id, n));
  }
  return out;
}

/** Why a revision is kept by garbage collection. */
export type RevisionReference = 'binding' | 'decision' | 'task' | 'secret-grant' | 'storage' | 'settings';

const asString = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * Every revision something in the store still refers to, with the reasons:
 * - `binding`: the active revision of a name (store records `bindings/NAME`);
 * - `decision`: a permanent decision a person made for it (`decisions/...`);
 * - `task`: a stored task pins it (`tasks/ID`: a function call's `toolRevision`, a tooldefinition's binding);
 * - `secret-grant`: a secret is granted to it (`secret-grants/NAME`);
 * - `storage`: its tool storage holds data (`tool-storage/REVISION`);
 * - `settings`: a person stored settings for it (`tool-settings/REVISION`, core/revisions/settings.ts).
 * Records that do not parse are skipped (they reference nothing), never fatal.
 */
export async function revisionReferences(store: Store): Promise<Map<string, Set<RevisionReference>>> {
  const refs = new Map<string, Set<RevisionReference>>();
  const add = (rev: string | undefined, why: RevisionReference) => {
    if (!rev) return;
    let s = refs.get(rev);
    if (!s) refs.set(rev, (s = new Set()));
    s.add(why);
  };
  const each = async (ns: string, fn: (rec: Record<string, unknown>) => void) => {
    for (const key of await store.backend.list(ns)) {
      let rec: unknown;
      try {
        rec = await store.getJson(ns, key);
      } catch {
        continue;
      }
      if (rec && typeof rec === 'object' && !Array.isArray(rec)) fn(rec as Record<string, unknown>);
    }
  };
  await each('bindings', (b) => add(asString(b.active), 'binding'));
  await each('decisions', (d) => {
    add(asString(d.revision), 'decision');
    if (Array.isArray(d.decisions))
      for (const x of d.decisions) add(asString((x as { revision?: unknown } | null)?.revision), 'decision');
  });
  await each('tasks', (t) => {
    const c = t.content as
      | { type?: unknown; toolRevision?: unknown; definition?: { binding?: { toolRevision?: unknown } } }
      | undefined;
    if (!c || typeof c !== 'object') return;
    add(asString(c.toolRevision), 'task');
    add(asString(c.definition?.binding?.toolRevision), 'task');
  });
  await each('secret-grants', (g) => {
    if (Array.isArray(g.grants))
      for (const x of g.grants) add(asString((x as { revision?: unknown } | null)?.revision), 'secret-grant');
  });
  await each('tool-storage', (s) => {
    const entries = s.entries;
    if (entries && typeof entries === 'object' && Object.keys(entries).length > 0) add(asString(s.revision), 'storage');
  });
  await each('tool-settings', (s) => {
    if (typeof s.current === 'string') add(asString(s.toolRevision), 'settings');
  });
  return refs;
}
