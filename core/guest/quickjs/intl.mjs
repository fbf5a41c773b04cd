// Intl for engines without it (QuickJS): Intl.* classes and the locale-sensitive methods of Number, BigInt, Date and
// String, computed by the sandbox host's own ICU so a tool formats, compares and segments text exactly as on the node
// engine; runs INSIDE the sandbox (untrusted side), before tool code.
// Constraints: plain JavaScript, no imports, one export (core/quickjs/guest-script.ts concatenates the guest files).
// Only JSON text crosses to the host: `[kind, locales, options, method, args]` out, `{"v": value}` or
// `{"e": [name, message]}` back (core/quickjs/host-api.ts answers it). Follows ECMA-402 as the host implements it.

/**
 * Define `Intl` on `G` and route the locale-sensitive built-in methods through it.
 * @param {object} G the global object
 * @param {{ intl(request: string): string }} host the host's Intl bridge (core/quickjs/host-api.ts intlCall).
 */
export function installIntl(G, host) {
  'use strict';
  const ObjectDefineProperty = Object.defineProperty;
  const JSONStringify = JSON.stringify;
  const JSONParse = JSON.parse;
  const ReflectApply = Reflect.apply;
  const ErrorCtors = {
    RangeError,
    TypeError,
    SyntaxError,
    Error,
  };
  const hostIntl = host.intl;
  const DateGetTime = Date.prototype.getTime;
  const NumberValueOf = Number.prototype.valueOf;
  const StringCtor = String;
  const SymbolIterator = Symbol.iterator;
  const define = (o, name, value) =>
    ObjectDefineProperty(o, name, { value, writable: true, configurable: true, enumerable: false });

  /** JSON data for the host: locales and options as given (only their JSON-visible parts cross). */
  function plain(v) {
    if (v === undefined) return null;
    if (v === null || typeof v !== 'object') return v;
    if (Array.isArray(v)) return v.map((x) => (typeof x === 'string' ? x : StringCtor(x)));
    const o = {};
    for (const k of Object.keys(v)) {
      const x = v[k];
      if (x === undefined) continue;
      o[k] = typeof x === 'object' && x !== null ? plain(x) : typeof x === 'bigint' ? StringCtor(x) : x;
    }
    return o;
  }
  function call(kind, locales, options, method, args) {
    const text = hostIntl(JSONStringify([kind, plain(locales), plain(options), method, args]));
    const r = JSONParse(text);
    if (r.e !== undefined) {
      const C = ErrorCtors[r.e[0]] ?? Error;
      throw new C(r.e[1]);
    }
    return r.v;
  }
  /** A date argument as ms since the epoch (or a NaN marker the host turns back into NaN). */
  function dateArg(d) {
    if (d === undefined) return Date.now();
    const t = d instanceof Date ? ReflectApply(DateGetTime, d, []) : Number(d);
    return Number.isNaN(t) ? 'NaN' : t;
  }
  function numberArg(n) {
    if (typeof n === 'bigint') return { bigint: StringCtor(n) };
    if (typeof n === 'string') return { string: n };
    const v = Number(n);
    return Number.isFinite(v) ? v : { number: StringCtor(v) };
  }

  const state = new WeakMap(); // instance -> { locales, options, bound }
  function st(o, kind) {
    const s = state.get(o);
    if (s === undefined || s.kind !== kind) throw new TypeError(`Method Intl.${kind} called on incompatible receiver`);
    return s;
  }
  /**
   * One Intl class: the constructor checks its arguments on the host at once (a bad locale or option throws here, as
   * ECMA-402 requires); `methods` map a method name to how its arguments cross.
   */
  function intlClass(kind, methods, boundFormat) {
    const C = class {
      constructor(locales = undefined, options = undefined) {
        const l = plain(locales);
        const o = plain(options);
        const resolved = call(kind, l, o, 'resolvedOptions', []);
        state.set(this, { kind, locales: l, options: o, resolved, bound: undefined });
      }
      resolvedOptions() {
        return { ...st(this, kind).resolved };
      }
      static supportedLocalesOf(locales, options = undefined) {
        return call(kind, plain(locales), plain(options), 'supportedLocalesOf', []);
      }
    };
    ObjectDefineProperty(C, 'name', { value: kind });
    for (const name of Object.keys(methods)) {
      if (name.endsWith('$')) continue; // the bound getter's argument conversion (below)
      const conv = methods[name];
      define(C.prototype, name, function (...args) {
        const s = st(this, kind);
        return call(kind, s.locales, s.options, name, conv(args));
      });
    }
    if (boundFormat !== undefined) {
      ObjectDefineProperty(C.prototype, boundFormat, {
        get() {
          const s = st(this, kind);
          if (s.bound === undefined) {
            const conv = methods[`${boundFormat}$`];
            s.bound = (...args) => call(kind, s.locales, s.options, boundFormat, conv(args));
          }
          return s.bound;
        },
        configurable: true,
      });
    }
    ObjectDefineProperty(C.prototype, Symbol.toStringTag, { value: `Intl.${kind}`, configurable: true });
    return C;
  }
  const strings = (args) => args.map((a) => StringCtor(a));
  const list = (args) => [args[0] === undefined ? [] : Array.from(args[0], (x) => StringCtor(x))];

  const Intl = {};
  define(Intl, 'Collator', intlClass('Collator', { compare$: (a) => [StringCtor(a[0]), StringCtor(a[1])] }, 'compare'));
  define(
    Intl,
    'NumberFormat',
    intlClass(
      'NumberFormat',
      {
        format$: (a) => [numberArg(a[0])],
        formatToParts: (a) => [numberArg(a[0])],
        formatRange: (a) => [numberArg(a[0]), numberArg(a[1])],
        formatRangeToParts: (a) => [numberArg(a[0]), numberArg(a[1])],
      },
      'format',
    ),
  );
  define(
    Intl,
    'DateTimeFormat',
    intlClass(
      'DateTimeFormat',
      {
        format$: (a) => [dateArg(a[0])],
        formatToParts: (a) => [dateArg(a[0])],
        formatRange: (a) => [dateArg(a[0]), dateArg(a[1])],
        formatRangeToParts: (a) => [dateArg(a[0]), dateArg(a[1])],
      },
      'format',
    ),
  );
  define(
    Intl,
    'PluralRules',
    intlClass('PluralRules', {
      select: (a) => [numberArg(a[0])],
      selectRange: (a) => [numberArg(a[0]), numberArg(a[1])],
    }),
  );
  define(
    Intl,
    'RelativeTimeFormat',
    intlClass('RelativeTimeFormat', {
      format: (a) => [Number(a[0]), StringCtor(a[1])],
      formatToParts: (a) => [Number(a[0]), StringCtor(a[1])],
    }),
  );
  define(Intl, 'ListFormat', intlClass('ListFormat', { format: list, formatToParts: list }));
  define(Intl, 'DisplayNames', intlClass('DisplayNames', { of: strings }));

  // Segmenter: the host segments the whole input once; the guest walks the answer ([segment, index, isWordLike?]).
  const Segmenter = intlClass('Segmenter', {});
  define(Segmenter.prototype, 'segment', function segment(input) {
    const s = st(this, 'Segmenter');
    const text = StringCtor(input);
    const parts = call('Segmenter', s.locales, s.options, 'segment', [text]);
    const word = s.resolved.granularity === 'word';
    const make = (p) => {
      const o = { segment: p[0], index: p[1], input: text };
      if (word) o.isWordLike = p[2] === 1;
      return o;
    };
    const segments = {
      containing(index = 0) {
        const i = Math.trunc(Number(index)) || 0;
        if (i < 0 || i >= text.length) return undefined;
        for (const p of parts) if (i >= p[1] && i < p[1] + p[0].length) return make(p);
        return undefined;
      },
      *[SymbolIterator]() {
        for (const p of parts) yield make(p);
      },
    };
    return segments;
  });
  define(Intl, 'Segmenter', Segmenter);
  define(Intl, 'getCanonicalLocales', (locales) => call('Intl', plain(locales), null, 'getCanonicalLocales', []));
  define(Intl, 'supportedValuesOf', (key) => call('Intl', null, null, 'supportedValuesOf', [StringCtor(key)]));
  ObjectDefineProperty(Intl, Symbol.toStringTag, { value: 'Intl', configurable: true });
  define(G, 'Intl', Intl);

  // ---- locale-sensitive built-ins (ECMA-402 §19-21) ---------------------------------------------------------------
  const builtin = (kind, method, self) =>
    function (locales = undefined, options = undefined) {
      return call(kind, plain(locales), plain(options), method, [self(this)]);
    };
  const thisDate = (d) => dateArg(d);
  const thisNumber = (n) => numberArg(typeof n === 'object' ? ReflectApply(NumberValueOf, n, []) : n);
  for (const m of ['toLocaleString', 'toLocaleDateString', 'toLocaleTimeString'])
    define(Date.prototype, m, builtin('Date', m, thisDate));
  for (const m of ['toString', 'toTimeString'])
    define(Date.prototype, m, function () {
      return call('Date', null, null, m, [dateArg(this)]);
    });
  define(Number.prototype, 'toLocaleString', builtin('Number', 'toLocaleString', thisNumber));
  define(
    BigInt.prototype,
    'toLocaleString',
    builtin('Number', 'toLocaleString', (n) => numberArg(BigInt(n))),
  );
  define(String.prototype, 'localeCompare', function localeCompare(that, locales = undefined, options = undefined) {
    return call('String', plain(locales), plain(options), 'localeCompare', [StringCtor(this), StringCtor(that)]);
  });
  for (const m of ['toLocaleUpperCase', 'toLocaleLowerCase'])
    define(String.prototype, m, function (locales = undefined) {
      return call('String', plain(locales), null, m, [StringCtor(this)]);
    });
}
