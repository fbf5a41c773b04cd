// What a person approves of a bridged tool, prompt or resource: its definition hashed canonically, remembered, and what
// changed; core, trusted side.
import { sha256 } from 'multiformats/hashes/sha2';
import { canonicalJson } from '../../revisions/canonical.js';
import { inertText } from '../../ask/text.js';
import type { Store } from '../../store/contract.js';

export type DefinitionKind = 'tool' | 'prompt' | 'resource';

/** The fields of a definition that a decision covers (everything a person could have read before saying yes). */
const FIELDS: Record<DefinitionKind, readonly string[]> = {
  tool: ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations'],
  prompt: ['name', 'title', 'description', 'arguments'],
  resource: ['uri', 'uriTemplate', 'name', 'title', 'description', 'mimeType', 'annotations'],
};

/** The covered fields of `def`, as plain JSON data (absent fields left out). */
export function definitionSnapshot(kind: DefinitionKind, def: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of FIELDS[kind]) if (def[f] !== undefined) out[f] = def[f];
  // JSON round trip: only plain data is hashed (what the wire carried)
  return JSON.parse(JSON.stringify(out)) as Record<string, unknown>;
}

const hashes = new WeakMap<object, string>();
const enc = new TextEncoder();

/**
 * The definition hash: lowercase hex SHA-256 over canonical JSON (core/revisions/canonical.ts, RFC 8785 key order) of
 * `{"kind": KIND, "definition": SNAPSHOT}`. Equal definitions hash equally on every host; any change to a
 * covered field (a tool's name, title, description, inputSchema, outputSchema, annotations) changes it.
 * Cached per object, so a cached tool list costs one hash per tool.
 */
export async function definitionHash(kind: DefinitionKind, def: Record<string, unknown>): Promise<string> {
  const cached = hashes.get(def);
  if (cached?.startsWith(`${kind}:`)) return cached.slice(kind.length + 1);
  let text: string;
  try {
    text = canonicalJson({ kind, definition: definitionSnapshot(kind, def) });
  } catch {
    text = JSON.stringify({ kind, unencodable: String(def.name ?? def.uri ?? '') });
  }
  const digest = await sha256.digest(enc.encode(text));
  let hex = '';
  for (const b of digest.digest) hex += b.toString(16).padStart(2, '0');
  hashes.set(def, `${kind}:${hex}`);
  return hex;
}

/** Characters of an old or new text shown in a "what changed" line. */
const SHOWN = 240;

function shown(v: unknown): string {
  const s = typeof v === 'string' ? v : v === undefined ? '(none)' : JSON.stringify(v);
  const t = inertText(s).replace(/\s+/g, ' ');
  return t.length > SHOWN ? `${t.slice(0, SHOWN)}…` : t;
}

/**
 * Lines telling a person what changed between the definition they approved and the current one: old and
 * new description (and title) as text, the other fields named. Raw text: the asking channel sanitizes it
 * again for display; here hidden characters are already made visible and each text cut at 240 characters.
 */
export function describeChange(
  kind: DefinitionKind,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  hashes: { before: string; after: string },
): string[] {
  const lines = [
    `the ${kind} definition changed since it was approved (definition sha256 ${hashes.before.slice(0, 16)}… -> ${hashes.after.slice(0, 16)}…)`,
  ];
  const named: string[] = [];
  for (const f of FIELDS[kind]) {
    const a = JSON.stringify(before[f] === undefined ? null : canonicalOrRaw(before[f]));
    const b = JSON.stringify(after[f] === undefined ? null : canonicalOrRaw(after[f]));
    if (a === b) continue;
    if (f === 'description' || f === 'title') lines.push(`${f} was: "${shown(before[f])}" now: "${shown(after[f])}"`);
    else named.push(f);
  }
  if (named.length > 0) lines.push(`also changed: ${named.join(', ')}`);
  return lines;
}

function canonicalOrRaw(v: unknown): unknown {
  try {
    return JSON.parse(canonicalJson(v));
  } catch {
    return v;
  }
}

/** The last definition a call was let through under, per target. */
export interface ApprovedDefinition {
  target: string;
  kind: DefinitionKind;
  hash: string;
  snapshot: Record<string, unknown>;
  /** ms since the epoch */
  at: number;
}

/** Where the bridge remembers approved definitions (so a question can say what changed). */
export interface DefinitionMemory {
  get(kind: DefinitionKind, target: string): Promise<ApprovedDefinition | undefined>;
  put(rec: ApprovedDefinition): Promise<void>;
}

/** Longest snapshot kept, characters of JSON (a larger one is kept as its hash only). */
const MAX_SNAPSHOT_CHARS = 64 * 1024;

/**
 * DefinitionMemory in the store: namespace `mcp-definitions`, key = SHA-256 hex of `KIND TARGET` (targets
 * hold characters store keys do not), cached in memory per process.
 */
export class StoreDefinitionMemory implements DefinitionMemory {
  static readonly NS = 'mcp-definitions';
  private readonly cache = new Map<string, ApprovedDefinition | null>();
  constructor(private readonly store: Store) {}

  private async key(kind: DefinitionKind, target: string): Promise<string> {
    const d = await sha256.digest(enc.encode(`${kind} ${target}`));
    let hex = '';
    for (const b of d.digest) hex += b.toString(16).padStart(2, '0');
    return hex;
  }

  async get(kind: DefinitionKind, target: string): Promise<ApprovedDefinition | undefined> {
    const c = this.cache.get(`${kind} ${target}`);
    if (c !== undefined) return c ?? undefined;
    const rec = await this.store
      .getJson<ApprovedDefinition>(StoreDefinitionMemory.NS, await this.key(kind, target))
      .catch(() => undefined);
    const ok =
      rec !== undefined && rec.target === target && rec.kind === kind && typeof rec.hash === 'string' ? rec : undefined;
    this.cache.set(`${kind} ${target}`, ok ?? null);
    return ok;
  }

  async put(rec: ApprovedDefinition): Promise<void> {
    const c = this.cache.get(`${rec.kind} ${rec.target}`);
    if (c && c.hash === rec.hash) return;
    const kept = JSON.stringify(rec.snapshot).length > MAX_SNAPSHOT_CHARS ? { ...rec, snapshot: {} } : rec;
    this.cache.set(`${rec.kind} ${rec.target}`, kept);
    await this.store.putJson(StoreDefinitionMemory.NS, await this.key(rec.kind, rec.target), kept);
  }
}
