// Multi-round-trip input requests (MCP 2026-07-28 `input_required`) through the bridge: the shape checks of a server's
// input requests and a client's answers, and the bridge's own request state bound to one call; core, trusted side.
//
// Source: MCP 2026-07-28 "Multi round-trip requests" (SEP-2322) and the TypeScript SDK 2.x (`inputRequired`,
// `partitionInputResponses`, `createRequestStateCodec`): a server answers tools/call with `resultType:
// "input_required"`, a map of input requests (elicitation/create, sampling/createMessage, roots/list) and an opaque
// `requestState`; the client retries the same call with `inputResponses` (bare results, by key) and the state echoed.
// The state round-trips through the client, so it is attacker-controlled on re-entry: the bridge never hands the
// server's own state to the client, but a state of its own, HMAC-sealed and bound to the call, used once.
import { canonicalJson } from '../../revisions/canonical.js';

/** The kinds of input a server may ask for, by request method. */
export const INPUT_METHODS: Readonly<Record<string, InputKind>> = Object.assign(
  Object.create(null) as Record<string, InputKind>,
  {
    'elicitation/create': 'elicitation',
    'sampling/createMessage': 'sampling',
    'roots/list': 'roots',
  },
);
export type InputKind = 'elicitation' | 'sampling' | 'roots';

/** Most input requests one answer may carry. */
export const MAX_INPUT_REQUESTS = 16;
/** Longest requestState taken from a server or a client, characters. */
export const MAX_STATE_CHARS = 65_536;
/** How long a state the bridge issued stays valid, ms. */
export const STATE_TTL_MS = 10 * 60_000;
/** Most rounds of one call the bridge answers itself (a person filling in forms) before it refuses. */
export const MAX_ROUNDS = 8;

const KEY_RE = /^[A-Za-z0-9_.:-]{1,128}$/;
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface InputRequest {
  method: string;
  params: Record<string, unknown>;
}

/** A server's `input_required` answer, checked. */
export interface InputRequired {
  inputRequests: Record<string, InputRequest>;
  requestState?: string;
}

/**
 * Check a server's `input_required` result: `inputRequests` a map of at most MAX_INPUT_REQUESTS entries whose keys
 * are 1-128 of A-Z a-z 0-9 _ . : - and whose methods are elicitation/create, sampling/createMessage or roots/list
 * (params an object), `requestState` a string of at most MAX_STATE_CHARS; at least one of the two.
 */
export function parseInputRequired(
  result: unknown,
): { ok: true; value: InputRequired } | { ok: false; message: string } {
  if (!isObj(result)) return { ok: false, message: 'the result is not an object' };
  const raw = result.inputRequests ?? {};
  if (!isObj(raw)) return { ok: false, message: '"inputRequests" is not an object' };
  const keys = Object.keys(raw);
  if (keys.length > MAX_INPUT_REQUESTS) return { ok: false, message: `more than ${MAX_INPUT_REQUESTS} input requests` };
  const inputRequests: Record<string, InputRequest> = Object.create(null) as Record<string, InputRequest>;
  for (const k of keys) {
    if (!KEY_RE.test(k)) return { ok: false, message: 'an input request key is not 1-128 of A-Z a-z 0-9 _ . : -' };
    const r = raw[k];
    if (!isObj(r) || typeof r.method !== 'string' || INPUT_METHODS[r.method] === undefined)
      return {
        ok: false,
        message: `input request "${k}" is not elicitation/create, sampling/createMessage or roots/list`,
      };
    if (r.params !== undefined && !isObj(r.params))
      return { ok: false, message: `input request "${k}" has params that are not an object` };
    inputRequests[k] = { method: r.method, params: (r.params as Record<string, unknown> | undefined) ?? {} };
  }
  const state = result.requestState;
  if (state !== undefined && (typeof state !== 'string' || state.length > MAX_STATE_CHARS))
    return { ok: false, message: `"requestState" is not a string of at most ${MAX_STATE_CHARS} characters` };
  if (keys.length === 0 && state === undefined) return { ok: false, message: 'neither inputRequests nor requestState' };
  return { ok: true, value: { inputRequests, ...(state !== undefined ? { requestState: state } : {}) } };
}

const isStrArr = (v: unknown): boolean => Array.isArray(v) && v.length <= 100 && v.every((x) => typeof x === 'string');

/**
 * Check one answer of the client to an input request of `method` (the bare result MCP defines): an ElicitResult
 * (`action` accept / decline / cancel; `content` a flat object of strings, numbers, booleans or string arrays), a
 * CreateMessageResult (`role`, `content` an object or an array of objects, `model` a string), a ListRootsResult
 * (`roots` an array of `{ uri: "file://..." , name? }`, at most 1000). @returns why it does not fit, or undefined.
 */
export function inputResponseProblem(method: string, v: unknown): string | undefined {
  if (!isObj(v) || 'method' in v || 'result' in v) return 'is not a bare result object';
  switch (INPUT_METHODS[method]) {
    case 'elicitation':
      if (v.action !== 'accept' && v.action !== 'decline' && v.action !== 'cancel')
        return 'has no action accept, decline or cancel';
      if (v.content === undefined) return undefined;
      if (!isObj(v.content)) return 'has content that is not an object';
      for (const x of Object.values(v.content))
        if (
          !(
            typeof x === 'string' ||
            typeof x === 'boolean' ||
            (typeof x === 'number' && Number.isFinite(x)) ||
            isStrArr(x)
          )
        )
          return 'has content values other than strings, numbers, booleans or string arrays';
      return undefined;
    case 'sampling':
      if (v.role !== 'assistant' && v.role !== 'user') return 'has no role assistant or user';
      if (typeof v.model !== 'string') return 'has no model';
      if (!(isObj(v.content) || (Array.isArray(v.content) && v.content.every(isObj)))) return 'has no content';
      return undefined;
    case 'roots':
      if (!Array.isArray(v.roots) || v.roots.length > 1000) return 'has no roots array';
      for (const r of v.roots)
        if (
          !isObj(r) ||
          typeof r.uri !== 'string' ||
          !r.uri.startsWith('file://') ||
          (r.name !== undefined && typeof r.name !== 'string')
        )
          return 'has a root that is not { uri: "file://...", name? }';
      return undefined;
    default:
      return 'answers an unknown kind of request';
  }
}

/** What a state the bridge issued carries (signed, not encrypted: the client can read it). */
interface StatePayload {
  v: 1;
  /** the binding: principal, server, tool, canonical arguments hash */
  b: string;
  /** the server's own requestState, when it gave one */
  u?: string;
  /** the input requests relayed: key -> method */
  k: Record<string, string>;
  /** a nonce: the state is taken once */
  n: string;
  /** expiry, ms since the epoch */
  e: number;
  /** a 2025-era server's call held open by the bridge (core/mcp/input/suspend.ts) */
  s?: string;
}

/** Why a requestState was refused. */
export type StateRefusal = 'malformed' | 'mac' | 'expired' | 'bind' | 'replayed';

const b64u = (bytes: Uint8Array): string =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
const unb64u = (s: string): Uint8Array<ArrayBuffer> | undefined => {
  if (!/^[A-Za-z0-9_-]*$/.test(s)) return undefined;
  try {
    return Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
};

/** What a call is bound to: who calls, which tool of which server, with which arguments. */
export interface CallBinding {
  principal: string;
  server: string;
  tool: string;
  args: unknown;
}

/**
 * The request states one bridge issues: `v1.` base64url(payload) `.` base64url(HMAC-SHA-256), under a key made at
 * random for this bridge (a state outlives neither the process nor STATE_TTL_MS). A state is bound to the call
 * (principal, server, tool and the canonical hash of the arguments) and taken once: a tampered, expired, foreign or
 * replayed state is refused. The server's own state travels inside, so the server sees exactly what it issued.
 */
export class RequestStates {
  private key: Promise<CryptoKey> | undefined;
  /** Nonces taken, with their expiry (swept as they pass). */
  private readonly taken = new Map<string, number>();

  constructor(
    private readonly clock: () => number = () => Date.now(),
    private readonly ttlMs = STATE_TTL_MS,
  ) {}

  private hmacKey(): Promise<CryptoKey> {
    this.key ??= globalThis.crypto.subtle.importKey(
      'raw',
      globalThis.crypto.getRandomValues(new Uint8Array(32)),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['sign', 'verify'],
    );
    return this.key;
  }

  private static async bind(b: CallBinding): Promise<string> {
    const text = `${b.principal}\0${b.server}\0${b.tool}\0${canonicalJson(b.args ?? {})}`;
    return b64u(new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))));
  }

  /** Seal a state for the input requests `keys` (key -> method) of one call, carrying the server's own state. */
  async mint(
    binding: CallBinding,
    keys: Record<string, string>,
    upstreamState: string | undefined,
    suspension?: string,
  ): Promise<string> {
    const payload: StatePayload = {
      v: 1,
      b: await RequestStates.bind(binding),
      k: keys,
      n: b64u(globalThis.crypto.getRandomValues(new Uint8Array(16))),
      e: this.clock() + this.ttlMs,
      ...(upstreamState !== undefined ? { u: upstreamState } : {}),
      ...(suspension !== undefined ? { s: suspension } : {}),
    };
    const body = b64u(new TextEncoder().encode(JSON.stringify(payload)));
    const mac = new Uint8Array(
      await globalThis.crypto.subtle.sign('HMAC', await this.hmacKey(), new TextEncoder().encode(`v1.${body}`)),
    );
    return `v1.${body}.${b64u(mac)}`;
  }

  /**
   * Open a state a client echoed for `binding`: its MAC checked (constant time, WebCrypto verify), then expiry,
   * binding and single use. The nonce is taken only when every check passed.
   */
  async open(
    state: unknown,
    binding: CallBinding,
  ): Promise<
    | { ok: true; keys: Record<string, string>; upstreamState?: string; suspension?: string }
    | { ok: false; reason: StateRefusal }
  > {
    if (typeof state !== 'string' || state.length > MAX_STATE_CHARS * 2) return { ok: false, reason: 'malformed' };
    const parts = state.split('.');
    if (parts.length !== 3 || parts[0] !== 'v1') return { ok: false, reason: 'malformed' };
    const mac = unb64u(parts[2]!);
    const body = unb64u(parts[1]!);
    if (mac === undefined || body === undefined) return { ok: false, reason: 'malformed' };
    const good = await globalThis.crypto.subtle.verify(
      'HMAC',
      await this.hmacKey(),
      mac,
      new TextEncoder().encode(`v1.${parts[1]}`),
    );
    if (!good) return { ok: false, reason: 'mac' };
    let p: StatePayload;
    try {
      p = JSON.parse(new TextDecoder().decode(body)) as StatePayload;
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
    };
  }
}
