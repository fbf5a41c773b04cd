// The mediated fetch pipeline (validate, scheme, credentials, target, access class, gate, secrets, transport); core,
// trusted side.
import type { FetchRequest, FetchResponse } from '../../../protocol/wire.js';
import type { ToolManifest } from '../../../protocol/manifest.js';
import type { Gate, Principal } from '../../exec/runtime.js';
import { TyError, toTyError } from '../../errors.js';
import { judgeHostname } from './address.js';
import { refuseUndeclared } from '../refusal.js';
import { withholdTokens } from '../withhold.js';

/** Per-request limits. */
export interface FetchLimits {
  /** Wall-clock limit for the whole request (connect, headers and body), ms. Default 30 000. */
  timeoutMs: number;
  /** Cap on the response body, bytes, enforced while streaming. Default 16 MiB. */
  maxBytes: number;
}
export const DEFAULT_FETCH_LIMITS: FetchLimits = { timeoutMs: 30_000, maxBytes: 16 * 1024 * 1024 };

/** What a transport receives: already validated and authorized; headers final (secrets substituted). */
export interface TransportRequest {
  url: string;
  method: string;
  headers: [string, string][];
  /** base64 body */
  body?: string;
}

/**
 * The host's network stack (node/fetch.ts on undici; a browser host's own). Contract: no ambient
 * credentials (cookies, proxies, auth from the environment), never follow redirects, stop reading and
 * close the connection at `limits.maxBytes` (throw E_FETCH_TOO_LARGE), abort the request at
 * `limits.timeoutMs` (E_TIMEOUT) and on `signal` (the tool call's own: E_ABORTED or its reason's code). Hosts that
 * control name resolution must judge the connected address with core/capabilities/fetch/address.ts (E_FETCH_TARGET).
 * Errors: TyError E_FETCH_TARGET | E_FETCH_TOO_LARGE | E_FETCH_FAILED | E_TIMEOUT | E_ABORTED.
 */
export interface FetchTransport {
  request(req: TransportRequest, limits: FetchLimits, signal: AbortSignal): Promise<FetchResponse>;
}

/** The exact revision identity a capability call is made under (from the host's sandbox record, never the message). */
export interface CallerIdentity {
  name: string;
  revision: string;
  manifest: ToolManifest;
  principal: Principal;
}

/**
 * Substitutes `{{secret:NAME}}` header placeholders for one origin (core/capabilities/secrets.ts SecretBroker
 * implements it).
 */
export interface HeaderSecrets {
  /**
   * The headers with every placeholder filled; each value filled in is also pushed to `used` when given (so an error
   * that echoes one can be withheld).
   * @throws TyError E_SECRET_DENIED when a named secret is not granted to this revision for this origin.
   */
  substitute(
    identity: CallerIdentity,
    origin: string,
    headers: [string, string][],
    used?: string[],
  ): Promise<[string, string][]>;
}

export interface MediatedFetchOptions {
  gate: Gate;
  transport: FetchTransport;
  /** Absent: any placeholder is refused (E_SECRET_DENIED). */
  secrets?: HeaderSecrets;
  limits?: Partial<FetchLimits>;
}

/**
 * One mediated request. `params` is untrusted plain data from tool code (FetchRequestSchema).
 * @returns FetchResponseSchema data (status, headers, base64 body); a 3xx is returned as it is.
 * @throws TyError E_FETCH_FAILED (malformed request or network failure), E_FETCH_SCHEME, E_FETCH_CREDENTIALS,
 *   E_FETCH_TARGET, E_CAPABILITY_DENIED, E_SECRET_DENIED, E_PAUSED, E_TIMEOUT, E_ABORTED, E_FETCH_TOO_LARGE.
 */
export type MediatedFetch = (identity: CallerIdentity, params: unknown, signal: AbortSignal) => Promise<FetchResponse>;

/** GET, HEAD and OPTIONS are `read` (RFC 9110 safe methods, minus TRACE which is refused); the rest are `write`. */
export function accessOf(method: string): 'read' | 'write' {
  return method === 'GET' || method === 'HEAD' || method === 'OPTIONS' ? 'read' : 'write';
}

/** Methods the Fetch standard forbids; refused. */
const FORBIDDEN_METHODS = new Set(['CONNECT', 'TRACE', 'TRACK']);

/**
 * Request headers the host owns (framing, routing, connection management, proxying); dropped silently as
 * browsers do for the Fetch standard's forbidden request headers. `Host` cannot be overridden, so the
 * authorized origin is the one addressed. `Cookie` and `Authorization` set by the tool itself pass (they are
 * the tool's own values, never ambient ones).
 */
const HOST_OWNED_HEADERS = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'keep-alive',
  'expect',
  'proxy-authorization',
  'proxy-connection',
  'proxy-authenticate',
  'http2-settings',
]);
const TOKEN_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// eslint-disable-next-line no-control-regex
const BAD_VALUE_RE = /[\r\n\0]/;

/** A manifest or grant origin pattern, parsed once (null: not an https pattern, matches nothing). */
interface OriginPattern {
  port: string;
  hostname: string;
  /** `https://*.domain`: the hostname suffix after the wildcard label; undefined for an exact host. */
  wildcardBase: string | undefined;
}
const patternCache = new Map<string, OriginPattern | null>();

/** Parse an origin pattern once; cached by its text (so a changed manifest is never judged by a stale entry). */
function compilePattern(pattern: string): OriginPattern | null {
  let c = patternCache.get(pattern);
  if (c !== undefined) return c;
  c = null;
  try {
    const p = new URL(pattern.replace('*.', 'wildcard-label.'));
    if (p.protocol === 'https:') {
      c = {
        port: p.port,
        hostname: p.hostname,
        wildcardBase: pattern.includes('://*.') ? p.hostname.slice('wildcard-label.'.length) : undefined,
      };
    }
  } catch {
    /* not a URL: matches nothing */
  }
  if (patternCache.size >= 4096) patternCache.clear(); // bound the memory; entries are cheap to rebuild
  patternCache.set(pattern, c);
  return c;
}

/** `url` is a parsed https URL (protocol, hostname, port as the WHATWG URL parser gives them). */
function patternMatchesUrl(pattern: string, url: { protocol: string; hostname: string; port: string }): boolean {
  const p = compilePattern(pattern);
  if (p === null || url.protocol !== 'https:' || p.port !== url.port) return false;
  return p.wildcardBase !== undefined ? url.hostname.endsWith(`.${p.wildcardBase}`) : p.hostname === url.hostname;
}

/** Normalize, match an origin pattern of the manifest (`https://host[:port]` or `https://*.domain`). */
export function originMatches(pattern: string, origin: string): boolean {
  let o: URL;
  try {
    o = new URL(origin);
  } catch {
    return false;
  }
  return patternMatchesUrl(pattern, o);
}

/** True when the manifest's requested capabilities (the upper bound) cover (origin, access). */
export function manifestAllowsFetch(manifest: ToolManifest, origin: string, access: 'read' | 'write'): boolean {
  let o: URL;
  try {
    o = new URL(origin);
  } catch {
    return false;
  }
  return manifestAllowsUrl(manifest, o, access);
}

/** manifestAllowsFetch for an already parsed request URL (its origin is the one judged). */
function manifestAllowsUrl(manifest: ToolManifest, url: URL, access: 'read' | 'write'): boolean {
  for (const r of manifest.capabilities?.fetch ?? []) {
    if ((r.access === '*' || r.access === access) && patternMatchesUrl(r.origin, url)) return true;
  }
  return false;
}

/**
 * The error for a call cancelled from outside: the reason's code when it is a TyError (E_TIMEOUT for a call timeout),
 * else E_ABORTED.
 */
function callAborted(signal: AbortSignal): TyError {
  const r: unknown = signal.reason;
  return r instanceof TyError
    ? new TyError(r.code, r.message.slice(0, 300))
    : new TyError('E_ABORTED', 'the call was cancelled');
}

function fail(
  code: 'E_FETCH_FAILED' | 'E_FETCH_SCHEME' | 'E_FETCH_CREDENTIALS' | 'E_FETCH_TARGET' | 'E_CAPABILITY_DENIED',
  message: string,
): never {
  throw new TyError(code, message);
}

const FETCH_REQUEST_KEYS = new Set(['url', 'method', 'headers', 'body']);
const METHOD_RE = /^[A-Za-z]{1,16}$/;

/**
 * FetchRequestSchema's parse for the plain shapes tool code sends, without zod's per-call cost: the same limits
 * (url at most 8192 characters, method letters only, at most 128 headers of [name <= 256, value <= 16384],
 * body at most 24 MiB of base64 text, no other member) and defaults (GET, no headers). Anything it does not
 * accept goes to the schema (protocol/wire.ts and zod load only then), which accepts or refuses it with its
 * message (zod's prettified issues); core/capabilities/fetch/mediated.test.ts checks the two agree. Exported for that
 * test.
 */
export async function parseFetchRequest(
  raw: unknown,
): Promise<{ success: true; data: FetchRequest } | { success: false; message: string }> {
  const plain = plainFetchRequest(raw);
  if (plain) return { success: true, data: plain };
  const [{ FetchRequestSchema }, { z }] = await Promise.all([import('../../../protocol/wire.js'), import('zod')]);
  const r = FetchRequestSchema.safeParse(raw);
  return r.success ? { success: true, data: r.data } : { success: false, message: z.prettifyError(r.error) };
}

/** The plain-shape parse of parseFetchRequest, or undefined for any other shape. */
function plainFetchRequest(raw: unknown): FetchRequest | undefined {
  // biome-ignore lint/suspicious/noConfusingLabels: one labelled block is the fast path's early exit
  fast: if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
    const o = raw as Record<string, unknown>;
    for (const k in o) if (!FETCH_REQUEST_KEYS.has(k)) break fast;
    const { url, method, headers, body } = o;
    if (typeof url !== 'string' || url.length > 8192) break fast;
    if (method !== undefined && (typeof method !== 'string' || !METHOD_RE.test(method))) break fast;
    if (body !== undefined && (typeof body !== 'string' || body.length > 24 * 1024 * 1024)) break fast;
    const out: [string, string][] = [];
    if (headers !== undefined) {
      if (!Array.isArray(headers) || headers.length > 128) break fast;
      for (const h of headers as unknown[]) {
        if (!Array.isArray(h) || h.length !== 2) break fast;
        const [n, v] = h as unknown[];
        if (typeof n !== 'string' || n.length > 256 || typeof v !== 'string' || v.length > 16384) break fast;
        out.push([n, v]);
      }
    }
    const data: FetchRequest = { url, method: (method as string | undefined) ?? 'GET', headers: out };
    if (body !== undefined) data.body = body as string;
    return data;
  }
  return undefined;
}

/**
 * The checks that come before authorization: parse, scheme, credentials, target. Exported for tests and the browser
 * host.
 */
export async function preflight(
  raw: unknown,
): Promise<{ req: FetchRequest; url: URL; origin: string; method: string; access: 'read' | 'write' }> {
  const parsed = await parseFetchRequest(raw);
  if (!parsed.success) fail('E_FETCH_FAILED', `invalid fetch request: ${parsed.message.slice(0, 300)}`);
  const req = parsed.data;
  let url: URL;
  try {
    url = new URL(req.url);
  } catch {
    fail('E_FETCH_TARGET', 'fetch needs an absolute https:// URL');
  }
  const verdict = judgeFetchUrl(url);
  if (!verdict.ok) fail(verdict.code, verdict.message);
  if (url.hash !== '') url.hash = ''; // (assigning re-serializes the URL: only when there is one)
  const method = req.method.toUpperCase();
  if (FORBIDDEN_METHODS.has(method)) fail('E_FETCH_FAILED', `the ${method} method is not allowed`);
  return { req, url, origin: url.origin, method, access: accessOf(method) };
}

/** Why the mediated fetch refuses a URL before any authorization, or ok. */
export type FetchUrlVerdict =
  | { ok: true }
  | { ok: false; code: 'E_FETCH_SCHEME' | 'E_FETCH_CREDENTIALS' | 'E_FETCH_TARGET'; message: string; host: string };

/**
 * The target rules of the mediated fetch, in the order it applies them: https only, no URL credentials, and the
 * host judged by judgeHostname (loopback, private, link-local, metadata, special-use and single-label names refused).
 * The one function both the fetch (preflight) and a host's add-time warning use (the chat app's Tools panel,
 * judgeFetchOrigin), so a warning and a refusal can never disagree. Pure; never throws.
 */
export function judgeFetchUrl(url: URL): FetchUrlVerdict {
  // what a warning names: the host, or for a URL without one (data:, file:) its first characters
  const host = url.hostname || url.href.slice(0, 60);
  if (url.protocol !== 'https:')
    return {
      ok: false,
      code: 'E_FETCH_SCHEME',
      message: `only https: URLs may be fetched (got ${url.protocol.slice(0, 16)})`,
      host,
    };
  if (url.username !== '' || url.password !== '')
    return {
      ok: false,
      code: 'E_FETCH_CREDENTIALS',
      message: 'URLs with credentials (user:password@) are refused; send credentials in a header',
      host,
    };
  const verdict = judgeHostname(host, { fromUrl: true });
  return verdict.ok
    ? { ok: true }
    : { ok: false, code: 'E_FETCH_TARGET', message: `refused target: ${verdict.message}`, host };
}

/**
 * judgeFetchUrl for a manifest's fetch origin (`https://host[:port]`, or a wildcard `https://*.domain`, judged by the
 * domain under the wildcard): the verdict every request to it would get. Text that is not a URL is E_FETCH_TARGET.
 */
export function judgeFetchOrigin(origin: string): FetchUrlVerdict {
  const wild = origin.startsWith('https://*.');
  let url: URL;
  try {
    url = new URL(wild ? `https://${origin.slice('https://*.'.length)}` : origin);
  } catch {
    return { ok: false, code: 'E_FETCH_TARGET', message: 'not an absolute URL', host: origin.slice(0, 80) };
  }
  return judgeFetchUrl(url);
}

/** Cheap structural check of a transport's answer (FetchResponseSchema's shape; the transport is host code). */
function isFetchResponse(r: unknown): r is FetchResponse {
  if (r === null || typeof r !== 'object') return false;
  const o = r as Record<string, unknown>;
  return (
    typeof o.status === 'number' &&
    Number.isInteger(o.status) &&
    o.status >= 100 &&
    o.status <= 999 &&
    typeof o.statusText === 'string' &&
    typeof o.body === 'string' &&
    typeof o.url === 'string' &&
    Array.isArray(o.headers) &&
    o.headers.every((h) => Array.isArray(h) && h.length === 2 && typeof h[0] === 'string' && typeof h[1] === 'string')
  );
}

function cleanHeaders(headers: [string, string][]): [string, string][] {
  const out: [string, string][] = [];
  for (const [name, value] of headers) {
    if (!TOKEN_RE.test(name)) fail('E_FETCH_FAILED', `invalid header name "${name.slice(0, 40)}"`);
    if (BAD_VALUE_RE.test(value)) fail('E_FETCH_FAILED', `header "${name}" has a line break or NUL in its value`);
    const lower = name.toLowerCase();
    if (HOST_OWNED_HEADERS.has(lower) || lower.startsWith('proxy-')) continue;
    out.push([name, value]);
  }
  return out;
}

/**
 * Build the one mediated fetch used by `ctx.fetch` and the sandbox's global `fetch`. Order: identity,
 * parse, https only, no URL credentials, target policy, access class, manifest upper bound, gate
 * (ask/decisions), secret placeholders for the authorized origin, transport with timeout + size cap + abort.
 */
export function createMediatedFetch(opts: MediatedFetchOptions): MediatedFetch {
  const limits: FetchLimits = { ...DEFAULT_FETCH_LIMITS, ...opts.limits };
  return async (identity, params, signal) => {
    // a. the exact revision identity, from the host's record.
    if (!identity || typeof identity.revision !== 'string' || identity.revision.length === 0 || !identity.manifest) {
      fail('E_CAPABILITY_DENIED', 'fetch needs a resolved tool revision');
    }
    if (signal.aborted) throw callAborted(signal);
    // b. scheme, credentials, target: before anyone is asked.
    const { req, url, origin, method, access } = await preflight(params);
    const headers = cleanHeaders(req.headers);
    // c + d. access class; the manifest is the upper bound; then the gate decides (rules, decisions, asking).
    if (!manifestAllowsUrl(identity.manifest, url, access)) {
      await refuseUndeclared(
        opts.gate,
        {
          principal: identity.principal,
          kind: 'fetch',
          toolName: identity.name,
          revision: identity.revision,
          target: origin,
          access,
        },
        `${identity.name} does not declare fetch(${access}:${origin}) in its manifest`,
        signal,
      );
    }
    await opts.gate.authorize(
      // the question shows the request line (the gate withholds known secret values from it)
      {
        principal: identity.principal,
        kind: 'fetch',
        toolName: identity.name,
        revision: identity.revision,
        target: origin,
        access,
        requested: true,
        preview: `${method} ${url.href}`,
      },
      signal,
    );
    // Secrets only after authorization, only for this origin.
    const hasPlaceholder = headers.some(([, v]) => v.includes('{{secret:'));
    let finalHeaders = headers;
    /** The secret values filled into this request's headers: withheld from a transport error that echoes one. */
    const filled: string[] = [];
    if (hasPlaceholder) {
      if (!opts.secrets) throw new TyError('E_SECRET_DENIED', 'secret placeholders are not available on this host');
      finalHeaders = await opts.secrets.substitute(identity, origin, headers, filled);
    }
    // e. the request. The transport gets the call's own signal and enforces limits.timeoutMs itself (its
    // contract); this timer and the abort listener end the wait even if the transport ignored both.
    let timedOut = false;
    const treq: TransportRequest = { url: url.href, method, headers: finalHeaders };
    if (req.body !== undefined && method !== 'GET' && method !== 'HEAD') treq.body = req.body;
    try {
      const res = await new Promise<unknown>((resolve, reject) => {
        const onAbort = (): void => {
          clearTimeout(timer);
          reject(callAborted(signal));
        };
        const timer = setTimeout(() => {
          signal.removeEventListener('abort', onAbort);
          timedOut = true;
          reject(new TyError('E_TIMEOUT', `fetch to ${origin} took longer than ${limits.timeoutMs} ms`));
        }, limits.timeoutMs);
        signal.addEventListener('abort', onAbort, { once: true });
        const settle = (): void => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
        };
        opts.transport.request(treq, limits, signal).then(
          (v) => (settle(), resolve(v)),
          (e: unknown) => (settle(), reject(e)),
        );
      });
      if (!isFetchResponse(res)) throw new TyError('E_FETCH_FAILED', 'the transport returned a malformed response');
      return res;
    } catch (e) {
      if (timedOut) throw new TyError('E_TIMEOUT', `fetch to ${origin} took longer than ${limits.timeoutMs} ms`);
      if (signal.aborted) throw callAborted(signal);
      const te = toTyError(e, 'E_FETCH_FAILED');
      // Keep the code and a short message; never a stack. The message is the network library's text, which may
      // echo the request (a header value): the secret values filled into it are withheld there, as whole tokens,
      // before it is cut (so a cut never leaves part of one).
      throw new TyError(te.code, withholdTokens(te.message, filled).slice(0, 500));
    }
  };
}
