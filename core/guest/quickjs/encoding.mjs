// Web encoding for engines without it (QuickJS): TextEncoder, TextDecoder, atob, btoa; runs INSIDE the sandbox
// (untrusted side), before tool code.
// Constraints: plain JavaScript, no imports, one export (core/quickjs/guest-script.ts concatenates the guest files).
// TextEncoder/TextDecoder follow the WHATWG Encoding Standard (UTF-8 decoder §4.2 with U+FFFD for each maximal
// invalid subpart, UTF-16LE), atob/btoa the HTML Standard's forgiving-base64 (§8.3), with Node's error shapes.

/**
 * Define TextEncoder, TextDecoder, atob and btoa on `G`.
 * @param {object} G the global object (needs DOMException already defined: core/guest/web/events.mjs)
 */
export function installEncoding(G) {
  'use strict';
  const ObjectDefineProperty = Object.defineProperty;
  const StringFromCharCode = String.fromCharCode;
  const Uint8ArrayCtor = Uint8Array;
  const ArrayBufferCtor = ArrayBuffer;
  const ArrayBufferIsView = ArrayBuffer.isView;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const encodeURIComponentFn = encodeURIComponent;
  const unescapeFn = unescape;
  const DOMExceptionCtor = G.DOMException;
  const define = (o, name, value) =>
    ObjectDefineProperty(o, name, { value, writable: true, configurable: true, enumerable: false });
  function nodeError(Ctor, message, code) {
    const e = new Ctor(message);
    ObjectDefineProperty(e, 'code', { value: code, writable: true, configurable: true, enumerable: false });
    return e;
  }

  /** Replace lone surrogates with U+FFFD (WebIDL USVString conversion). */
  function toUSV(s) {
    // fast path: no surrogate at all
    if (!/[\uD800-\uDFFF]/.test(s)) return s;
    return s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
  }
  /** UTF-8 bytes of a string, as a Uint8Array (native escaping does the encoding; lone surrogates become U+FFFD). */
  function utf8Encode(input) {
    const s = toUSV(`${input}`);
    let ascii = true;
    for (let i = 0; i < s.length; i++)
      if (s.charCodeAt(i) > 0x7f) {
        ascii = false;
        break;
      }
    const bin = ascii ? s : unescapeFn(encodeURIComponentFn(s));
    const out = new Uint8ArrayCtor(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  class TextEncoder {
    get encoding() {
      return 'utf-8';
    }
    encode(input = '') {
      return utf8Encode(input);
    }
    encodeInto(src, dest) {
      if (!(dest instanceof Uint8ArrayCtor))
        throw nodeError(
          TypeErrorCtor,
          'The "dest" argument must be an instance of Uint8Array.',
          'ERR_INVALID_ARG_TYPE',
        );
      const s = toUSV(`${src}`);
      let read = 0;
      let written = 0;
      for (let i = 0; i < s.length; ) {
        const cp = s.codePointAt(i);
        const n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        if (written + n > dest.length) break;
        if (n === 1) dest[written] = cp;
        else if (n === 2) {
          dest[written] = 0xc0 | (cp >> 6);
          dest[written + 1] = 0x80 | (cp & 63);
        } else if (n === 3) {
          dest[written] = 0xe0 | (cp >> 12);
          dest[written + 1] = 0x80 | ((cp >> 6) & 63);
          dest[written + 2] = 0x80 | (cp & 63);
        } else {
          dest[written] = 0xf0 | (cp >> 18);
          dest[written + 1] = 0x80 | ((cp >> 12) & 63);
          dest[written + 2] = 0x80 | ((cp >> 6) & 63);
          dest[written + 3] = 0x80 | (cp & 63);
        }
        written += n;
        const units = cp > 0xffff ? 2 : 1;
        read += units;
        i += units;
      }
      return { read, written };
    }
    get [Symbol.toStringTag]() {
      return 'TextEncoder';
    }
  }

  const LABELS = {
    'unicode-1-1-utf-8': 'utf-8',
    unicode11utf8: 'utf-8',
    unicode20utf8: 'utf-8',
    'utf-8': 'utf-8',
    utf8: 'utf-8',
    'x-unicode20utf8': 'utf-8',
    'utf-16': 'utf-16le',
    'utf-16le': 'utf-16le',
    csunicode: 'utf-16le',
    'iso-10646-ucs-2': 'utf-16le',
    'ucs-2': 'utf-16le',
    unicode: 'utf-16le',
    unicodefeff: 'utf-16le',
  };
  /** The bytes of a BufferSource (ArrayBuffer, a typed array or a DataView) as a Uint8Array view. */
  function bytesOf(input) {
    if (input instanceof ArrayBufferCtor) return new Uint8ArrayCtor(input);
    if (ArrayBufferIsView(input)) return new Uint8ArrayCtor(input.buffer, input.byteOffset, input.byteLength);
    throw nodeError(
      TypeErrorCtor,
      'The "input" argument must be an instance of ArrayBuffer or ArrayBufferView.',
      'ERR_INVALID_ARG_TYPE',
    );
  }
  const decoders = new WeakMap();
  class TextDecoder {
    constructor(label = 'utf-8', options = undefined) {
      const key = `${label}`.trim().toLowerCase();
      const encoding = LABELS[key];
      if (encoding === undefined)
        throw nodeError(RangeErrorCtor, `The "${label}" encoding is not supported`, 'ERR_ENCODING_NOT_SUPPORTED');
      decoders.set(this, {
        encoding,
        fatal: !!options?.fatal,
        ignoreBOM: !!options?.ignoreBOM,
        pending: [],
        bomSeen: false,
      });
    }
    get encoding() {
      return decoders.get(this).encoding;
    }
    get fatal() {
      return decoders.get(this).fatal;
    }
    get ignoreBOM() {
      return decoders.get(this).ignoreBOM;
    }
    decode(input = undefined, options = undefined) {
      const st = decoders.get(this);
      if (st === undefined) throw new TypeErrorCtor('Illegal invocation');
      const stream = !!options?.stream;
      let bytes = input === undefined ? new Uint8ArrayCtor(0) : bytesOf(input);
      if (st.pending.length > 0) {
        const joined = new Uint8ArrayCtor(st.pending.length + bytes.length);
        for (let i = 0; i < st.pending.length; i++) joined[i] = st.pending[i];
        joined.set(bytes, st.pending.length);
        bytes = joined;
        st.pending = [];
      }
      const r = st.encoding === 'utf-8' ? decodeUtf8(bytes, st.fatal, stream) : decodeUtf16le(bytes, st.fatal, stream);
      st.pending = r.rest;
      let text = r.text;
      if (!st.ignoreBOM && !st.bomSeen && text.length > 0) {
        st.bomSeen = true;
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      }
      if (!stream) st.bomSeen = false;
      return text;
    }
    get [Symbol.toStringTag]() {
      return 'TextDecoder';
    }
  }
  function invalid(encoding) {
    return nodeError(
      TypeErrorCtor,
      `The encoded data was not valid for encoding ${encoding}`,
      'ERR_ENCODING_INVALID_ENCODED_DATA',
    );
  }
  /** WHATWG UTF-8 decoder; returns the text and the bytes of an incomplete sequence at the end when streaming. */
  function decodeUtf8(bytes, fatal, stream) {
    const n = bytes.length;
    let ascii = true;
    for (let i = 0; i < n; i++)
      if (bytes[i] > 0x7f) {
        ascii = false;
        break;
      }
    if (ascii) return { text: chunked(bytes, 0, n), rest: [] };
    let out = '';
    const codes = [];
    const flush = () => {
      if (codes.length > 0) {
        out += StringFromCharCode.apply(undefined, codes);
        codes.length = 0;
      }
    };
    let i = 0;
    while (i < n) {
      const b = bytes[i];
      if (b < 0x80) {
        codes.push(b);
        i++;
      } else {
        let need;
        let cp;
        let lower = 0x80;
        let upper = 0xbf;
        if (b >= 0xc2 && b <= 0xdf) {
          need = 1;
          cp = b & 0x1f;
        } else if (b >= 0xe0 && b <= 0xef) {
          need = 2;
          cp = b & 0xf;
          if (b === 0xe0) lower = 0xa0;
          if (b === 0xed) upper = 0x9f;
        } else if (b >= 0xf0 && b <= 0xf4) {
          need = 3;
          cp = b & 0x7;
          if (b === 0xf0) lower = 0x90;
          if (b === 0xf4) upper = 0x8f;
        } else {
          if (fatal) throw invalid('utf-8');
          codes.push(0xfffd);
          i++;
          continue;
        }
        let j = 1;
        let ok = true;
        for (; j <= need; j++) {
          if (i + j >= n) {
            if (stream) {
              flush();
              const rest = [];
              for (let k = i; k < n; k++) rest.push(bytes[k]);
              return { text: out, rest };
            }
            ok = false;
            break;
          }
          const c = bytes[i + j];
          if (c < lower || c > upper) {
            ok = false;
            break;
          }
          lower = 0x80;
          upper = 0xbf;
          cp = (cp << 6) | (c & 0x3f);
        }
        if (!ok) {
          if (fatal) throw invalid('utf-8');
          codes.push(0xfffd);
          i += j;
          continue;
        }
        if (cp > 0xffff) {
          cp -= 0x10000;
          codes.push(0xd800 | (cp >> 10), 0xdc00 | (cp & 0x3ff));
        } else codes.push(cp);
        i += need + 1;
      }
      if (codes.length >= 0x2000) flush();
    }
    flush();
    return { text: out, rest: [] };
  }
  function decodeUtf16le(bytes, fatal, stream) {
    const n = bytes.length - (bytes.length % 2);
    let out = '';
    const codes = [];
    for (let i = 0; i < n; i += 2) {
      const u = bytes[i] | (bytes[i + 1] << 8);
      codes.push(u);
      if (codes.length >= 0x2000) {
        out += StringFromCharCode.apply(undefined, codes);
        codes.length = 0;
      }
    }
    out += StringFromCharCode.apply(undefined, codes);
    let rest = [];
    if (bytes.length % 2 === 1) {
      if (stream) rest = [bytes[bytes.length - 1]];
      else {
        if (fatal) throw invalid('utf-16le');
        out += '\uFFFD';
      }
    }
    const fixed = toUSV(out);
    if (fatal && fixed !== out) throw invalid('utf-16le');
    return { text: fixed, rest };
  }
  /** Latin-1/ASCII bytes to text in pieces (String.fromCharCode.apply has an argument limit). */
  function chunked(bytes, from, to) {
    let s = '';
    for (let i = from; i < to; i += 0x2000)
      s += StringFromCharCode.apply(undefined, bytes.subarray(i, Math.min(to, i + 0x2000)));
    return s;
  }

  // ---- atob / btoa (HTML §8.3) ---------------------------------------------------------------------------------
  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const B64_INDEX = new Int16Array(128).fill(-1);
  for (let i = 0; i < 64; i++) B64_INDEX[B64.charCodeAt(i)] = i;
  function btoa(data) {
    // biome-ignore lint/complexity/noArguments: Web IDL tells a missing argument from undefined
    if (arguments.length === 0)
      throw nodeError(TypeErrorCtor, 'The "data" argument must be specified', 'ERR_MISSING_ARGS');
    const s = `${data}`;
    let out = '';
    for (let i = 0; i < s.length; i += 3) {
      const a = s.charCodeAt(i);
      const b = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      const c = i + 2 < s.length ? s.charCodeAt(i + 2) : 0;
      if (a > 0xff || b > 0xff || c > 0xff) throw new DOMExceptionCtor('Invalid character', 'InvalidCharacterError');
      const n = (a << 16) | (b << 8) | c;
      out += B64[n >> 18] + B64[(n >> 12) & 63];
      out += i + 1 < s.length ? B64[(n >> 6) & 63] : '=';
      out += i + 2 < s.length ? B64[n & 63] : '=';
    }
    return out;
  }
  function atob(data) {
    // biome-ignore lint/complexity/noArguments: Web IDL tells a missing argument from undefined
    if (arguments.length === 0)
      throw nodeError(TypeErrorCtor, 'The "data" argument must be specified', 'ERR_MISSING_ARGS');
    let s = `${data}`.replace(/[\t\n\f\r ]+/g, '');
    if (s.length % 4 === 0) s = s.replace(/==?$/, '');
    const bad = () =>
      new DOMExceptionCtor('The string to be decoded is not correctly encoded.', 'InvalidCharacterError');
    if (s.length % 4 === 1) throw bad();
    let out = '';
    let buf = 0;
    let bits = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      const v = c < 128 ? B64_INDEX[c] : -1;
      if (v < 0) throw bad();
      buf = (buf << 6) | v;
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        out += StringFromCharCode((buf >> bits) & 0xff);
      }
    }
    return out;
  }

  define(G, 'TextEncoder', TextEncoder);
  define(G, 'TextDecoder', TextDecoder);
  ObjectDefineProperty(G, 'btoa', { value: btoa, writable: true, configurable: true, enumerable: true });
  ObjectDefineProperty(G, 'atob', { value: atob, writable: true, configurable: true, enumerable: true });
}
