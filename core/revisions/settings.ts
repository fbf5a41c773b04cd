// Per-tool settings revisions: values a person configures for one tool revision, content-addressed; core, trusted side.
import type { ToolManifest } from '../../protocol/manifest.js';
import type { AuditRecord, AuditSink } from '../audit/trail.js';
import { DOMAINS, documentBytes, isContentId } from './cid.js';
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

/** True when a settings field name looks like a secret's (see SECRET_WORDS). */
export function secretLikeName(name: string): boolean {
  const n = name.toLowerCase().replace(/[-_.\s]/g, '');
  // `token` only as the end of a name (githubToken, access_token), so maxTokens or tokenLimit stay settings.
  return n === 'auth' || n.endsWith('token') || SECRET_WORDS.some((w) => n.includes(w));
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
  constructor(
    readonly store: Store,
    /**
     * `audit`: where changes are recorded; `hostId`: this host process's identity, put on a change's `started` record
     * (as the gate does), so that a reader tells a change in progress from one its host did not finish.
     */
    readonly opts: { audit?: AuditSink; hostId?: string } = {},
  ) {}

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
   * @throws TyError E_INVALID_SETTINGS naming the field and the fix (values never echoed).
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
    const started = Date.now();
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
    const settingsRevision = await this.store.putObject(bytes);
    let previous: string | undefined;
    const audit = this.opts.audit;
    // Every change is audited (who, which tool revision, the new settings revision; the values stay in the store), and
    // written ahead: a `started` record is on disk before the settings record changes, its completion (same `call`)
    // after, so a change cut short by a crash reads as `interrupted`, never as an unaudited change (the crash harness,
    // test/faults/crash/, stops the command at every write point).
    let record = undefined as AuditRecord | undefined;
    try {
      await this.store.update<SettingsRecord>(SETTINGS_NS, tool.revision, async (r) => {
        const next: SettingsRecord = r
          ? { ...r, history: [...r.history] }
          : { tool: tool.name, toolRevision: tool.revision, history: [] };
        previous = next.current;
        if (next.current === settingsRevision) return next;
        next.history.push({ settingsRevision, at: new Date().toISOString() });
        next.current = settingsRevision;
        if (audit) {
          const rec: AuditRecord = {
            v: 1,
            time: new Date().toISOString(),
            principal: who.principal,
            tool: tool.name,
            revision: tool.revision,
            kind: 'settings',
            target: settingsRevision,
            decision: 'allow',
            rule: `settings ${previous ? `${previous} -> ` : ''}${settingsRevision}${change.from ? ` (carried over from ${change.from.revision})` : ''}`,
            list: 'person',
            scope: who.via.slice(0, 64),
            durationMs: Date.now() - started,
            outcome: 'ok',
            call: globalThis.crypto.randomUUID(),
          };
          const host = this.opts.hostId;
          await audit.append({ ...rec, outcome: 'started', ...(host !== undefined ? { host } : {}) });
          record = rec;
        }
        return next;
      });
    } catch (e) {
      if (record && audit)
        await audit
          .append({ ...record, time: new Date().toISOString(), outcome: 'error', code: 'E_STORE' })
          .catch(() => undefined);
      throw e;
    }
    const changed = previous !== settingsRevision;
    if (record && audit)
      await audit.append({
        ...record,
        time: new Date().toISOString(),
        durationMs: Date.now() - started,
      });
    return { settingsRevision, values, effective, changed, ...(previous ? { previous } : {}) };
  }

  /** The settings history of a tool revision, oldest first. */
  async history(toolRevision: string): Promise<{ settingsRevision: string; at: string }[]> {
    return (await this.store.getJson<SettingsRecord>(SETTINGS_NS, toolRevision))?.history ?? [];
  }
}
