// Per-client bearer tokens: created once (only a SHA-256 hash is stored), listed, revoked, verified per request; Node
// host, trusted side.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { TyError } from '../../core/errors.js';
import type { Store } from '../../core/store/contract.js';

/** The store namespace of token records (one per token, keyed by its public id). */
export const TOKENS_NS = 'tokens';

/** A principal name given to `tycli token create --principal`: what permission rules and audit records name. */
export const PRINCIPAL_NAME_RE = /^[A-Za-z0-9._@+-][A-Za-z0-9._@:+-]{0,127}$/;

/** The principal of an authenticated client: `user:NAME` (the same for a token and an OIDC access token). */
export const userPrincipal = (name: string): string => `user:${name}`;

/** `tyt_` + 16 base32 characters of id + `_` + 43 base64url characters (256 random bits). */
const TOKEN_RE = /^tyt_([a-z2-7]{16})_([A-Za-z0-9_-]{43})$/;
const B32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** A stored token record: never the token itself. */
export interface TokenRecord {
  v: 1;
  /** Public id (also the record key): shown by `token list`, named by `token revoke`. */
  id: string;
  /** The principal name (`user:NAME` on requests). */
  principal: string;
  /** SHA-256 of the whole token, hex. */
  hash: string;
  /** ms since the epoch */
  createdAt: number;
  /** ms since the epoch; absent: does not expire. */
  expiresAt?: number;
  /** ms since the epoch, once revoked (the record is kept so `token list` shows it). */
  revokedAt?: number;
}

/** What `token list` shows of a record. */
export type TokenInfo = Omit<TokenRecord, 'hash' | 'v'> & { state: 'active' | 'expired' | 'revoked' };

function newId(): string {
  let out = '';
  for (const b of randomBytes(16)) out += B32[b & 31];
  return out;
}

const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

/**
 * A duration like `30m`, `12h`, `7d`, `52w`, or an ISO 8601 date/time, as the expiry time (ms since the epoch) after
 * `now`. @throws TyError E_USAGE
 */
export function parseExpiry(value: string, now: number): number {
  const rel = /^(\d{1,6})([mhdw])$/.exec(value.trim());
  if (rel) {
    const unit = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[rel[2] as 'm' | 'h' | 'd' | 'w'];
    const ms = Number(rel[1]) * unit;
    if (ms <= 0) throw new TyError('E_USAGE', '--expires must be in the future');
    return now + ms;
  }
  if (/^\d{4}-\d{2}-\d{2}/.test(value)) {
    const t = Date.parse(value);
    if (Number.isFinite(t)) {
      if (t <= now) throw new TyError('E_USAGE', `--expires ${value.slice(0, 40)} is in the past`);
      return t;
    }
  }
  throw new TyError(
    'E_USAGE',
    `--expires "${value.slice(0, 40)}" is not a time; use a span like 30m, 12h, 90d, 52w or an ISO 8601 date`,
  );
}

/** The outcome of checking a presented token. */
export type TokenCheck =
  | { ok: true; principal: string; id: string }
  | { ok: false; reason: 'malformed' | 'unknown' | 'revoked' | 'expired' };

/**
 * Per-client tokens in the store (file store or PostgreSQL: every instance sees a revocation at its next check).
 * A token is shown once, at creation; the store keeps its SHA-256 (a token has 256 random bits, so a fast hash is
 * enough: nothing to guess), compared in constant time.
 */
export class TokenStore {
  constructor(
    readonly store: Store,
    readonly clock: () => number = Date.now,
  ) {}

  /**
   * Create a token for `principal`, optionally expiring at `expiresAt` (ms since the epoch).
   * @returns the token (print it once; it is not stored) and its record.
   * @throws TyError E_USAGE for a principal outside PRINCIPAL_NAME_RE or an expiry in the past.
   */
  async create(principal: string, expiresAt?: number): Promise<{ token: string; record: TokenRecord }> {
    if (typeof principal !== 'string' || !PRINCIPAL_NAME_RE.test(principal))
      throw new TyError(
        'E_USAGE',
        `"${String(principal).slice(0, 64)}" is not a principal name (1-128 of A-Z a-z 0-9 . _ @ : + -, not starting with ":")`,
      );
    const now = this.clock();
    if (expiresAt !== undefined && !(expiresAt > now))
      throw new TyError('E_USAGE', 'a token must expire in the future');
    const id = newId();
    const token = `tyt_${id}_${randomBytes(32).toString('base64url')}`;
    const record: TokenRecord = {
      v: 1,
      id,
      principal,
      hash: sha256(token),
      createdAt: now,
      ...(expiresAt !== undefined ? { expiresAt } : {}),
    };
    await this.store.putJson(TOKENS_NS, id, record);
    return { token, record };
  }

  /** Every token record (never the tokens), oldest first, with its state now. */
  async list(): Promise<TokenInfo[]> {
    const out: TokenInfo[] = [];
    for (const id of await this.store.backend.list(TOKENS_NS)) {
      const r = await this.store.getJson<TokenRecord>(TOKENS_NS, id);
      if (r?.v !== 1) continue;
      const { hash: _h, v: _v, ...rest } = r;
      out.push({ ...rest, state: this.#state(r) });
    }
    return out.sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }

  /**
   * Revoke the token with public id `id` (or the token itself). Every instance refuses it from its next check.
   * @returns the record as revoked. @throws TyError E_USAGE when no such token exists.
   */
  async revoke(idOrToken: string): Promise<TokenRecord> {
    const m = TOKEN_RE.exec(idOrToken);
    const id = m ? m[1]! : idOrToken;
    if (!/^[a-z2-7]{16}$/.test(id))
      throw new TyError('E_USAGE', 'a token id is 16 characters of a-z and 2-7 (as `tycli token list` shows it)');
    let out: TokenRecord | undefined;
    await this.store.update<TokenRecord>(TOKENS_NS, id, (r) => {
      if (!r) throw new TyError('E_USAGE', `no token ${id}`);
      out = r.revokedAt !== undefined ? r : { ...r, revokedAt: this.clock() };
      return out;
    });
    return out!;
  }

  /** Check a presented token: known, not revoked, not expired, hash equal (constant time). */
  async verify(token: string): Promise<TokenCheck> {
    const m = TOKEN_RE.exec(token);
    if (!m) return { ok: false, reason: 'malformed' };
    const r = await this.store.getJson<TokenRecord>(TOKENS_NS, m[1]!);
    if (r?.v !== 1 || typeof r.hash !== 'string' || r.hash.length !== 64) return { ok: false, reason: 'unknown' };
    const a = Buffer.from(sha256(token), 'hex');
    const b = Buffer.from(r.hash, 'hex');
    if (a.length !== b.length || !timingSafeEqual(a, b)) return { ok: false, reason: 'unknown' };
    const state = this.#state(r);
    if (state !== 'active') return { ok: false, reason: state };
    return { ok: true, principal: userPrincipal(r.principal), id: r.id };
  }

  #state(r: TokenRecord): TokenInfo['state'] {
    if (r.revokedAt !== undefined) return 'revoked';
    if (r.expiresAt !== undefined && r.expiresAt <= this.clock()) return 'expired';
    return 'active';
  }
}

/** True when `value` has the shape of a per-client token (checked against the store, not as a static token). */
export function looksLikeClientToken(value: string): boolean {
  return TOKEN_RE.test(value);
}
