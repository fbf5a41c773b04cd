// Per-tool settings revisions: values a person configures for one tool revision, content-addressed; core, trusted side.
import type { ToolManifest } from '../../protocol/manifest.js';
import type { AuditSink } from '../audit/trail.js';
import { DOMAINS, cidOfBytes, documentBytes, isContentId } from './cid.js';
import { ChangeAudit, type ChangeAuditOptions } from '../audit/change.js';
import { TyError } from '../errors.js';
import type { Store } from '../store/contract.js';
import { checkSchema, compileSchema, describeError, type SchemaCheck } from '../schema/validate.js';

/** Store records `tool-settings/TOOL_REVISION`: the current settings revision of one tool revision and its history. */
export const SETTINGS_NS = 'tool-settings';

/** Settings values: a JSON object as the schema describes it. */
export type SettingsValues = Record<string, unknown>;

/** The body a settings revision id is computed over (domain `tysandbox/settings/v1`). */
export interface SettingsDocument {
  tool: string;
  /** The one tool revision these values are bound to. */
  toolRevision: string;
  /** The values a person set (schema defaults are not stored: they are part of the tool revision). */
  values: SettingsValues;
}

/** What a tool revision's settings are now. */
export interface CurrentSettings {
  /** The current settings revision, absent when none was ever stored for this tool revision. */
  settingsRevision?: string;
  /** The values a person set. */
  values: SettingsValues;
  /** `values` with the schema's defaults applied: what the tool reads as `ctx.settings`. */
  effective: SettingsValues;
}

interface SettingsRecord {
  tool: string;
  toolRevision: string;
  current?: string;
  /** Every settings revision this tool revision had, oldest first, with when it became current (ISO 8601 UTC). */
  history: { settingsRevision: string; at: string }[];
}

/**
 * Names of settings fields that would hold a credential: compared case-insensitively with `_`, `-` and `.`
 * removed, as a substring (`apiKey`, `api_key`, `X-Api-Key`, `db_password`, `clientSecret`, ...); `token` as the end
 * of a name, `auth` as the whole name.
 */
const SECRET_WORDS = [
  'password',
  'passwd',
  'passphrase',
  'secret',
  'apikey',
  'privatekey',
  'credential',
  'accesskey',
  'bearer',
  'cookie',
  'authorization',
  'sessionkey',
  'signingkey',
];

/**
 * Latin letters that Cyrillic and Greek letters imitate (after case folding): `pаssword` with a Cyrillic `а` reads as
 * `password` to a person, so it is compared as one.
 */
const LOOKALIKE_FROM = 'авеёкмнорстухіїјѕԁԛԝɡαβεηικνορτυχω';
const LOOKALIKE_TO = 'abeekmhopctyxiijsdqwgabeniknoptuxw';
const LOOKALIKES = new Map([...LOOKALIKE_FROM].map((ch, i) => [ch, LOOKALIKE_TO[i] as string]));

/**
 * A field name as a person reads it, for comparing with SECRET_WORDS: compatibility forms folded (NFKC, so a fullwidth
 * `ＡＰＩＫＥＹ` is `APIKEY`; Unicode TR15), full case folding (upper then lower case, so `ß` is `ss`), accents
 * dropped (NFKD, combining marks removed), Cyrillic and Greek look-alikes read as Latin, and everything that is not a
 * letter or a digit removed (separators, punctuation, zero-width and other invisible characters).
 */
export function foldFieldName(name: string): string {
  const folded = name.normalize('NFKC').toUpperCase().toLowerCase().normalize('NFKD').replace(/\p{M}/gu, '');
  let out = '';
  for (const ch of folded) out += LOOKALIKES.get(ch) ?? ch;
  return out.replace(/[^\p{L}\p{N}]/gu, '');
}

/** True when a settings field name looks like a secret's (see SECRET_WORDS), compared as foldFieldName reads it. */
export function secretLikeName(name: string): boolean {
  const n = foldFieldName(name);
  // `token` only as the end of a name (githubToken, access_token), so maxTokens or tokenLimit stay settings.
  return n === 'auth' || n.endsWith('token') || SECRET_WORDS.some((w) => n.includes(w));
}

/**
 * The first key named like a secret anywhere in `values` (object keys at any depth, inside arrays too), as a JSON
 * Pointer, or undefined. Bounded: at most 64 levels and 10 000 keys are looked at (deeper or more is refused as a
 * secret-like key would be: settings that large are not settings).
 */
function secretLikeKey(values: unknown): { at: string; name: string } | undefined {
  let seen = 0;
  const walk = (v: unknown, at: string, depth: number): { at: string; name: string } | undefined => {
    if (v === null || typeof v !== 'object') return undefined;
    if (depth > 64 || ++seen > 10_000) return { at, name: '(too deep or too many keys to check)' };
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const hit = walk(v[i], `${at}/${i}`, depth + 1);
        if (hit) return hit;
      }
      return undefined;
    }
    for (const [k, sub] of Object.entries(v)) {
      const here = `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      if (++seen > 10_000) return { at: here, name: '(too many keys to check)' };
      if (secretLikeName(k)) return { at: here, name: k };
      const hit = walk(sub, here, depth + 1);
      if (hit) return hit;
    }
    return undefined;
  };
  return walk(values, '', 0);
}

/** Host-neutral: each host adds where a secret value is stored (data `secretLike: true`). */
const SECRET_HINT =
  'secrets are never settings: store it as a secret, request it in capabilities.secrets and read it with ctx.getSecret(NAME)';

/** Every sub-schema of a schema (objects reached through any keyword), with its JSON Pointer. */
function* subSchemas(node: unknown, at: string, depth = 0): Generator<{ node: Record<string, unknown>; at: string }> {
  if (depth > 64 || node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) yield* subSchemas(node[i], `${at}/${i}`, depth + 1);
    return;
  }
  const obj = node as Record<string, unknown>;
  yield { node: obj, at };
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'default' || k === 'const' || k === 'enum' || k === 'examples') continue; // values, not schemas
    yield* subSchemas(v, `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, depth + 1);
  }
}

/**
 * Check a manifest's `settings` schema at add time: a strict draft 2020-12 JSON Schema of `"type": "object"`, and no
 * field that would hold a secret: a property named like one (secretLikeName) or any sub-schema marked
 * `writeOnly: true` (JSON Schema's mark for values such as passwords, draft 2020-12 meta-data vocabulary).
 * @throws TyError E_INVALID_MANIFEST naming `settings/...`, data `secretLike: true` (hosts name their secret store).
 */
export function checkSettingsSchema(schema: unknown): void {
  checkSchema(schema, 'settings');
  if ((schema as Record<string, unknown>).type !== 'object') {
    throw new TyError(
      'E_INVALID_MANIFEST',
      'settings must be a JSON Schema with "type": "object" (settings are a JSON object of named values)',
      { path: 'settings' },
    );
  }
  for (const { node, at } of subSchemas(schema, 'settings')) {
    if (node.writeOnly === true) {
      throw new TyError(
        'E_INVALID_MANIFEST',
        `${at} is marked writeOnly: a value that is written but never shown is a secret; ${SECRET_HINT}`,
        { path: at, secretLike: true },
      );
    }
    for (const key of ['properties', 'patternProperties', 'dependentSchemas'] as const) {
      const props = node[key];
      if (!props || typeof props !== 'object' || Array.isArray(props)) continue;
      for (const name of Object.keys(props)) {
        if (secretLikeName(name))
          throw new TyError(
            'E_INVALID_MANIFEST',
            `${at}/${key}/${name}: "${name.slice(0, 64)}" is named like a secret; ${SECRET_HINT}`,
            { path: `${at}/${key}/${name}`, secretLike: true },
          );
      }
    }
    if (Array.isArray(node.required)) {
      for (const name of node.required) {
        if (typeof name === 'string' && secretLikeName(name))
          throw new TyError(
            'E_INVALID_MANIFEST',
            `${at}/required: "${name.slice(0, 64)}" is named like a secret; ${SECRET_HINT}`,
            { path: `${at}/required`, secretLike: true },
          );
      }
    }
  }
}

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * `values` with the schema's `default`s filled in where a property is absent (JSON Schema 2020-12 `default`
 * annotations under `properties`, recursively into object values). Returns a new object.
 */
export function applyDefaults(schema: unknown, values: SettingsValues): SettingsValues {
  const out = clone(values);
  const fill = (s: unknown, v: Record<string, unknown>, depth: number) => {
    if (depth > 32 || !isObject(s) || !isObject(s.properties)) return;
    for (const [k, sub] of Object.entries(s.properties)) {
      if (!isObject(sub)) continue;
      if (!Object.prototype.hasOwnProperty.call(v, k) && sub.default !== undefined) v[k] = clone(sub.default);
      if (isObject(v[k])) fill(sub, v[k] as Record<string, unknown>, depth + 1);
    }
  };
  fill(schema, out, 0);
  return out;
}

/**
 * Settings of tool revisions in a store. A settings revision is a CIDv1 over the canonical document
 * `{"domain": "tysandbox/settings/v1", "body": {tool, toolRevision, values}}` (core/revisions/cid.ts), stored with the
 * other
 * content-addressed objects and re-hashed on read; it is bound to exactly one tool revision, so a new tool
 * revision starts with none until a person carries values over (`from`). Every change is audited (kind
 * `settings`, the new settings revision as target; values are never audited).
 */
export class ToolSettings {
  readonly #checks = new Map<string, SchemaCheck>();
  readonly #changes: ChangeAudit | undefined;
  constructor(
    readonly store: Store,
    readonly opts: { audit?: AuditSink } & ChangeAuditOptions = {},
  ) {
    this.#changes = opts.audit ? new ChangeAudit(opts.audit, opts) : undefined;
  }

  #check(toolRevision: string, schema: unknown): SchemaCheck {
    let c = this.#checks.get(toolRevision);
    if (!c) {
      c = compileSchema(schema);
      if (this.#checks.size >= 64) this.#checks.delete(this.#checks.keys().next().value!);
      this.#checks.set(toolRevision, c);
    }
    return c;
  }

  /**
   * Validate values against a tool revision's settings schema, defaults applied first; returns the effective values.
   * Every key, at any depth, is checked against secret-like names first (secretLikeName), whatever the schema allows:
   * this is where both the command line's settings edit and the host API (`update`) and every call (`forCall`) pass.
   * @throws TyError E_INVALID_SETTINGS naming the field and the fix (values never echoed); data `{tool, field,
   *   keyword}`, or `{tool, field, secretLike: true}` for a key named like a secret.
   */
  validate(tool: { name: string; revision: string; manifest: ToolManifest }, values: SettingsValues): SettingsValues {
    const schema = tool.manifest.settings;
    if (!schema) {
      if (Object.keys(values).length > 0)
        throw new TyError(
          'E_INVALID_SETTINGS',
          `${tool.name} declares no settings (its manifest has no "settings" schema)`,
          { tool: tool.name },
        );
      return {};
    }
    // Whatever the schema lets through (additionalProperties, patternProperties, a nested open object): no key named
    // like a secret is ever a setting. The key is named in the message, never a value.
    const secretKey = secretLikeKey(values);
    if (secretKey)
      throw new TyError(
        'E_INVALID_SETTINGS',
        `settings of ${tool.name}: the field ${secretKey.at.slice(0, 200)} is named like a secret; ${SECRET_HINT}`,
        { tool: tool.name, field: secretKey.at.slice(0, 200), secretLike: true },
      );
    const effective = applyDefaults(schema, values);
    const err = this.#check(tool.revision, schema)(effective);
    if (err) {
      const d = describeError(err);
      const msg = d.message
        .replace(/the tool's parameters/g, "the tool's settings schema")
        .replace(/the arguments/g, 'the settings');
      throw new TyError('E_INVALID_SETTINGS', `settings of ${tool.name}: ${msg}`, {
        tool: tool.name,
        field: d.field,
        keyword: err.keyword,
      });
    }
    return effective;
  }

  /**
   * The current settings revision id of a tool revision, or undefined (opaque: for resolveInvocation and task pinning).
   */
  async revisionOf(_name: string, toolRevision: string): Promise<string | undefined> {
    if (!isContentId(toolRevision)) return undefined;
    return (await this.store.getJson<SettingsRecord>(SETTINGS_NS, toolRevision))?.current;
  }

  /**
   * The settings revision a task pins for a call of `toolRevision`: `requested` after checking it is a stored
   * settings revision of that tool revision, else the current one (undefined when there is none).
   * @throws TyError E_UNKNOWN_TOOL (requested is not a settings revision of this tool revision), E_INTEGRITY
   */
  async pin(name: string, toolRevision: string, requested?: string): Promise<string | undefined> {
    if (requested === undefined) return this.revisionOf(name, toolRevision);
    await this.load(requested, toolRevision);
    return requested;
  }

  /**
   * Load a settings revision and check it: re-hashed (E_INTEGRITY), of the settings domain and bound to `toolRevision`.
   * @throws TyError E_UNKNOWN_TOOL (not stored, or another tool revision's), E_INTEGRITY
   */
  async load(settingsRevision: string, toolRevision: string): Promise<SettingsDocument> {
    if (!isContentId(settingsRevision))
      throw new TyError('E_UNKNOWN_TOOL', `"${settingsRevision.slice(0, 80)}" is not a settings revision id`);
    const bytes = await this.store.getObject(settingsRevision);
    if (!bytes)
      throw new TyError('E_UNKNOWN_TOOL', `settings revision ${settingsRevision} is not stored`, { settingsRevision });
    let doc: { domain?: unknown; body?: SettingsDocument };
    try {
      doc = JSON.parse(new TextDecoder().decode(bytes));
    } catch {
      throw new TyError('E_INTEGRITY', `stored settings revision ${settingsRevision} is not a document`);
    }
    const body = doc.body;
    if (doc.domain !== DOMAINS.settings || !body || !isObject(body.values) || typeof body.toolRevision !== 'string')
      throw new TyError('E_UNKNOWN_TOOL', `${settingsRevision} is not a settings revision`);
    if (body.toolRevision !== toolRevision)
      throw new TyError(
        'E_UNKNOWN_TOOL',
        `settings revision ${settingsRevision} belongs to tool revision ${body.toolRevision}, not ${toolRevision}`,
        { settingsRevision },
      );
    return body;
  }

  /**
   * The settings a call of `tool` runs with: `pinned` (a task's settingsRevision, checked to belong to the tool
   * revision) or the current ones; values re-validated against the revision's schema with defaults applied.
   * @throws TyError E_UNKNOWN_TOOL, E_INTEGRITY, E_INVALID_SETTINGS
   */
  async forCall(
    tool: { name: string; revision: string; manifest: ToolManifest },
    pinned?: string,
  ): Promise<CurrentSettings> {
    const id = pinned ?? (await this.revisionOf(tool.name, tool.revision));
    const values = id ? (await this.load(id, tool.revision)).values : {};
    const effective = this.validate(tool, values);
    return id ? { settingsRevision: id, values, effective } : { values, effective };
  }

  /**
   * The current settings of a tool revision (values and effective values; no settings revision when none was stored).
   */
  async current(tool: { name: string; revision: string; manifest: ToolManifest }): Promise<CurrentSettings> {
    const id = await this.revisionOf(tool.name, tool.revision);
    const values = id ? (await this.load(id, tool.revision)).values : {};
    const effective = tool.manifest.settings ? applyDefaults(tool.manifest.settings, values) : {};
    return id ? { settingsRevision: id, values, effective } : { values, effective };
  }

  /**
   * Make a new settings revision current for `tool`: start from `from` (another revision of the same tool, whose
   * current values are carried over) or from this revision's current values, apply `set` then `unset`, validate
   * against this revision's schema (defaults applied), store the document and audit the change.
   * @returns the new settings revision, the stored values, the effective values and the previous revision.
   * @throws TyError E_INVALID_SETTINGS (no settings schema, invalid values), E_UNKNOWN_TOOL (a `from` of another tool)
   */
  async update(
    tool: { name: string; revision: string; manifest: ToolManifest },
    change: { set?: SettingsValues; unset?: string[]; from?: { name: string; revision: string } },
    who: { principal: string; via: string },
  ): Promise<{
    settingsRevision: string;
    values: SettingsValues;
    effective: SettingsValues;
    previous?: string;
    changed: boolean;
  }> {
    if (!tool.manifest.settings)
      throw new TyError(
        'E_INVALID_SETTINGS',
        `${tool.name} declares no settings (its manifest has no "settings" schema)`,
        { tool: tool.name },
      );
    if (change.from && change.from.name !== tool.name)
      throw new TyError(
        'E_UNKNOWN_TOOL',
        `settings can be carried over only from another revision of "${tool.name}", not from "${change.from.name}"`,
      );
    const base = change.from
      ? await this.revisionOf(change.from.name, change.from.revision)
      : await this.revisionOf(tool.name, tool.revision);
    if (change.from && !base)
      throw new TyError(
        'E_INVALID_SETTINGS',
        `revision ${change.from.revision} of ${tool.name} has no settings to carry over`,
        { tool: tool.name },
      );
    const values: SettingsValues = base
      ? clone((await this.load(base, change.from?.revision ?? tool.revision)).values)
      : {};
    for (const [k, v] of Object.entries(change.set ?? {})) {
      if (k === '__proto__' || k === 'constructor' || k === 'prototype')
        throw new TyError('E_INVALID_SETTINGS', `"${k}" is not a usable settings field name`);
      values[k] = v;
    }
    for (const k of change.unset ?? []) delete values[k];
    const effective = this.validate(tool, values);
    const body: SettingsDocument = { tool: tool.name, toolRevision: tool.revision, values };
    const bytes = documentBytes(DOMAINS.settings, body, 'E_INVALID_MANIFEST');
    const settingsRevision = await cidOfBytes(bytes);
    const current = await this.revisionOf(tool.name, tool.revision);
    const carried = change.from ? ` (carried over from ${change.from.revision})` : '';
    let previous: string | undefined;
    const store = async (): Promise<void> => {
      await this.store.putObject(bytes);
      await this.store.update<SettingsRecord>(SETTINGS_NS, tool.revision, (r) => {
        const next: SettingsRecord = r
          ? { ...r, history: [...r.history] }
          : { tool: tool.name, toolRevision: tool.revision, history: [] };
        previous = next.current;
        if (next.current !== settingsRevision) next.history.push({ settingsRevision, at: new Date().toISOString() });
        next.current = settingsRevision;
        return next;
      });
    };
    // Every change is audited as the gate audits a call: an intent record (who, which tool revision, the new settings
    // revision) made durable before anything is stored, its completion after; the values stay in the store.
    if (current !== settingsRevision && this.#changes)
      await this.#changes.run(
        {
          principal: who.principal,
          kind: 'settings',
          tool: tool.name,
          revision: tool.revision,
          target: settingsRevision,
          rule: current
            ? `settings ${current} -> ${settingsRevision}${carried}`
            : `settings ${settingsRevision}${carried}`,
          list: 'person',
          scope: who.via,
        },
        store,
      );
    else await store();
    const changed = previous !== settingsRevision;
    return { settingsRevision, values, effective, changed, ...(previous ? { previous } : {}) };
  }

  /** The settings history of a tool revision, oldest first. */
  async history(toolRevision: string): Promise<{ settingsRevision: string; at: string }[]> {
    return (await this.store.getJson<SettingsRecord>(SETTINGS_NS, toolRevision))?.history ?? [];
  }
}
