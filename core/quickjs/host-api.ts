// The answers the QuickJS guest asks its host for (URL parsing, Intl, random bytes), computed with the host
// engine's own built-ins; runs in the QuickJS sandbox host (the CLI's sandbox host process, the browser's sandbox
// worker), sandbox side, outside every QuickJS instance.
// Only strings and numbers cross: a value the guest sends is never trusted to be of any shape beyond what is checked
// here, and nothing but JSON text goes back (no host object, no stack, no path).

/** The components of a parsed URL, as core/guest/web/url.mjs keeps them. */
export interface UrlComponents {
  href: string;
  origin: string;
  protocol: string;
  username: string;
  password: string;
  host: string;
  hostname: string;
  port: string;
  pathname: string;
  search: string;
  hash: string;
}

function components(u: URL): string {
  const c: UrlComponents = {
    href: u.href,
    origin: u.origin,
    protocol: u.protocol,
    username: u.username,
    password: u.password,
    host: u.host,
    hostname: u.hostname,
    port: u.port,
    pathname: u.pathname,
    search: u.search,
    hash: u.hash,
  };
  return JSON.stringify(c);
}

const URL_SETTERS = new Set([
  'href',
  'protocol',
  'username',
  'password',
  'host',
  'hostname',
  'port',
  'pathname',
  'search',
  'hash',
]);
/** Longest URL text the guest may hand over, UTF-16 code units (8 MiB: far above any real URL). */
export const MAX_URL_TEXT = 8 * 1024 * 1024;

/**
 * The guest's URL parser (core/guest/web/url.mjs): WHATWG URL parsing by this engine's own `URL`.
 * - `urlCall('parse', input, base?)`: the components of `new URL(input, base)` as JSON text, '' when it throws;
 * - `urlCall('set', href, component, value)`: the components after `url[component] = value` ('' when `href` does not
 *   parse or, for `href`, the new value does not);
 * anything else (an unknown op or component, a non-string, text over MAX_URL_TEXT) answers ''.
 */
export function urlCall(op: unknown, a: unknown, b?: unknown, c?: unknown): string {
  if (typeof a !== 'string' || a.length > MAX_URL_TEXT) return '';
  try {
    if (op === 'parse') {
      if (b !== undefined && (typeof b !== 'string' || b.length > MAX_URL_TEXT)) return '';
      return components(b === undefined ? new URL(a) : new URL(a, b));
    }
    if (
      op === 'set' &&
      typeof b === 'string' &&
      URL_SETTERS.has(b) &&
      typeof c === 'string' &&
      c.length <= MAX_URL_TEXT
    ) {
      const u = new URL(a);
      (u as unknown as Record<string, string>)[b] = c;
      return components(u);
    }
  } catch {
    /* does not parse */
  }
  return '';
}

type IntlKind =
  | 'Collator'
  | 'NumberFormat'
  | 'DateTimeFormat'
  | 'PluralRules'
  | 'RelativeTimeFormat'
  | 'ListFormat'
  | 'DisplayNames'
  | 'Segmenter';
const INTL_KINDS = new Set<string>([
  'Collator',
  'NumberFormat',
  'DateTimeFormat',
  'PluralRules',
  'RelativeTimeFormat',
  'ListFormat',
  'DisplayNames',
  'Segmenter',
]);
/** The methods the guest may call per kind (`Intl` and the built-in prototypes included); anything else is refused. */
const METHODS: Record<string, ReadonlySet<string>> = {
  Collator: new Set(['resolvedOptions', 'supportedLocalesOf', 'compare']),
  NumberFormat: new Set([
    'resolvedOptions',
    'supportedLocalesOf',
    'format',
    'formatToParts',
    'formatRange',
    'formatRangeToParts',
  ]),
  DateTimeFormat: new Set([
    'resolvedOptions',
    'supportedLocalesOf',
    'format',
    'formatToParts',
    'formatRange',
    'formatRangeToParts',
  ]),
  PluralRules: new Set(['resolvedOptions', 'supportedLocalesOf', 'select', 'selectRange']),
  RelativeTimeFormat: new Set(['resolvedOptions', 'supportedLocalesOf', 'format', 'formatToParts']),
  ListFormat: new Set(['resolvedOptions', 'supportedLocalesOf', 'format', 'formatToParts']),
  DisplayNames: new Set(['resolvedOptions', 'supportedLocalesOf', 'of']),
  Segmenter: new Set(['resolvedOptions', 'supportedLocalesOf', 'segment']),
  Intl: new Set(['getCanonicalLocales', 'supportedValuesOf']),
  Date: new Set(['toLocaleString', 'toLocaleDateString', 'toLocaleTimeString', 'toString', 'toTimeString']),
  Number: new Set(['toLocaleString']),
  String: new Set(['localeCompare', 'toLocaleUpperCase', 'toLocaleLowerCase']),
};
/** Longest Intl request the guest may send, characters (a Segmenter input of 16 MiB plus its envelope). */
export const MAX_INTL_REQUEST = 16 * 1024 * 1024 + 4096;
const CACHE_MAX = 64;

/** A number argument as the guest encodes it (core/guest/web/intl.mjs numberArg): a finite number or a tagged text. */
function numberOf(v: unknown): number | bigint | string {
  if (typeof v === 'number') return v;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (typeof o.bigint === 'string' && /^-?\d{1,4000}$/.test(o.bigint)) return BigInt(o.bigint);
    if (typeof o.string === 'string') return o.string;
    if (o.number === 'NaN') return Number.NaN;
    if (o.number === 'Infinity') return Number.POSITIVE_INFINITY;
    if (o.number === '-Infinity') return Number.NEGATIVE_INFINITY;
  }
  throw new TypeError('invalid number argument');
}
function dateOf(v: unknown): number {
  if (typeof v === 'number') return v;
  if (v === 'NaN') return Number.NaN;
  throw new TypeError('invalid date argument');
}
function stringOf(v: unknown): string {
  if (typeof v !== 'string') throw new TypeError('invalid string argument');
  return v;
}

/**
 * Per-instance cache of Intl objects by their constructor arguments: building a formatter costs far more than
 * using it, and tools format in loops.
 */
export class IntlBridge {
  #cache = new Map<string, object>();

  #get(kind: IntlKind, locales: unknown, options: unknown): object {
    const key = `${kind}\u0000${JSON.stringify(locales)}\u0000${JSON.stringify(options)}`;
    let o = this.#cache.get(key);
    if (o === undefined) {
      const Ctor = (Intl as unknown as Record<string, new (l?: unknown, o?: unknown) => object>)[kind]!;
      o = new Ctor(locales ?? undefined, options ?? undefined);
      if (this.#cache.size >= CACHE_MAX) this.#cache.delete(this.#cache.keys().next().value as string);
      this.#cache.set(key, o);
    }
    return o;
  }

  /**
   * Answer one guest request `[kind, locales, options, method, args]` (JSON text) with `{"v": value}` or, when the
   * host's Intl throws or the request is malformed, `{"e": [name, message]}` (name one of RangeError, TypeError,
   * SyntaxError, Error). Never throws.
   */
  call(request: unknown): string {
    try {
      if (typeof request !== 'string' || request.length > MAX_INTL_REQUEST) throw new TypeError('invalid Intl request');
      const r: unknown = JSON.parse(request);
      if (!Array.isArray(r) || r.length !== 5) throw new TypeError('invalid Intl request');
      const [kind, locales, options, method, args] = r as [unknown, unknown, unknown, unknown, unknown];
      if (typeof kind !== 'string' || typeof method !== 'string' || !Array.isArray(args))
        throw new TypeError('invalid Intl request');
      if (!METHODS[kind]?.has(method)) throw new TypeError(`Intl.${kind}.${method} is not available`);
      return JSON.stringify({ v: this.#run(kind, locales, options, method, args) });
    } catch (e) {
      const name =
        e instanceof RangeError
          ? 'RangeError'
          : e instanceof TypeError
            ? 'TypeError'
            : e instanceof SyntaxError
              ? 'SyntaxError'
              : 'Error';
      const message = e instanceof Error ? e.message.slice(0, 1000) : 'Intl failed';
      return JSON.stringify({ e: [name, message] });
    }
  }

  #run(kind: string, locales: unknown, options: unknown, method: string, args: unknown[]): unknown {
    const l = (locales ?? undefined) as string | string[] | undefined;
    const o = (options ?? undefined) as Record<string, unknown> | undefined;
    switch (kind) {
      case 'Intl':
        if (method === 'getCanonicalLocales') return Intl.getCanonicalLocales(l);
        return (Intl as unknown as { supportedValuesOf(k: string): string[] }).supportedValuesOf(stringOf(args[0]));
      case 'Date': {
        const d = new Date(dateOf(args[0]));
        if (method === 'toString') return d.toString();
        if (method === 'toTimeString') return d.toTimeString();
        return (d as unknown as Record<string, (l?: unknown, o?: unknown) => string>)[method]!(l, o);
      }
      case 'Number': {
        const n = numberOf(args[0]);
        return typeof n === 'string'
          ? Number(n).toLocaleString(l, o as Intl.NumberFormatOptions)
          : (n as number).toLocaleString(l, o as Intl.NumberFormatOptions);
      }
      case 'String': {
        const s = stringOf(args[0]);
        if (method === 'localeCompare') return s.localeCompare(stringOf(args[1]), l, o as Intl.CollatorOptions);
        return method === 'toLocaleUpperCase' ? s.toLocaleUpperCase(l) : s.toLocaleLowerCase(l);
      }
    }
    if (!INTL_KINDS.has(kind)) throw new TypeError('invalid Intl request');
    if (method === 'supportedLocalesOf') {
      const C = (Intl as unknown as Record<string, { supportedLocalesOf(l: unknown, o: unknown): string[] }>)[kind]!;
      return C.supportedLocalesOf(l, o);
    }
    const obj = this.#get(kind as IntlKind, l, o) as Record<string, (...a: unknown[]) => unknown>;
    if (method === 'resolvedOptions') return obj.resolvedOptions!();
    switch (kind) {
      case 'Collator':
        return obj.compare!(stringOf(args[0]), stringOf(args[1]));
      case 'NumberFormat':
      case 'PluralRules':
        return obj[method]!(...args.map(numberOf));
      case 'DateTimeFormat':
        return obj[method]!(...args.map(dateOf));
      case 'RelativeTimeFormat':
        return obj[method]!(Number(args[0]), stringOf(args[1]));
      case 'ListFormat':
        if (!Array.isArray(args[0])) throw new TypeError('invalid list');
        return obj[method]!((args[0] as unknown[]).map(stringOf));
      case 'DisplayNames':
        return obj.of!(stringOf(args[0]));
      case 'Segmenter': {
        const out: [string, number, number?][] = [];
        const word = (obj.resolvedOptions!() as { granularity: string }).granularity === 'word';
        for (const s of obj.segment!(stringOf(args[0])) as Iterable<Intl.SegmentData>)
          out.push(word ? [s.segment, s.index, s.isWordLike ? 1 : 0] : [s.segment, s.index]);
        return out;
      }
    }
    throw new TypeError('invalid Intl request');
  }
}

/** Longest text whose JSON.parse error message the guest may ask for, UTF-16 code units. */
export const MAX_JSON_TEXT = 64 * 1024 * 1024;
/**
 * The message this engine's JSON.parse gives for `text` ('' when it parses, or for anything but a string up to
 * MAX_JSON_TEXT): the guest throws it in place of QuickJS's own, so a tool parsing bad JSON fails with the words it
 * fails with on the node engine (and in a browser's worker).
 */
export function jsonParseError(text: unknown): string {
  if (typeof text !== 'string' || text.length > MAX_JSON_TEXT) return '';
  try {
    JSON.parse(text);
    return '';
  } catch (e) {
    return e instanceof SyntaxError ? e.message.slice(0, 1000) : '';
  }
}

/**
 * `n` bytes (1-65536) from this engine's CSPRNG (WebCrypto getRandomValues) as a string of `n` characters
 * U+0000-U+00FF; '' for any other `n`.
 */
export function randomBytes(n: unknown): string {
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 65536) return '';
  const b = crypto.getRandomValues(new Uint8Array(n));
  let s = '';
  for (let i = 0; i < n; i += 0x2000) s += String.fromCharCode(...b.subarray(i, i + 0x2000));
  return s;
}
