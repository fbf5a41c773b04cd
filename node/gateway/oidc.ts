// OIDC access tokens checked with jose against the configured issuer's JWKS; the principal comes from a configured
// claim; Node host, trusted side.
import { TyError } from '../../core/errors.js';
import { PRINCIPAL_NAME_RE, userPrincipal } from './tokens.js';

/** The OIDC part of the gateway's settings (`gateway.oidc`). */
export interface OidcConfig {
  /** The issuer URL, exactly as its tokens' `iss` claim says it (https; http only on a loopback address). */
  issuer: string;
  /** This gateway's identifier at the issuer: tokens must name it in `aud` (RFC 9068 section 4, RFC 8707). */
  audience: string;
  /** The claim whose value names the principal (default `sub`): `user:VALUE` on rules and audit records. */
  claim?: string;
  /** The JWKS URL; default: `jwks_uri` of the issuer's discovery document (OpenID Connect Discovery 1.0). */
  jwksUri?: string;
  /** Accepted signature algorithms (default RS256, RS384, RS512, PS256, ES256, ES384, EdDSA; never `none` or HS*). */
  algorithms?: string[];
  /** Scopes advertised in the protected-resource metadata (RFC 9728 `scopes_supported`). */
  scopes?: string[];
}

const DEFAULT_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'ES256', 'ES384', 'EdDSA'];
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** @throws TyError E_INVALID_SETTINGS for a URL that is not https (or http on loopback). */
function checkUrl(what: string, value: string): URL {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new TyError('E_INVALID_SETTINGS', `gateway.oidc.${what} "${value.slice(0, 100)}" is not a URL`);
  }
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && LOOPBACK.has(u.hostname)))
    throw new TyError('E_INVALID_SETTINGS', `gateway.oidc.${what} must be an https URL (http only on loopback)`);
  return u;
}

/**
 * Check an OIDC configuration (shape, URLs, algorithms) before any request. @throws TyError E_INVALID_SETTINGS
 */
export function checkOidcConfig(c: unknown): OidcConfig {
  const o = c as Partial<OidcConfig> | null;
  if (typeof o !== 'object' || o === null) throw new TyError('E_INVALID_SETTINGS', 'gateway.oidc must be an object');
  if (typeof o.issuer !== 'string') throw new TyError('E_INVALID_SETTINGS', 'gateway.oidc.issuer is required');
  checkUrl('issuer', o.issuer);
  if (typeof o.audience !== 'string' || o.audience.length === 0)
    throw new TyError(
      'E_INVALID_SETTINGS',
      'gateway.oidc.audience is required: tokens must be issued for this gateway (RFC 8707 resource indicators)',
    );
  if (o.claim !== undefined && (typeof o.claim !== 'string' || !/^[A-Za-z0-9_.:-]{1,64}$/.test(o.claim)))
    throw new TyError('E_INVALID_SETTINGS', 'gateway.oidc.claim must be a claim name such as sub or email');
  if (o.jwksUri !== undefined) checkUrl('jwksUri', String(o.jwksUri));
  const algs = o.algorithms ?? DEFAULT_ALGS;
  if (!Array.isArray(algs) || algs.length === 0 || algs.some((a) => typeof a !== 'string' || !DEFAULT_ALGS.includes(a)))
    throw new TyError('E_INVALID_SETTINGS', `gateway.oidc.algorithms must be a subset of ${DEFAULT_ALGS.join(', ')}`);
  return { ...(o as OidcConfig), algorithms: algs };
}

/** The outcome of checking an OIDC access token. */
export type OidcCheck =
  | { ok: true; principal: string; subject: string; expiresAt?: number }
  | { ok: false; reason: string };

/**
 * Verifies JWT access tokens: signature against the issuer's JWKS (fetched and cached by jose's createRemoteJWKSet,
 * refetched when a token names an unknown key id), `iss` equal to the issuer, `aud` naming the audience, `exp`/`nbf`
 * with 30 s of clock tolerance, an accepted algorithm. The principal is `user:` + the configured claim's value, which
 * must be a string matching PRINCIPAL_NAME_RE (so a token cannot smuggle spaces or rule syntax into a principal).
 */
export class OidcVerifier {
  readonly config: OidcConfig;
  #jwks: Promise<import('jose').JWTVerifyGetKey> | undefined;

  constructor(config: OidcConfig) {
    this.config = checkOidcConfig(config);
  }

  /** The JWKS URL: configured, or discovered from the issuer. @throws TyError E_INVALID_SETTINGS */
  async jwksUri(): Promise<string> {
    if (this.config.jwksUri) return this.config.jwksUri;
    const base = this.config.issuer.replace(/\/$/, '');
    const res = await fetch(`${base}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new TyError('E_INVALID_SETTINGS', `the issuer's discovery document answered ${res.status}`);
    const doc = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown };
    if (doc.issuer !== this.config.issuer)
      throw new TyError('E_INVALID_SETTINGS', "the issuer's discovery document names another issuer");
    if (typeof doc.jwks_uri !== 'string')
      throw new TyError('E_INVALID_SETTINGS', "the issuer's discovery document has no jwks_uri");
    return checkUrl('jwks_uri', doc.jwks_uri).toString();
  }

  async #keys(): Promise<import('jose').JWTVerifyGetKey> {
    this.#jwks ??= (async () => {
      const { createRemoteJWKSet } = await import('jose');
      return createRemoteJWKSet(new URL(await this.jwksUri()), { timeoutDuration: 10_000, cooldownDuration: 30_000 });
    })();
    try {
      return await this.#jwks;
    } catch (e) {
      this.#jwks = undefined; // discovery is tried again at the next token
      throw e;
    }
  }

  /** Check one access token. Never throws for a bad token; an unreachable issuer is `{ok:false}` too. */
  async verify(token: string): Promise<OidcCheck> {
    if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token)) return { ok: false, reason: 'not a JWT' };
    let payload: import('jose').JWTPayload;
    try {
      const { jwtVerify } = await import('jose');
      const keys = await this.#keys();
      ({ payload } = await jwtVerify(token, keys, {
        issuer: this.config.issuer,
        audience: this.config.audience,
        algorithms: this.config.algorithms ?? DEFAULT_ALGS,
        clockTolerance: 30,
        requiredClaims: ['exp'],
      }));
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      return { ok: false, reason: typeof code === 'string' ? code : 'verification failed' };
    }
    const claim = this.config.claim ?? 'sub';
    const value = payload[claim];
    if (typeof value !== 'string' || !PRINCIPAL_NAME_RE.test(value))
      return { ok: false, reason: `claim ${claim} is missing or not a principal name` };
    return {
      ok: true,
      principal: userPrincipal(value),
      subject: typeof payload.sub === 'string' ? payload.sub : value,
      ...(typeof payload.exp === 'number' ? { expiresAt: payload.exp * 1000 } : {}),
    };
  }
}
