// Engine parity for QuickJS: Proxy detection without running traps, and JSON.parse errors in the node engine's words;
// runs INSIDE each QuickJS sandbox (untrusted side), before commons.mjs captures the built-ins and before tool code.
// Constraints: plain JavaScript, no imports, one export (core/quickjs/guest-script.ts puts it into the one script).

/**
 * Replace `Proxy` with a constructor that records every proxy it makes (Proxy.revocable too), so the guest can refuse a
 * Proxy without running its traps, as Node's util.types.isProxy lets it; and make JSON.parse throw the SyntaxError
 * message the host engine gives for the same text (V8's on the command line and in Chromium).
 * @param {object} G the global object
 * @param {{ jsonError(text: string): string }} host the host engine's JSON.parse message for a text ('' if it parses)
 * @returns {{ isProxy(v: unknown): boolean }}
 */
export function installEngineParity(G, host) {
  'use strict';
  const ReflectApply = Reflect.apply;
  const ReflectConstruct = Reflect.construct;
  const ReflectGet = Reflect.get;
  const ObjectDefineProperty = Object.defineProperty;
  const WeakSetAdd = WeakSet.prototype.add;
  const WeakSetHas = WeakSet.prototype.has;
  const SyntaxErrorCtor = SyntaxError;
  const StringCtor = String;
  const RealProxy = G.Proxy;
  const RealRevocable = RealProxy.revocable;
  const JSONObject = G.JSON;
  const RealJSONParse = JSONObject.parse;
  const hostJsonError = host.jsonError;

  // ---- Proxy ------------------------------------------------------------------------------------------------------
  const proxies = new WeakSet();
  const revocable = {
    revocable(target, handler) {
      const r = ReflectApply(RealRevocable, RealProxy, [target, handler]);
      ReflectApply(WeakSetAdd, proxies, [r.proxy]);
      return r;
    },
  }.revocable;
  // A proxy of the real constructor: same name, length and (absent) prototype; `new` goes through the construct trap.
  const ProxyCtor = new RealProxy(RealProxy, {
    construct(target, args, newTarget) {
      const p = ReflectConstruct(target, args, newTarget === ProxyCtor ? target : newTarget);
      ReflectApply(WeakSetAdd, proxies, [p]);
      return p;
    },
    get(target, key, receiver) {
      return key === 'revocable' ? revocable : ReflectGet(target, key, receiver);
    },
  });
  ObjectDefineProperty(G, 'Proxy', { value: ProxyCtor, writable: true, configurable: true, enumerable: false });

  // ---- JSON.parse -------------------------------------------------------------------------------------------------
  const parse = {
    parse(text, reviver) {
      try {
        return reviver === undefined
          ? ReflectApply(RealJSONParse, JSONObject, [text])
          : ReflectApply(RealJSONParse, JSONObject, [text, reviver]);
      } catch (e) {
        if (!(e instanceof SyntaxErrorCtor)) throw e;
        const m = hostJsonError(StringCtor(text));
        throw typeof m === 'string' && m !== '' ? new SyntaxErrorCtor(m) : e;
      }
    },
  }.parse;
  ObjectDefineProperty(JSONObject, 'parse', { value: parse, writable: true, configurable: true, enumerable: false });

  return {
    isProxy: (v) =>
      (typeof v === 'object' || typeof v === 'function') && v !== null && ReflectApply(WeakSetHas, proxies, [v]),
  };
}
