// The bridge's own requestState (MCP 2026-07-28 multi-round-trip): sealed with AES-GCM under a key that never leaves
// the process, bound to one call, used once; it carries the server's own state and the shapes of the forms it asked
// for, neither readable by the client; core, trusted side.
import { canonicalJson } from '../../revisions/canonical.js';
import { MAX_STATE_CHARS, STATE_TTL_MS } from './required.js';

/** What a field of an elicitation form may be answered with (see trimElicitation in relay.ts). */
export interface FieldShape {
  /** `string`, `number`, `integer`, `boolean`, `array` (of strings), or `any` (a type the bridge does not judge). */
  t: 'string' | 'number' | 'integer' | 'boolean' | 'array' | 'any';
  /** The allowed values, when the schema lists them (a single-select enum, or a multi-select's items). */
  e?: string[];
}

/** What a state the bridge issued carries (sealed: the client can neither read nor change it). */
interface StatePayload {
  v: 2;
  /** the binding: principal, server, tool, canonical arguments hash */
  b: string;
  /** the server's own requestState, when it gave one */
  u?: string;
  /** the input requests relayed: key -> method */
  k: Record<string, string>;
  /** the elicitation forms relayed: key -> field name -> shape (answers are trimmed to them) */
  f?: Record<string, Record<string, FieldShape>>;
  /** a nonce: the state is taken once */
  n: string;
  /** expiry, ms since the epoch */
  e: number;
  /** a 2025-era server's call held open by the bridge (core/mcp/input/suspend.ts) */
  s?: string;
}

/** Why a requestState was refused. */
export type StateRefusal = 'malformed' | 'mac' | 'expired' | 'bind' | 'replayed';

/** base64url without padding (RFC 4648 section 5), in chunks (no argument-count limit on large states). */
export function b64u(bytes: Uint8Array): string {
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
/** The bytes of a base64url text; undefined when it is not one. */
export function unb64u(s: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(s)) return undefined;
  try {
    return Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

/** What a call is bound to: who calls, which tool of which server, with which arguments. */
export interface CallBinding {
  principal: string;
  server: string;
  tool: string;
  args: unknown;
}

/** The additional data every state is sealed with: a state of another kind or version never opens as this one. */
const AAD = new TextEncoder().encode('tysandbox/mcp-request-state/v2');
/** AES-GCM nonce length, bytes (NIST SP 800-38D: 96-bit IVs, random here; at most about 2^32 states per key). */
const IV_BYTES = 12;

/**
 * The request states one bridge issues: `v2.` base64url(IV) `.` base64url(AES-256-GCM ciphertext and tag) of the JSON
 * payload, under a key made at random in this process for this bridge and never exported (WebCrypto,
 * `extractable: false`; a state outlives neither the process nor STATE_TTL_MS). The client sees an opaque token: the
 * server's own state and the forms' shapes inside cannot be read, and any change fails the tag check. A state is bound
 * to the call (principal, server, tool and the canonical hash of the arguments) and taken once: a tampered, expired,
 * foreign or replayed state is refused. The server's own state travels inside, so the server gets back exactly what
 * it issued.
 */
export class RequestStates {
  private key: Promise<CryptoKey> | undefined;
  /** Nonces taken, with their expiry (swept as they pass). */
  private readonly taken = new Map<string, number>();

  constructor(
    private readonly clock: () => number = () => Date.now(),
    private readonly ttlMs = STATE_TTL_MS,
  ) {}

  private sealKey(): Promise<CryptoKey> {
    this.key ??= globalThis.crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
    return this.key;
  }

  private static async bind(b: CallBinding): Promise<string> {
    const text = `${b.principal}\0${b.server}\0${b.tool}\0${canonicalJson(b.args ?? {})}`;
    return b64u(new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))));
  }

  /**
   * Seal a state for the input requests `keys` (key -> method) of one call, carrying the server's own state and the
   * shapes of the elicitation forms relayed (`forms`: key -> field -> shape).
   */
  async mint(
    binding: CallBinding,
    keys: Record<string, string>,
    upstreamState: string | undefined,
    suspension?: string,
    forms?: Record<string, Record<string, FieldShape>>,
  ): Promise<string> {
    const payload: StatePayload = {
      v: 2,
      b: await RequestStates.bind(binding),
      k: keys,
      n: b64u(globalThis.crypto.getRandomValues(new Uint8Array(16))),
      e: this.clock() + this.ttlMs,
      ...(upstreamState !== undefined ? { u: upstreamState } : {}),
      ...(suspension !== undefined ? { s: suspension } : {}),
      ...(forms !== undefined && Object.keys(forms).length > 0 ? { f: forms } : {}),
    };
    const iv = globalThis.crypto.getRandomValues(new Uint8Array(IV_BYTES));
    const sealed = new Uint8Array(
      await globalThis.crypto.subtle.encrypt(
        { name: 'AES-GCM', iv, additionalData: AAD },
        await this.sealKey(),
        new TextEncoder().encode(JSON.stringify(payload)),
      ),
    );
    return `v2.${b64u(iv)}.${b64u(sealed)}`;
  }

  /**
   * Open a state a client echoed for `binding`: decrypted and its tag checked (WebCrypto), then expiry, binding and
   * single use. The nonce is taken only when every check passed.
   */
  async open(
    state: unknown,
    binding: CallBinding,
  ): Promise<
    | {
        ok: true;
        keys: Record<string, string>;
        upstreamState?: string;
        suspension?: string;
        forms?: Record<string, Record<string, FieldShape>>;
      }
    | { ok: false; reason: StateRefusal }
  > {
    if (typeof state !== 'string' || state.length > MAX_STATE_CHARS * 2) return { ok: false, reason: 'malformed' };
    const parts = state.split('.');
    if (parts.length !== 3 || parts[0] !== 'v2') return { ok: false, reason: 'malformed' };
    const iv = unb64u(parts[1]!);
    const sealed = unb64u(parts[2]!);
    if (iv === undefined || sealed === undefined || iv.length !== IV_BYTES) return { ok: false, reason: 'malformed' };
    let plain: ArrayBuffer;
    try {
      plain = await globalThis.crypto.subtle.decrypt(
        { name: 'AES-GCM', iv, additionalData: AAD },
        await this.sealKey(),
        sealed,
      );
    } catch {
      return { ok: false, reason: 'mac' };
    }
    let p: StatePayload;
    try {
      p = JSON.parse(new TextDecoder().decode(plain)) as StatePayload;
    } catch {
      return { ok: false, reason: 'malformed' };
    }
    const now = this.clock();
    if (typeof p.e !== 'number' || p.e <= now) return { ok: false, reason: 'expired' };
    if (p.b !== (await RequestStates.bind(binding))) return { ok: false, reason: 'bind' };
    for (const [n, e] of this.taken) if (e <= now) this.taken.delete(n);
    if (this.taken.has(p.n)) return { ok: false, reason: 'replayed' };
    this.taken.set(p.n, p.e);
    return {
      ok: true,
      keys: p.k,
      ...(typeof p.u === 'string' ? { upstreamState: p.u } : {}),
      ...(typeof p.s === 'string' ? { suspension: p.s } : {}),
      ...(p.f !== undefined && typeof p.f === 'object' ? { forms: p.f } : {}),
    };
  }
}
