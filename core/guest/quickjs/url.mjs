// Web URL for engines without it (QuickJS): URL (parsed by the sandbox host's own WHATWG URL parser, so it parses
// exactly as the node engine does) and URLSearchParams; runs INSIDE the sandbox (untrusted side), before tool code.
// Constraints: plain JavaScript, no imports, one export (core/quickjs/guest-script.ts concatenates the guest files).
// URLSearchParams follows the WHATWG URL Standard §6 and application/x-www-form-urlencoded (§5).

/**
 * Define URL and URLSearchParams on `G`.
 * @param {object} G the global object (TextDecoder already defined: core/guest/web/encoding.mjs)
 * @param {{ url(op: string, a: string, b?: string, c?: string): string }} host the sandbox host's URL parser:
 *   `url('parse', input, base?)` and `url('set', href, component, value)` answer the parsed URL's components as JSON
 *   text (`{href, origin, protocol, username, password, host, hostname, port, pathname, search, hash}`), or '' when
 *   the input does not parse.
 */
export function installUrl(G, host) {
  'use strict';
  const ObjectDefineProperty = Object.defineProperty;
  const JSONParse = JSON.parse;
  const TypeErrorCtor = TypeError;
  const StringCtor = String;
  const hostUrl = host.url;
  const TextDecoderCtor = G.TextDecoder;
  const TextEncoderCtor = G.TextEncoder;
  const define = (o, name, value) =>
    ObjectDefineProperty(o, name, { value, writable: true, configurable: true, enumerable: false });
  const SymbolIterator = Symbol.iterator;

  function invalidUrl(input) {
    const e = new TypeErrorCtor('Invalid URL');
    ObjectDefineProperty(e, 'code', { value: 'ERR_INVALID_URL', writable: true, configurable: true });
    ObjectDefineProperty(e, 'input', { value: input, writable: true, configurable: true, enumerable: true });
    return e;
  }
  /** Components of `input` parsed against `base`, or undefined. */
  function parse(input, base) {
    const text = base === undefined ? hostUrl('parse', input) : hostUrl('parse', input, base);
    return typeof text === 'string' && text !== '' ? JSONParse(text) : undefined;
  }

  // ---- application/x-www-form-urlencoded (URL §5) ---------------------------------------------------------------
  const encoder = new TextEncoderCtor();
  const decoder = new TextDecoderCtor();
  const HEX = '0123456789ABCDEF';
  function formEncode(s) {
    const bytes = encoder.encode(s);
    let out = '';
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i];
      if (
        (b >= 0x30 && b <= 0x39) ||
        (b >= 0x41 && b <= 0x5a) ||
        (b >= 0x61 && b <= 0x7a) ||
        b === 0x2a ||
        b === 0x2d ||
        b === 0x2e ||
        b === 0x5f
      )
        out += StringCtor.fromCharCode(b);
      else if (b === 0x20) out += '+';
      else out += `%${HEX[b >> 4]}${HEX[b & 15]}`;
    }
    return out;
  }
  function hexValue(c) {
    if (c >= 0x30 && c <= 0x39) return c - 0x30;
    if (c >= 0x41 && c <= 0x46) return c - 0x37;
    if (c >= 0x61 && c <= 0x66) return c - 0x57;
    return -1;
  }
  /** Percent-decode (URL §1.3) a string's UTF-8 bytes, then UTF-8 decode without BOM, U+FFFD for invalid bytes. */
  function percentDecode(s) {
    const bytes = encoder.encode(s);
    const out = new Uint8Array(bytes.length);
    let n = 0;
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i];
      if (b === 0x25 && i + 2 < bytes.length) {
        const h = hexValue(bytes[i + 1]);
        const l = hexValue(bytes[i + 2]);
        if (h >= 0 && l >= 0) {
          out[n++] = (h << 4) | l;
          i += 2;
          continue;
        }
      }
      out[n++] = b;
    }
    return decoder.decode(out.subarray(0, n));
  }
  function formParse(input) {
    const list = [];
    if (input === '') return list;
    for (const seq of input.split('&')) {
      if (seq === '') continue;
      const at = seq.indexOf('=');
      const name = at === -1 ? seq : seq.slice(0, at);
      const value = at === -1 ? '' : seq.slice(at + 1);
      list.push([percentDecode(name.replace(/\+/g, ' ')), percentDecode(value.replace(/\+/g, ' '))]);
    }
    return list;
  }
  /** USVString conversion (WebIDL): lone surrogates become U+FFFD. */
  function usv(v) {
    const s = `${v}`;
    return /[\uD800-\uDFFF]/.test(s) ? decoder.decode(encoder.encode(s)) : s;
  }

  // ---- URLSearchParams (URL §6.2) --------------------------------------------------------------------------------
  const paramsState = new WeakMap(); // params -> { list, url }
  const ps = (p) => {
    const s = paramsState.get(p);
    if (s === undefined) throw new TypeErrorCtor('Value of "this" must be of type URLSearchParams');
    return s;
  };
  function updateUrl(s) {
    if (s.url === undefined) return;
    const q = s.list.map(([k, v]) => `${formEncode(k)}=${formEncode(v)}`).join('&');
    setComponent(s.url, 'search', q, true);
  }
  class URLSearchParams {
    constructor(init = undefined) {
      const s = { list: [], url: undefined };
      paramsState.set(this, s);
      if (init === undefined || init === null) return;
      if (typeof init === 'object' || typeof init === 'function') {
        const iter = init[SymbolIterator];
        if (iter !== undefined && iter !== null) {
          if (typeof iter !== 'function') throw new TypeErrorCtor('Query pairs must be iterable');
          for (const pair of init) {
            const p = [];
            for (const x of pair) p.push(x);
            if (p.length !== 2) throw new TypeErrorCtor('Each query pair must be an iterable [name, value] tuple');
            s.list.push([usv(p[0]), usv(p[1])]);
          }
        } else {
          for (const k of Reflect.ownKeys(init)) {
            if (typeof k !== 'string') continue;
            const d = Reflect.getOwnPropertyDescriptor(init, k);
            if (d === undefined || !d.enumerable) continue;
            s.list.push([usv(k), usv(init[k])]);
          }
        }
        return;
      }
      let q = usv(init);
      if (q.startsWith('?')) q = q.slice(1);
      s.list = formParse(q);
    }
    get size() {
      return ps(this).list.length;
    }
    append(name, value) {
      const s = ps(this);
      s.list.push([usv(name), usv(value)]);
      updateUrl(s);
    }
    delete(name, value = undefined) {
      const s = ps(this);
      const n = usv(name);
      const v = value === undefined ? undefined : usv(value);
      s.list = s.list.filter(([k, x]) => !(k === n && (v === undefined || x === v)));
      updateUrl(s);
    }
    get(name) {
      const n = usv(name);
      for (const [k, v] of ps(this).list) if (k === n) return v;
      return null;
    }
    getAll(name) {
      const n = usv(name);
      const out = [];
      for (const [k, v] of ps(this).list) if (k === n) out.push(v);
      return out;
    }
    has(name, value = undefined) {
      const n = usv(name);
      const v = value === undefined ? undefined : usv(value);
      for (const [k, x] of ps(this).list) if (k === n && (v === undefined || x === v)) return true;
      return false;
    }
    set(name, value) {
      const s = ps(this);
      const n = usv(name);
      const v = usv(value);
      const out = [];
      let done = false;
      for (const pair of s.list) {
        if (pair[0] !== n) out.push(pair);
        else if (!done) {
          out.push([n, v]);
          done = true;
        }
      }
      if (!done) out.push([n, v]);
      s.list = out;
      updateUrl(s);
    }
    sort() {
      const s = ps(this);
      // stable sort by code units of the names
      s.list = s.list
        .map((p, i) => [p, i])
        .sort((a, b) => (a[0][0] < b[0][0] ? -1 : a[0][0] > b[0][0] ? 1 : a[1] - b[1]))
        .map((x) => x[0]);
      updateUrl(s);
    }
    forEach(callback, thisArg = undefined) {
      if (typeof callback !== 'function') throw new TypeErrorCtor('The "callback" argument must be of type function');
      const s = ps(this);
      for (let i = 0; i < s.list.length; i++) {
        const [k, v] = s.list[i];
        Reflect.apply(callback, thisArg, [v, k, this]);
      }
    }
    *keys() {
      const s = ps(this);
      for (let i = 0; i < s.list.length; i++) yield s.list[i][0];
    }
    *values() {
      const s = ps(this);
      for (let i = 0; i < s.list.length; i++) yield s.list[i][1];
    }
    *entries() {
      const s = ps(this);
      for (let i = 0; i < s.list.length; i++) yield [s.list[i][0], s.list[i][1]];
    }
    [SymbolIterator]() {
      return this.entries();
    }
    toString() {
      return ps(this)
        .list.map(([k, v]) => `${formEncode(k)}=${formEncode(v)}`)
        .join('&');
    }
    get [Symbol.toStringTag]() {
      return 'URLSearchParams';
    }
  }

  // ---- URL (URL §6.1) --------------------------------------------------------------------------------------------
  const urls = new WeakMap(); // url -> { c: components, params }
  const us = (u) => {
    const s = urls.get(u);
    if (s === undefined) throw new TypeErrorCtor('Value of "this" must be of type URL');
    return s;
  };
  function setComponent(u, name, value, fromParams = false) {
    const s = us(u);
    const text = hostUrl('set', s.c.href, name, usv(value));
    if (typeof text !== 'string' || text === '') {
      if (name === 'href') throw invalidUrl(usv(value));
      return;
    }
    s.c = JSONParse(text);
    if (!fromParams && s.params !== undefined) {
      const p = paramsState.get(s.params);
      p.list = formParse(s.c.search.startsWith('?') ? s.c.search.slice(1) : s.c.search);
    }
  }
  class URL {
    constructor(input, base = undefined) {
      // biome-ignore lint/complexity/noArguments: Web IDL tells a missing argument from undefined
      if (arguments.length === 0) {
        const e = new TypeErrorCtor('The "url" argument must be specified');
        ObjectDefineProperty(e, 'code', { value: 'ERR_MISSING_ARGS', writable: true, configurable: true });
        throw e;
      }
      const text = usv(input);
      const c = parse(text, base === undefined ? undefined : usv(base));
      if (c === undefined) throw invalidUrl(text);
      urls.set(this, { c, params: undefined });
    }
    static canParse(input, base = undefined) {
      return parse(usv(input), base === undefined ? undefined : usv(base)) !== undefined;
    }
    get href() {
      return us(this).c.href;
    }
    set href(v) {
      setComponent(this, 'href', v);
    }
    get origin() {
      return us(this).c.origin;
    }
    get protocol() {
      return us(this).c.protocol;
    }
    set protocol(v) {
      setComponent(this, 'protocol', v);
    }
    get username() {
      return us(this).c.username;
    }
    set username(v) {
      setComponent(this, 'username', v);
    }
    get password() {
      return us(this).c.password;
    }
    set password(v) {
      setComponent(this, 'password', v);
    }
    get host() {
      return us(this).c.host;
    }
    set host(v) {
      setComponent(this, 'host', v);
    }
    get hostname() {
      return us(this).c.hostname;
    }
    set hostname(v) {
      setComponent(this, 'hostname', v);
    }
    get port() {
      return us(this).c.port;
    }
    set port(v) {
      setComponent(this, 'port', v);
    }
    get pathname() {
      return us(this).c.pathname;
    }
    set pathname(v) {
      setComponent(this, 'pathname', v);
    }
    get search() {
      return us(this).c.search;
    }
    set search(v) {
      setComponent(this, 'search', v);
    }
    get searchParams() {
      const s = us(this);
      if (s.params === undefined) {
        const q = s.c.search;
        s.params = new URLSearchParams(q.startsWith('?') ? q.slice(1) : q);
        paramsState.get(s.params).url = this;
      }
      return s.params;
    }
    get hash() {
      return us(this).c.hash;
    }
    set hash(v) {
      setComponent(this, 'hash', v);
    }
    toString() {
      return us(this).c.href;
    }
    toJSON() {
      return us(this).c.href;
    }
    get [Symbol.toStringTag]() {
      return 'URL';
    }
  }
  for (const k of [
    'href',
    'origin',
    'protocol',
    'username',
    'password',
    'host',
    'hostname',
    'port',
    'pathname',
    'search',
    'searchParams',
    'hash',
  ]) {
    const d = Reflect.getOwnPropertyDescriptor(URL.prototype, k);
    d.enumerable = true;
    ObjectDefineProperty(URL.prototype, k, d);
  }

  define(G, 'URL', URL);
  define(G, 'URLSearchParams', URLSearchParams);
}
