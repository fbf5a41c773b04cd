// Fetch classes for engines without them (QuickJS): Headers, Request, Response, Blob and File, with bodies held in
// memory; runs INSIDE the sandbox (untrusted side), before tool code. core/guest/core.mjs builds its mediated `fetch`
// on these, as it does on the node engine's (undici's) classes.
// Constraints: plain JavaScript, no imports, one export (core/quickjs/guest-script.ts concatenates the guest files).
// Behaviour follows the WHATWG Fetch Standard (§5 Fetch API: Headers, Body mixin, Request, Response) with undici's
// (Node's) messages, so a tool sees the same values and errors on the quickjs and node engines. Not provided: streams
// (a body's `body` is a small reader over the buffered bytes, not a ReadableStream), FormData.

/**
 * Define Headers, Request, Response, Blob and File on `G`.
 * @param {object} G the global object (URL, URLSearchParams, TextEncoder, TextDecoder and AbortSignal already
 *   defined: core/guest/web/*.mjs)
 */
export function installFetchClasses(G) {
  'use strict';
  const ObjectDefineProperty = Object.defineProperty;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const Uint8ArrayCtor = Uint8Array;
  const ArrayBufferCtor = ArrayBuffer;
  const ArrayBufferIsView = ArrayBuffer.isView;
  const PromiseCtor = Promise;
  const JSONParse = JSON.parse;
  const JSONStringify = JSON.stringify;
  const URLCtor = G.URL;
  const URLSearchParamsCtor = G.URLSearchParams;
  const AbortSignalCtor = G.AbortSignal;
  const encoder = new G.TextEncoder();
  const decoder = new G.TextDecoder();
  const SymbolIterator = Symbol.iterator;
  const define = (o, name, value) =>
    ObjectDefineProperty(o, name, { value, writable: true, configurable: true, enumerable: false });

  // ---- bytes --------------------------------------------------------------------------------------------------
  /** A copy of a BufferSource's bytes. */
  function copyBytes(v) {
    if (v instanceof ArrayBufferCtor) return new Uint8ArrayCtor(v.slice(0));
    return new Uint8ArrayCtor(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
  }
  function concat(chunks) {
    let n = 0;
    for (const c of chunks) n += c.length;
    const out = new Uint8ArrayCtor(n);
    let at = 0;
    for (const c of chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }

  // ---- Blob and File (File API §3, §4) ------------------------------------------------------------------------------
  const blobs = new WeakMap(); // blob -> { bytes, type }
  function blobBytes(b) {
    return blobs.get(b)?.bytes;
  }
  class Blob {
    constructor(parts = [], options = undefined) {
      const chunks = [];
      if (parts !== null && typeof parts === 'object' && typeof parts[SymbolIterator] === 'function') {
        for (const p of parts) {
          if (p instanceof Blob) chunks.push(blobBytes(p));
          else if (p instanceof ArrayBufferCtor || ArrayBufferIsView(p)) chunks.push(copyBytes(p));
          else chunks.push(encoder.encode(`${p}`));
        }
      } else if (parts !== undefined) {
        throw new TypeErrorCtor('The "sources" argument must be a sequence.');
      }
      let type = options?.type === undefined ? '' : `${options.type}`;
      type = /^[\x20-\x7e]*$/.test(type) ? type.toLowerCase() : '';
      blobs.set(this, { bytes: concat(chunks), type });
    }
    get size() {
      return blobs.get(this).bytes.length;
    }
    get type() {
      return blobs.get(this).type;
    }
    slice(start = 0, end = undefined, contentType = '') {
      const bytes = blobs.get(this).bytes;
      const n = bytes.length;
      const rel = (x, d) => {
        if (x === undefined) return d;
        const v = Math.trunc(Number(x)) || 0;
        return v < 0 ? Math.max(n + v, 0) : Math.min(v, n);
      };
      const a = rel(start, 0);
      const b = rel(end, n);
      const out = new Blob([], { type: contentType });
      blobs.get(out).bytes = bytes.slice(a, Math.max(a, b));
      return out;
    }
    text() {
      return PromiseCtor.resolve(decoder.decode(blobs.get(this).bytes));
    }
    arrayBuffer() {
      return PromiseCtor.resolve(blobs.get(this).bytes.slice(0).buffer);
    }
    bytes() {
      return PromiseCtor.resolve(blobs.get(this).bytes.slice(0));
    }
    stream() {
      return bodyReader(blobs.get(this).bytes.slice(0), () => {});
    }
    get [Symbol.toStringTag]() {
      return 'Blob';
    }
  }
  class File extends Blob {
    #name;
    #lastModified;
    constructor(parts, name, options = undefined) {
      // biome-ignore lint/complexity/noArguments: Web IDL tells a missing argument from undefined
      if (arguments.length < 2) throw new TypeErrorCtor('The "fileBits" and "fileName" arguments must be specified');
      super(parts, options);
      this.#name = `${name}`;
      this.#lastModified = options?.lastModified === undefined ? Date.now() : Number(options.lastModified);
    }
    get name() {
      return this.#name;
    }
    get lastModified() {
      return this.#lastModified;
    }
    get [Symbol.toStringTag]() {
      return 'File';
    }
  }

  // ---- Headers (Fetch §5.2) -----------------------------------------------------------------------------------------
  const TOKEN_RE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
  const headers = new WeakMap(); // headers -> { list: [[lowerName, value]], guard }
  function hs(h) {
    const s = headers.get(h);
    if (s === undefined) throw new TypeErrorCtor('Illegal invocation');
    return s;
  }
  function normalizeValue(v) {
    return `${v}`.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '');
  }
  function checkHeader(method, name, value) {
    if (!TOKEN_RE.test(name)) throw new TypeErrorCtor(`Headers.${method}: "${name}" is an invalid header name.`);
    if (/[\0\r\n]/.test(value)) throw new TypeErrorCtor(`Headers.${method}: "${value}" is an invalid header value.`);
  }
  function headersAppend(s, name, value, method = 'append') {
    const n = `${name}`;
    const v = normalizeValue(value);
    checkHeader(method, n, v);
    if (s.guard === 'immutable') throw new TypeErrorCtor('Headers are immutable');
    s.list.push([n.toLowerCase(), v]);
  }
  function fillHeaders(s, init) {
    if (init === undefined || init === null) return;
    if (init instanceof Headers) {
      for (const [k, v] of hs(init).list) s.list.push([k, v]);
      return;
    }
    if (typeof init !== 'object' && typeof init !== 'function')
      throw new TypeErrorCtor("Headers constructor: Expected init to be an object, or 'null'.");
    if (typeof init[SymbolIterator] === 'function') {
      for (const pair of init) {
        if (typeof pair === 'string' || pair === null || typeof pair[SymbolIterator] !== 'function')
          throw new TypeErrorCtor('Headers constructor: expected name/value pair to be length 2, found 1.');
        const p = [];
        for (const x of pair) p.push(x);
        if (p.length !== 2)
          throw new TypeErrorCtor(`Headers constructor: expected name/value pair to be length 2, found ${p.length}.`);
        headersAppend(s, p[0], p[1]);
      }
      return;
    }
    for (const k of Reflect.ownKeys(init)) {
      const d = Reflect.getOwnPropertyDescriptor(init, k);
      if (d === undefined || !d.enumerable) continue;
      if (typeof k === 'symbol') throw new TypeErrorCtor('Headers constructor: Key Symbol() in init is a symbol.');
      headersAppend(s, k, init[k]);
    }
  }
  /** The header list sorted and combined (Fetch §2.2.2 "sort and combine"); set-cookie values stay apart. */
  function sortedEntries(s) {
    const names = [];
    for (const [k] of s.list) if (!names.includes(k)) names.push(k);
    names.sort();
    const out = [];
    for (const n of names) {
      if (n === 'set-cookie') {
        for (const [k, v] of s.list) if (k === n) out.push([n, v]);
      } else {
        const vals = [];
        for (const [k, v] of s.list) if (k === n) vals.push(v);
        out.push([n, vals.join(', ')]);
      }
    }
    return out;
  }
  class Headers {
    constructor(init = undefined) {
      const s = { list: [], guard: 'none' };
      headers.set(this, s);
      fillHeaders(s, init);
    }
    append(name, value) {
      headersAppend(hs(this), name, value);
    }
    delete(name) {
      const s = hs(this);
      const n = `${name}`;
      if (!TOKEN_RE.test(n)) throw new TypeErrorCtor(`Headers.delete: "${n}" is an invalid header name.`);
      if (s.guard === 'immutable') throw new TypeErrorCtor('Headers are immutable');
      const l = n.toLowerCase();
      s.list = s.list.filter(([k]) => k !== l);
    }
    get(name) {
      const n = `${name}`;
      if (!TOKEN_RE.test(n)) throw new TypeErrorCtor(`Headers.get: "${n}" is an invalid header name.`);
      const l = n.toLowerCase();
      const vals = [];
      for (const [k, v] of hs(this).list) if (k === l) vals.push(v);
      return vals.length === 0 ? null : vals.join(', ');
    }
    getSetCookie() {
      const out = [];
      for (const [k, v] of hs(this).list) if (k === 'set-cookie') out.push(v);
      return out;
    }
    has(name) {
      const n = `${name}`;
      if (!TOKEN_RE.test(n)) throw new TypeErrorCtor(`Headers.has: "${n}" is an invalid header name.`);
      const l = n.toLowerCase();
      for (const [k] of hs(this).list) if (k === l) return true;
      return false;
    }
    set(name, value) {
      const s = hs(this);
      const n = `${name}`;
      const v = normalizeValue(value);
      checkHeader('set', n, v);
      if (s.guard === 'immutable') throw new TypeErrorCtor('Headers are immutable');
      const l = n.toLowerCase();
      let done = false;
      const out = [];
      for (const pair of s.list) {
        if (pair[0] !== l) out.push(pair);
        else if (!done) {
          out.push([l, v]);
          done = true;
        }
      }
      if (!done) out.push([l, v]);
      s.list = out;
    }
    forEach(callback, thisArg = undefined) {
      if (typeof callback !== 'function')
        throw new TypeErrorCtor('Headers.forEach: Expected callback to be a function.');
      for (const [k, v] of sortedEntries(hs(this))) Reflect.apply(callback, thisArg, [v, k, this]);
    }
    *keys() {
      for (const [k] of sortedEntries(hs(this))) yield k;
    }
    *values() {
      for (const [, v] of sortedEntries(hs(this))) yield v;
    }
    *entries() {
      for (const e of sortedEntries(hs(this))) yield e;
    }
    [SymbolIterator]() {
      return this.entries();
    }
    get [Symbol.toStringTag]() {
      return 'Headers';
    }
  }

  // ---- bodies (Fetch §5.1 BodyInit, §5.3 Body mixin) -------------------------------------------------------------
  /** Extract a body (Fetch §5.1 "extract"): `{ bytes, type }`, type the default Content-Type or null. */
  function extractBody(v) {
    if (typeof v === 'string') return { bytes: encoder.encode(v), type: 'text/plain;charset=UTF-8' };
    if (v instanceof URLSearchParamsCtor)
      return { bytes: encoder.encode(`${v}`), type: 'application/x-www-form-urlencoded;charset=UTF-8' };
    if (v instanceof Blob) return { bytes: blobBytes(v).slice(0), type: v.type === '' ? null : v.type };
    if (v instanceof ArrayBufferCtor || ArrayBufferIsView(v)) return { bytes: copyBytes(v), type: null };
    if (v !== null && typeof v === 'object' && typeof v.getReader === 'function' && bodies.has(v))
      return { bytes: bodies.get(v).take(), type: null };
    return { bytes: encoder.encode(`${v}`), type: 'text/plain;charset=UTF-8' };
  }
  const bodies = new WeakMap(); // reader object -> { take }
  /** A minimal reader over buffered bytes: getReader().read(), cancel(), async iteration (one chunk). */
  function bodyReader(bytes, onUse) {
    let left = bytes;
    let locked = false;
    const take = () => {
      onUse();
      const b = left ?? new Uint8ArrayCtor(0);
      left = undefined;
      return b;
    };
    const read = () => {
      if (left === undefined || left.length === 0) {
        onUse();
        left = undefined;
        return PromiseCtor.resolve({ done: true, value: undefined });
      }
      return PromiseCtor.resolve({ done: false, value: take() });
    };
    const stream = {
      get locked() {
        return locked;
      },
      getReader() {
        if (locked) throw new TypeErrorCtor('Invalid state: ReadableStream is locked');
        locked = true;
        return {
          read,
          releaseLock() {
            locked = false;
          },
          cancel() {
            take();
            return PromiseCtor.resolve();
          },
          get closed() {
            return PromiseCtor.resolve();
          },
        };
      },
      cancel() {
        take();
        return PromiseCtor.resolve();
      },
      async *[Symbol.asyncIterator]() {
        for (;;) {
          const r = await read();
          if (r.done) return;
          yield r.value;
        }
      },
      get [Symbol.toStringTag]() {
        return 'ReadableStream';
      },
    };
    bodies.set(stream, { take });
    return stream;
  }
  const bodyState = new WeakMap(); // request/response -> { bytes (null: no body), used, stream }
  function bs(o) {
    const s = bodyState.get(o);
    if (s === undefined) throw new TypeErrorCtor('Illegal invocation');
    return s;
  }
  function consume(o) {
    const s = bs(o);
    if (s.used) return PromiseCtor.reject(new TypeErrorCtor('Body is unusable: Body has already been read'));
    s.used = true;
    return PromiseCtor.resolve(s.bytes ?? new Uint8ArrayCtor(0));
  }
  function mimeOf(o) {
    return headersOf(o).get('content-type') ?? '';
  }
  const BodyMixin = {
    get body() {
      const s = bs(this);
      if (s.bytes === null) return null;
      if (s.stream === undefined) s.stream = bodyReader(s.bytes, () => (s.used = true));
      return s.stream;
    },
    get bodyUsed() {
      return bs(this).used;
    },
    arrayBuffer() {
      return consume(this).then((b) => b.slice(0).buffer);
    },
    bytes() {
      return consume(this).then((b) => b.slice(0));
    },
    text() {
      return consume(this).then((b) => decoder.decode(b));
    },
    json() {
      return consume(this).then((b) => JSONParse(decoder.decode(b)));
    },
    blob() {
      return consume(this).then((b) => new Blob([b], { type: mimeOf(this) }));
    },
    formData() {
      return PromiseCtor.reject(new TypeErrorCtor('Response.formData: FormData is not available in this sandbox'));
    },
  };
  function mixBody(C) {
    for (const k of Reflect.ownKeys(BodyMixin)) {
      const d = Reflect.getOwnPropertyDescriptor(BodyMixin, k);
      d.enumerable = true;
      ObjectDefineProperty(C.prototype, k, d);
    }
  }
  const headerOwners = new WeakMap(); // request/response -> Headers
  function headersOf(o) {
    return headerOwners.get(o);
  }

  // ---- Request (Fetch §5.4) ----------------------------------------------------------------------------------------
  const METHOD_NORMAL = { DELETE: 1, GET: 1, HEAD: 1, OPTIONS: 1, POST: 1, PUT: 1 };
  const requests = new WeakMap(); // request -> fields
  const rq = (r) => {
    const s = requests.get(r);
    if (s === undefined) throw new TypeErrorCtor('Illegal invocation');
    return s;
  };
  class Request {
    constructor(input, init = undefined) {
      // biome-ignore lint/complexity/noArguments: Web IDL tells a missing argument from undefined
      if (arguments.length === 0)
        throw new TypeErrorCtor("Failed to construct 'Request': 1 argument required, but only 0 present.");
      if (init !== undefined && init !== null && typeof init !== 'object')
        throw new TypeErrorCtor('Request constructor: Expected init to be an object.');
      const from = input instanceof Request ? rq(input) : undefined;
      let url;
      if (from === undefined) {
        let parsed;
        try {
          parsed = new URLCtor(`${input}`);
        } catch (e) {
          const err = new TypeErrorCtor(`Failed to parse URL from ${input}`);
          define(err, 'cause', e);
          throw err;
        }
        if (parsed.username !== '' || parsed.password !== '')
          throw new TypeErrorCtor(`Request cannot be constructed from a URL that includes credentials: ${input}`);
        url = parsed.href;
      } else url = from.url;
      const o = init ?? {};
      const f = {
        url,
        method: from?.method ?? 'GET',
        redirect: o.redirect ?? from?.redirect ?? 'follow',
        credentials: o.credentials ?? from?.credentials ?? 'same-origin',
        mode: o.mode ?? from?.mode ?? 'cors',
        cache: o.cache ?? from?.cache ?? 'default',
        referrer: from?.referrer ?? 'about:client',
        referrerPolicy: o.referrerPolicy ?? from?.referrerPolicy ?? '',
        integrity: o.integrity ?? from?.integrity ?? '',
        keepalive: o.keepalive === undefined ? (from?.keepalive ?? false) : !!o.keepalive,
        signal: undefined,
      };
      if (o.method !== undefined) {
        const m = `${o.method}`;
        if (!TOKEN_RE.test(m)) throw new TypeErrorCtor(`'${m}' is not a valid HTTP method.`);
        const up = m.toUpperCase();
        if (up === 'CONNECT' || up === 'TRACE' || up === 'TRACK')
          throw new TypeErrorCtor(`'${m}' HTTP method is unsupported.`);
        f.method = METHOD_NORMAL[up] === 1 ? up : m;
      }
      if (o.referrer !== undefined) {
        const r = `${o.referrer}`;
        f.referrer = r === '' ? '' : new URLCtor(r).href;
      }
      requests.set(this, f);
      // The request's own signal follows init.signal, else the input's (Fetch §5.4 step 28-29).
      const follow = o.signal !== undefined && o.signal !== null ? o.signal : from?.signal;
      f.signal =
        follow !== undefined && follow !== null ? AbortSignalCtor.any([follow]) : new G.AbortController().signal;
      const h = new Headers(o.headers !== undefined ? o.headers : input instanceof Request ? input.headers : undefined);
      headerOwners.set(this, h);
      let bytes = null;
      if (o.body !== undefined && o.body !== null) {
        if (f.method === 'GET' || f.method === 'HEAD')
          throw new TypeErrorCtor('Request with GET/HEAD method cannot have body.');
        const b = extractBody(o.body);
        bytes = b.bytes;
        if (b.type !== null && !h.has('content-type')) h.append('content-type', b.type);
      } else if (input instanceof Request && o.body === undefined) {
        const s = bs(input);
        if (s.bytes !== null) {
          if (s.used)
            throw new TypeErrorCtor('Cannot construct a Request with a Request object that has already been used.');
          bytes = s.bytes;
          s.used = true;
        }
      }
      bodyState.set(this, { bytes, used: false, stream: undefined });
    }
    get method() {
      return rq(this).method;
    }
    get url() {
      return rq(this).url;
    }
    get headers() {
      rq(this);
      return headersOf(this);
    }
    get destination() {
      return '';
    }
    get referrer() {
      return rq(this).referrer;
    }
    get referrerPolicy() {
      return rq(this).referrerPolicy;
    }
    get mode() {
      return rq(this).mode;
    }
    get credentials() {
      return rq(this).credentials;
    }
    get cache() {
      return rq(this).cache;
    }
    get redirect() {
      return rq(this).redirect;
    }
    get integrity() {
      return rq(this).integrity;
    }
    get keepalive() {
      return rq(this).keepalive;
    }
    get isReloadNavigation() {
      return false;
    }
    get isHistoryNavigation() {
      return false;
    }
    get signal() {
      return rq(this).signal;
    }
    get duplex() {
      return 'half';
    }
    clone() {
      const s = bs(this);
      if (s.used) throw new TypeErrorCtor('Request.clone: Body has already been consumed.');
      const init = { method: this.method, headers: this.headers, signal: this.signal };
      const c = new Request(this.url, init);
      bodyState.get(c).bytes = s.bytes === null ? null : s.bytes.slice(0);
      return c;
    }
    get [Symbol.toStringTag]() {
      return 'Request';
    }
  }
  mixBody(Request);

  // ---- Response (Fetch §5.5) ---------------------------------------------------------------------------------------
  const NULL_BODY = { 101: 1, 103: 1, 204: 1, 205: 1, 304: 1 };
  const responses = new WeakMap(); // response -> fields
  const rs = (r) => {
    const s = responses.get(r);
    if (s === undefined) throw new TypeErrorCtor('Illegal invocation');
    return s;
  };
  class Response {
    constructor(body = null, init = undefined) {
      if (init !== undefined && init !== null && typeof init !== 'object')
        throw new TypeErrorCtor('Response constructor: Expected init to be an object.');
      const o = init ?? {};
      const status = o.status === undefined ? 200 : Number(o.status);
      if (!(status >= 200 && status <= 599) || Math.trunc(status) !== status)
        throw new RangeErrorCtor('init["status"] must be in the range of 200 to 599, inclusive.');
      const statusText = o.statusText === undefined ? '' : `${o.statusText}`;
      if (!/^[\t\x20-\x7e\x80-\xff]*$/.test(statusText)) throw new TypeErrorCtor('Invalid statusText');
      const h = new Headers(o.headers);
      headerOwners.set(this, h);
      let bytes = null;
      if (body !== null && body !== undefined) {
        if (NULL_BODY[status] === 1)
          throw new TypeErrorCtor(`Response constructor: Invalid response status code ${status}`);
        const b = extractBody(body);
        bytes = b.bytes;
        if (b.type !== null && !h.has('content-type')) h.append('content-type', b.type);
      }
      responses.set(this, { status, statusText, type: 'default', url: '', redirected: false });
      bodyState.set(this, { bytes, used: false, stream: undefined });
    }
    static error() {
      const r = new Response(null, { status: 200 });
      const f = rs(r);
      f.status = 0;
      f.type = 'error';
      hs(r.headers).guard = 'immutable';
      return r;
    }
    static json(data, init = undefined) {
      const text = JSONStringify(data);
      if (text === undefined) throw new TypeErrorCtor('Value is not JSON serializable');
      const r = new Response(text, init);
      r.headers.set('content-type', 'application/json');
      return r;
    }
    static redirect(url, status = 302) {
      const href = new URLCtor(`${url}`).href;
      const s = Number(status);
      if (s !== 301 && s !== 302 && s !== 303 && s !== 307 && s !== 308)
        throw new RangeErrorCtor(`Invalid status code ${status}`);
      const r = new Response(null, { status: 200 });
      rs(r).status = s;
      r.headers.set('location', href);
      hs(r.headers).guard = 'immutable';
      return r;
    }
    get type() {
      return rs(this).type;
    }
    get url() {
      return rs(this).url;
    }
    get redirected() {
      return rs(this).redirected;
    }
    get status() {
      return rs(this).status;
    }
    get ok() {
      const s = rs(this).status;
      return s >= 200 && s <= 299;
    }
    get statusText() {
      return rs(this).statusText;
    }
    get headers() {
      rs(this);
      return headersOf(this);
    }
    clone() {
      const s = bs(this);
      if (s.used) throw new TypeErrorCtor('Response.clone: Body has already been consumed.');
      const f = rs(this);
      const c = new Response(null, { status: 200, headers: this.headers });
      responses.set(c, { ...f });
      bodyState.get(c).bytes = s.bytes === null ? null : s.bytes.slice(0);
      return c;
    }
    get [Symbol.toStringTag]() {
      return 'Response';
    }
  }
  mixBody(Response);

  define(G, 'Blob', Blob);
  define(G, 'File', File);
  define(G, 'Headers', Headers);
  define(G, 'Request', Request);
  define(G, 'Response', Response);
}
