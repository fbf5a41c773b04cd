// Identity-scoped secrets: grant records (secret -> tool revision [+ origins]) and the broker tools reach; core,
// trusted side.
import { TyError } from '../errors.js';
import type { Store } from '../store/contract.js';
import type { CallerIdentity, HeaderSecrets } from './fetch/mediated.js';
import { originMatches } from './fetch/mediated.js';
import { ORIGIN_PATTERN_RE, isRevisionId, isToolName } from '../../protocol/names.js';
import { AUDIT_FIELD_MAX, type AuditRecord, type AuditSink } from '../audit/trail.js';

/** Secret names: 1-64 of `[A-Za-z0-9_.-]`, not starting with "." (the manifest's `capabilities.secrets` rule). */
export const SECRET_NAME_RE = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$/;

/**
 * Shortest secret value a person may store without saying they mean it (bytes, UTF-8): a value that short can be
 * guessed, and it occurs by chance in ordinary text, where the host withholds known values from text it did not write
 * (core/capabilities/withhold.ts matches whole tokens, so a short value is only found where it stands alone).
 */
export const MIN_SECRET_BYTES = 8;

/**
 * Check a secret value before it is stored: at least MIN_SECRET_BYTES bytes unless `allowShort`. Never echoes the
 * value.
 * @throws TyError E_USAGE (data `{ bytes, minBytes }`: the value's length and the minimum)
 */
export function checkSecretValue(value: string, opts: { allowShort?: boolean } = {}): void {
  const bytes = new TextEncoder().encode(value).length;
  if (bytes > 0 && bytes < MIN_SECRET_BYTES && opts.allowShort !== true)
    throw new TyError(
      'E_USAGE',
      `a secret value of ${bytes} byte${bytes === 1 ? '' : 's'} is refused: values under ${MIN_SECRET_BYTES} bytes ` +
        'can be guessed, and they turn up by chance in ordinary text, so they cannot be told apart from it where a ' +
        'known value is withheld',
      { bytes, minBytes: MIN_SECRET_BYTES },
    );
}

/** Where values live (node/store/secrets.ts: a 0600 file). Implementations never log values. */
export interface SecretValues {
  get(name: string): Promise<string | undefined>;
  set(name: string, value: string): Promise<void>;
  /** @returns true when a value was removed */
  delete(name: string): Promise<boolean>;
  names(): Promise<string[]>;
}

/**
 * One grant of a secret to one exact tool revision.
 * - `origins` empty: the revision may read the value with `ctx.getSecret(NAME)`.
 * - `origins` non-empty: the value is only substituted by the host into `{{secret:NAME}}` header
 *   placeholders of mediated fetches to those origins; `ctx.getSecret` is refused, so the value never
 *   enters the sandbox.
 */
export interface SecretGrant {
  tool: string;
  revision: string;
  origins: string[];
}

/** Stored record `secret-grants/NAME`. */
interface GrantRecord {
  name: string;
  grants: SecretGrant[];
}

const NS = 'secret-grants';
const PLACEHOLDER_RE = /\{\{secret:([^}]{0,80})\}\}/g;

/** @throws TyError E_USAGE for a malformed secret name. */
export function checkSecretName(name: string): void {
  if (typeof name !== 'string' || !SECRET_NAME_RE.test(name)) {
    throw new TyError(
      'E_USAGE',
      `"${String(name).slice(0, 64)}" is not a secret name (1-64 of A-Z a-z 0-9 _ . -, not starting with ".")`,
    );
  }
}

/** Grant records kept in the store, keyed by secret name. Values are never here. */
export class SecretGrants {
  constructor(readonly store: Store) {}

  /**
   * Grant `name` to one exact revision (replacing that revision's previous grant of it).
   * @throws TyError E_USAGE (bad secret name, tool name, revision id or origin)
   */
  async grant(name: string, grant: SecretGrant): Promise<void> {
    checkSecretName(name);
    if (!isToolName(grant.tool)) throw new TyError('E_USAGE', `"${grant.tool.slice(0, 64)}" is not a tool name`);
    if (!isRevisionId(grant.revision)) throw new TyError('E_USAGE', 'a grant needs an exact revision id');
    const origins: string[] = [];
    for (const o of grant.origins) {
      if (typeof o !== 'string' || !ORIGIN_PATTERN_RE.test(o))
        throw new TyError('E_USAGE', `"${o.slice(0, 100)}" is not an origin (https://host[:port] or https://*.domain)`);
      origins.push(o.toLowerCase());
    }
    await this.store.update<GrantRecord>(NS, name, (rec) => {
      const grants = (rec?.grants ?? []).filter((g) => !(g.tool === grant.tool && g.revision === grant.revision));
      grants.push({ tool: grant.tool, revision: grant.revision, origins: [...new Set(origins)].sort() });
      return { name, grants };
    });
  }

  /**
   * Remove grants of `name` to `tool` (one revision, or every revision when `revision` is absent).
   * @returns how many grants were removed
   */
  async revoke(name: string, tool: string, revision?: string): Promise<number> {
    checkSecretName(name);
    let removed = 0;
    await this.store.update<GrantRecord>(NS, name, (rec) => {
      if (!rec) return undefined;
      const grants = rec.grants.filter(
        (g) => !(g.tool === tool && (revision === undefined || g.revision === revision)),
      );
      removed = rec.grants.length - grants.length;
      return grants.length ? { name, grants } : undefined;
    });
    return removed;
  }

  /** Remove every grant of `name` (used when the secret itself is deleted). */
  async revokeAll(name: string): Promise<void> {
    checkSecretName(name);
    await this.store.deleteKey(NS, name);
  }

  /**
   * The grants of `name`, read on each use of the secret: kept in memory while the store vouches nothing changed
   * (Store.getJsonFresh: its generation, else the record's stamp), so a revoke by any process applies to the next use.
   */
  async grantsOf(name: string): Promise<SecretGrant[]> {
    checkSecretName(name);
    return [...((await this.store.getJsonFresh<GrantRecord>(NS, name))?.grants ?? [])];
  }

  /** Every secret name that has grants, with them. Never values. */
  async list(): Promise<{ name: string; grants: SecretGrant[] }[]> {
    const out: { name: string; grants: SecretGrant[] }[] = [];
    for (const key of await this.store.backend.list(NS)) {
      const rec = await this.store.getJson<GrantRecord>(NS, key);
      if (rec) out.push({ name: rec.name, grants: rec.grants });
    }
    return out;
  }
}

/** Where the broker records each secret use, and its clock (ms since the epoch; injected for tests). */
export interface SecretAuditOptions {
  audit: AuditSink;
  clock?: () => number;
}

/** Why a secret use was refused: the audit `list` and `rule` (never the value). */
class SecretRefusal extends TyError {
  constructor(
    message: string,
    readonly list: string,
    readonly rule: string,
    data?: Record<string, unknown>,
  ) {
    super('E_SECRET_DENIED', message, data);
  }
}

/**
 * What tool code reaches: `getSecret` and header substitution, each checked against the caller's exact
 * revision, the manifest's `capabilities.secrets` (upper bound) and the grant records. Error messages name
 * the secret, never its value.
 *
 * Every use is audited when an audit sink is given: one record per secret name and use, kind `secret`,
 * target = the secret name (`NAME` for getSecret, `NAME -> https://origin` for a header placeholder),
 * decision allow/deny, list `grant` with the grant that allowed it or the list that refused it (`manifest`,
 * `grant`, `value`, `input`), outcome granted/denied. The value is never recorded. The broker records
 * directly (it does not go through the permission gate): a grant a person made (on the command line, `secret grant`) is
 * already
 * the person's decision, so a granted secret never asks a question, in any mode. If the record cannot be
 * written the use fails (E_STORE) and no value is released.
 */
export class SecretBroker implements HeaderSecrets {
  readonly #audit: SecretAuditOptions | undefined;
  constructor(
    readonly grants: SecretGrants,
    readonly values: SecretValues,
    audit?: SecretAuditOptions,
  ) {
    this.#audit = audit;
  }

  #deny(name: string, why: string, list = 'grant', rule = 'no grant', data?: Record<string, unknown>): never {
    throw new SecretRefusal(`secret "${name}" ${why}`, list, rule, data);
  }

  async #record(
    identity: CallerIdentity,
    target: string,
    t0: number,
    ok: { list: string; rule: string } | SecretRefusal | TyError,
  ): Promise<void> {
    if (!this.#audit) return;
    const now = this.#audit.clock ?? (() => Date.now());
    const cut = (v: string) => (v.length > AUDIT_FIELD_MAX ? `${v.slice(0, AUDIT_FIELD_MAX - 7)}…[cut]` : v);
    const allowed = !(ok instanceof TyError);
    const rec: AuditRecord = {
      v: 1,
      time: new Date(now()).toISOString(),
      principal: cut(identity.principal),
      tool: cut(identity.name),
      revision: cut(identity.revision),
      kind: 'secret',
      target: cut(target),
      access: 'read',
      decision: allowed ? 'allow' : 'deny',
      list: ok instanceof SecretRefusal || allowed ? ok.list : 'error',
      rule: cut(ok instanceof SecretRefusal || allowed ? ok.rule : ok.message),
      scope: 'secret-grants',
      durationMs: Math.max(0, now() - t0),
      outcome: allowed ? 'granted' : 'denied',
    };
    if (!allowed) rec.code = ok.code;
    try {
      await this.#audit.audit.append(rec);
    } catch {
      throw new TyError(
        'E_STORE',
        `the audit record for secret "${target.slice(0, 64)}" could not be written; the secret was not used`,
      );
    }
  }

  /** Run one audited use: record the refusal (and rethrow) or the grant (then return). */
  async #audited<T>(
    identity: CallerIdentity,
    target: string,
    fn: () => Promise<{ value: T; grant: SecretGrant; name: string }>,
  ): Promise<T> {
    const t0 = (this.#audit?.clock ?? (() => Date.now()))();
    let r: { value: T; grant: SecretGrant; name: string };
    try {
      r = await fn();
    } catch (e) {
      const te = e instanceof TyError ? e : new TyError('E_SECRET_DENIED', 'the secret could not be read');
      await this.#record(identity, target, t0, te);
      throw te instanceof SecretRefusal ? new TyError(te.code, te.message, te.data) : te;
    }
    const g = r.grant;
    await this.#record(identity, target, t0, {
      list: 'grant',
      rule: `secret grant ${r.name} to ${g.tool}@${g.revision}${g.origins.length ? ` for ${g.origins.join(', ')}` : ''}`,
    });
    return r.value;
  }

  async #grantFor(identity: CallerIdentity, name: string): Promise<SecretGrant> {
    if (!SECRET_NAME_RE.test(name))
      this.#deny(name.slice(0, 64), 'is not a valid secret name', 'input', 'invalid secret name');
    if (!(identity.manifest.capabilities?.secrets ?? []).includes(name))
      this.#deny(
        name,
        `is not declared in ${identity.name}'s manifest (capabilities.secrets)`,
        'manifest',
        'manifest upper bound',
      );
    const grant = (await this.grants.grantsOf(name)).find(
      (g) => g.tool === identity.name && g.revision === identity.revision,
    );
    if (!grant)
      this.#deny(
        name,
        `is not granted to ${identity.name}@${identity.revision} (a person grants it to this revision)`,
        'grant',
        'no grant to this revision',
        { secret: name, grantTo: `${identity.name}@${identity.revision}` },
      );
    return grant;
  }

  async #value(name: string): Promise<string> {
    const v = await this.values.get(name);
    if (v === undefined)
      this.#deny(name, 'has no value set (a person sets it)', 'value', 'no value set', { secret: name, unset: true });
    return v;
  }

  /**
   * The value, for a revision granted it without origin restriction.
   * @throws TyError E_SECRET_DENIED (not declared, not granted to this exact revision, origin-restricted, or unset)
   */
  async getSecret(identity: CallerIdentity, name: unknown): Promise<string> {
    const target = typeof name === 'string' ? name.slice(0, 128) : '?';
    return this.#audited(identity, target, async () => {
      if (typeof name !== 'string') this.#deny('?', 'name must be a string', 'input', 'secret name is not a string');
      const grant = await this.#grantFor(identity, name);
      if (grant.origins.length > 0)
        this.#deny(
          name,
          `is granted for header use with ${grant.origins.join(', ')} only; use a {{secret:${name}}} header placeholder`,
          'grant',
          `header-only grant for ${grant.origins.join(', ')}`,
        );
      return { value: await this.#value(name), grant, name };
    });
  }

  /**
   * Replace `{{secret:NAME}}` in header values, for `origin` only. A placeholder whose grant does not cover
   * the origin refuses the whole request (nothing is sent; the literal placeholder is never forwarded).
   * A grant without origins does not cover any origin for substitution: substitution always needs the origin named.
   * @throws TyError E_SECRET_DENIED
   */
  async substitute(
    identity: CallerIdentity,
    origin: string,
    headers: [string, string][],
    used?: string[],
  ): Promise<[string, string][]> {
    const out: [string, string][] = [];
    for (const [k, v] of headers) {
      const names = [...v.matchAll(PLACEHOLDER_RE)].map((m) => m[1] ?? '');
      if (names.length === 0) {
        if (v.includes('{{secret:'))
          await this.#audited(identity, `? -> ${origin}`, async () =>
            this.#deny('?', 'placeholder is malformed', 'input', 'malformed placeholder'),
          );
        out.push([k, v]);
        continue;
      }
      const values = new Map<string, string>();
      for (const name of names) {
        const value = await this.#audited(identity, `${name.slice(0, 128)} -> ${origin}`, async () => {
          const grant = await this.#grantFor(identity, name);
          if (!grant.origins.some((p) => originMatches(p, origin)))
            this.#deny(name, `is not granted for ${origin}`, 'grant', `grant does not cover ${origin}`);
          const value = await this.#value(name);
          if (/[\r\n\0]/.test(value))
            this.#deny(
              name,
              'value cannot be used in a header (line break or NUL)',
              'value',
              'value has a line break or NUL',
            );
          return { value, grant, name };
        });
        values.set(name, value);
        used?.push(value);
      }
      const replaced = v.replace(PLACEHOLDER_RE, (_m, n: string) => values.get(n) ?? '');
      if (/[\r\n\0]/.test(replaced))
        this.#deny(names[0] ?? '?', 'value cannot be used in a header (line break or NUL)');
      out.push([k, replaced]);
    }
    return out;
  }
}
