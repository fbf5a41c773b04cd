// Who a gateway request comes from: the server's own token, a per-client token or an OIDC access token; 401 answers and
// RFC 9728 protected-resource metadata; Node host, trusted side.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { OidcVerifier } from './oidc.js';
import { looksLikeClientToken, type TokenStore } from './tokens.js';

/** An authenticated request: `principal` undefined for the server's own token (the transport's own naming applies). */
export type AuthResult =
  | { ok: true; via: 'static' | 'token' | 'oidc'; principal?: string }
  | { ok: false; status: 401; reason: string; headers: Record<string, string> };

export interface AuthenticatorOptions {
  /** The server's own bearer token (its token file, one per listening address); absent: not accepted. */
  staticToken?: string;
  /** Per-client tokens (`tycli token create`). */
  tokens?: TokenStore;
  /** OIDC access tokens; only with this does the server advertise protected-resource metadata (RFC 9728). */
  oidc?: OidcVerifier;
  /** How long a verified token is trusted before it is checked again, ms (default 500: revocations apply by then). */
  cacheMs?: number;
  clock?: () => number;
}

/** The RFC 9728 well-known path prefix. */
export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource';

const sha = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * Authenticates `Authorization: Bearer ...` headers (RFC 6750) in this order: the server's own token (constant-time
 * comparison), a per-client token (`tyt_...`, checked in the store: revoked or expired ones are refused), an OIDC
 * access token (a JWT, when OIDC is configured). Verdicts of tokens are kept `cacheMs` at most, and forgotten at once
 * on `invalidate()` (a token record changed on any instance), so a revocation applies everywhere within a second.
 *
 * A refusal is 401 with `WWW-Authenticate: Bearer realm="tysandbox"`; only when OIDC is configured does it carry
 * `resource_metadata` (RFC 9728 section 5.1), so an MCP client of a server with static or per-client tokens is never
 * sent into an OAuth flow it cannot finish.
 */
export class Authenticator {
  readonly #o: AuthenticatorOptions;
  readonly #cache = new Map<string, { until: number; result: AuthResult & { ok: true } }>();
  readonly #clock: () => number;
  readonly #static: Buffer | undefined;

  constructor(opts: AuthenticatorOptions) {
    this.#o = opts;
    this.#clock = opts.clock ?? Date.now;
    this.#static = opts.staticToken ? sha(opts.staticToken) : undefined;
  }

  /** True when OIDC is configured (and protected-resource metadata is served). */
  get oidc(): boolean {
    return this.#o.oidc !== undefined;
  }

  /** Forget cached verdicts (call on any change to the token records). */
  invalidate(): void {
    this.#cache.clear();
  }

  /**
   * Check a request's Authorization header. `resourceMetadata` is the absolute URL of this resource's RFC 9728
   * document, sent in the challenge when OIDC is configured.
   */
  async authenticate(header: string | undefined, resourceMetadata?: string): Promise<AuthResult> {
    const refuse = (reason: string, error?: 'invalid_token'): AuthResult => ({
      ok: false,
      status: 401,
      reason,
      headers: { 'www-authenticate': this.challenge(error, resourceMetadata) },
    });
    if (header === undefined || !/^Bearer [A-Za-z0-9._~+/=-]{1,8192}$/.test(header))
      return refuse('missing or malformed bearer token');
    const token = header.slice(7);
    const key = sha(token);
    if (this.#static && key.length === this.#static.length && timingSafeEqual(key, this.#static))
      return { ok: true, via: 'static' };
    const now = this.#clock();
    const id = key.toString('hex');
    const hit = this.#cache.get(id);
    if (hit && hit.until > now) return hit.result;
    let result: (AuthResult & { ok: true }) | undefined;
    let until = now + (this.#o.cacheMs ?? 500);
    if (looksLikeClientToken(token) && this.#o.tokens) {
      const r = await this.#o.tokens.verify(token);
      if (!r.ok) return refuse(`token ${r.reason}`, 'invalid_token');
      result = { ok: true, via: 'token', principal: r.principal };
    } else if (this.#o.oidc) {
      const r = await this.#o.oidc.verify(token);
      if (!r.ok) return refuse(`access token refused: ${r.reason}`, 'invalid_token');
      result = { ok: true, via: 'oidc', principal: r.principal };
      if (r.expiresAt !== undefined) until = Math.min(until, r.expiresAt);
    }
    if (!result) return refuse('wrong bearer token', 'invalid_token');
    if (this.#cache.size > 4096) this.#cache.clear();
    this.#cache.set(id, { until, result });
    return result;
  }

  /** The WWW-Authenticate value of a refusal (RFC 6750 section 3; RFC 9728 section 5.1 when OIDC is configured). */
  challenge(error?: 'invalid_token', resourceMetadata?: string): string {
    const parts = ['Bearer realm="tysandbox"'];
    if (error) parts.push(`error="${error}"`);
    if (this.#o.oidc && resourceMetadata) parts.push(`resource_metadata="${resourceMetadata}"`);
    return parts.join(', ');
  }

  /**
   * The protected-resource metadata of `resource` (RFC 9728 section 2), or undefined when OIDC is not configured
   * (the well-known path then answers 404).
   */
  metadata(resource: string): Record<string, unknown> | undefined {
    const o = this.#o.oidc?.config;
    if (!o) return undefined;
    return {
      resource,
      authorization_servers: [o.issuer],
      bearer_methods_supported: ['header'],
      resource_name: 'tysandbox gateway',
      ...(o.scopes?.length ? { scopes_supported: o.scopes } : {}),
    };
  }
}
