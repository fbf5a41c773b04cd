// QuickJS adapter of the guest core: runs INSIDE each QuickJS sandbox (untrusted side), before tool code; installs the
// web globals QuickJS lacks (core/guest/web/*.mjs), then core/guest/core.mjs with host functions in place of a message
// channel.
// Not a module at run time: core/quickjs/guest-script.ts concatenates core.mjs, web/*.mjs and this file (their
// `export`s removed) into one script whose function takes the host functions; nothing of them is left on the global
// object, so tool code reaches only what the guest passes on. It is not the security boundary: the QuickJS instance's
// own linear memory is (core/quickjs/instance.ts), and the host side checks every message it receives.

/**
 * Start the guest in this QuickJS context.
 * @param {object} H host functions (core/quickjs/instance.ts), each taking and returning strings and numbers only:
 *   - `send(text)`: one sandbox->host protocol message as JSON text;
 *   - `fatal(code, message)`: end this sandbox now with a stable code (E_MEMORY_LIMIT), nothing more sent;
 *   - `stageModule(source)`: the tool module's source, loaded by the next `import('tysandbox:///tool.js')`;
 *   - `timerStart(id, ms)`, `timerStop(id)`: the host's timers (core/guest/web/timers.mjs);
 *   - `url(op, a, b?, c?)`: the host's URL parser (core/guest/web/url.mjs);
 *   - `intl(request)`: the host's Intl (core/guest/web/intl.mjs);
 *   - `random(n)`: n random bytes as a Latin-1 string; `now()`: ms since `timeOrigin`; `version`: the engine's name;
 *   - `jsonError(text)`: the host engine's JSON.parse error message for `text` ('' when it parses).
 * @returns {{ receive(text: string): void, fire(id: number): void }} deliver one host->sandbox message (JSON text);
 *   run a timer that fired.
 */
export function startQuickJsGuest(H) {
  'use strict';
  const G = globalThis;
  const ReflectApply = Reflect.apply;
  const ReflectConstruct = Reflect.construct;
  const ReflectGet = Reflect.get;
  const ObjectDefineProperty = Object.defineProperty;
  const JSONStringify = JSON.stringify;
  const WeakSetCtor = WeakSet;
  const WeakSetAdd = WeakSet.prototype.add;
  const WeakSetHas = WeakSet.prototype.has;
  const hostSend = H.send;
  const hostFatal = H.fatal;
  const stageModule = H.stageModule;
  const TOOL_MODULE = 'tysandbox:///tool.js';

  // ---- web globals ------------------------------------------------------------------------------------------------
  let guest; // set below; errors before it exists have nowhere to go
  const env = {
    reportError: (e) => {
      if (guest !== undefined) guest.log('error', `uncaught exception: ${guest.describe(e)}`);
    },
    now: () => H.now(),
    setTimer: (fn, ms) => G.setTimeout(fn, ms),
  };
  installEvents(G, env);
  installEncoding(G);
  installUrl(G, { url: H.url });
  installFetchClasses(G);
  const fire = installTimers(G, { start: H.timerStart, stop: H.timerStop }, env);
  // AbortSignal.timeout keeps the timers the tool sees: capture the real setTimeout now.
  const setTimer = G.setTimeout;
  env.setTimer = (fn, ms) => setTimer(fn, ms);
  installMisc(G, { random: H.random, now: H.now, timeOrigin: H.timeOrigin }, env);
  installIntl(G, { intl: H.intl });

  // ---- Proxy detection without running traps: every Proxy is made by the constructor installed here -------------
  const RealProxy = G.Proxy;
  const proxies = new WeakSetCtor();
  const revocable = {
    revocable(target, handler) {
      const r = ReflectApply(RealProxy.revocable, RealProxy, [target, handler]);
      ReflectApply(WeakSetAdd, proxies, [r.proxy]);
      return r;
    },
  }.revocable;
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
  const isProxy = (v) =>
    (typeof v === 'object' || typeof v === 'function') && v !== null && ReflectApply(WeakSetHas, proxies, [v]);

  // ---- JSON.parse errors in the node engine's words (the host engine's own parser says what is wrong) -------------
  const RealJSONParse = JSON.parse;
  const SyntaxErrorCtor = SyntaxError;
  const StringCtor = String;
  const hostJsonError = H.jsonError;
  const jsonParse = {
    parse(text, reviver) {
      try {
        return reviver === undefined ? RealJSONParse(text) : RealJSONParse(text, reviver);
      } catch (e) {
        if (!(e instanceof SyntaxErrorCtor)) throw e;
        const m = hostJsonError(StringCtor(text));
        throw typeof m === 'string' && m !== '' ? new SyntaxErrorCtor(m) : e;
      }
    },
  }.parse;
  ObjectDefineProperty(JSON, 'parse', { value: jsonParse, writable: true, configurable: true, enumerable: false });

  // ---- engine errors as the node engine reports them ----------------------------------------------------------------
  // QuickJS reports its stack limit as InternalError "stack overflow" (SyntaxError while parsing); V8 as RangeError
  // "Maximum call stack size exceeded". An exhausted memory limit (InternalError "out of memory") ends the sandbox.
  function translate(error) {
    if (error === null || typeof error !== 'object') return error;
    const m = error.message;
    if (m === 'InternalError: stack overflow' || m === 'SyntaxError: stack overflow') {
      error.message = 'RangeError: Maximum call stack size exceeded';
      if (error.data !== null && typeof error.data === 'object') error.data.name = 'RangeError';
    }
    return error;
  }
  function outOfMemory(error) {
    return error !== null && typeof error === 'object' && error.message === 'InternalError: out of memory';
  }
  function send(msg) {
    if ((msg.type === 'result' || msg.type === 'loaded') && msg.ok === false) {
      if (outOfMemory(msg.error)) {
        hostFatal('E_MEMORY_LIMIT', 'the tool exceeded its memory limit');
        return;
      }
      msg.error = translate(msg.error);
    }
    hostSend(JSONStringify(msg));
  }

  // ---- the guest core -----------------------------------------------------------------------------------------------
  guest = createGuest({
    send,
    importSource: (source) => {
      stageModule(source);
      return import(TOOL_MODULE);
    },
    isProxy,
    eagerFetchClasses: true,
  });
  const line = guest.line;
  hostSend(JSONStringify({ v: 1, type: 'ready', runtime: 'quickjs', version: `${H.version}`.slice(0, 64) }));
  return {
    receive: (text) => line(text),
    fire: (id) => fire(id),
  };
}
