// Installs everything QuickJS lacks that the guest runtime and tool code expect of a JavaScript sandbox (the web
// globals of Node and browsers, engine parity); runs INSIDE each QuickJS sandbox (untrusted side), first, before
// commons.mjs captures the built-ins.
// Constraints: plain JavaScript, no imports, one export (core/quickjs/guest-script.ts puts it into the one script,
// after the installer files it calls). These globals are the tool's own realm: tool code may change them afterwards
// and fool only its own view, since the guest bridge uses what commons.mjs captured and the host checks every message.

/**
 * Install the web globals (core/guest/quickjs/*.mjs) on `G`, in the order each needs the previous ones.
 * @param {object} G the global object
 * @param {object} H the sandbox's host functions (core/guest/quickjs/entry.js lists them)
 * @returns {{ fire(id: number): void, isProxy(v: unknown): boolean, setReporter(fn: (e: unknown) => void): void }}
 *   run a timer that fired; tell a recorded Proxy; set where uncaught exceptions of callbacks go (the guest's log).
 */
export function installWebGlobals(G, H) {
  'use strict';
  let reporter;
  const env = {
    reportError: (e) => {
      if (reporter !== undefined) reporter(e);
    },
    now: () => H.now(),
    setTimer: undefined,
  };
  const parity = installEngineParity(G, { jsonError: H.jsonError });
  installEvents(G, env);
  installEncoding(G);
  installUrl(G, { url: H.url });
  installFetchClasses(G);
  const fire = installTimers(G, { start: H.timerStart, stop: H.timerStop }, env);
  // AbortSignal.timeout uses the real setTimeout, whatever tool code does to the global later.
  const setTimer = G.setTimeout;
  env.setTimer = (fn, ms) => setTimer(fn, ms);
  installMisc(G, { random: H.random, now: H.now, timeOrigin: H.timeOrigin }, env);
  installIntl(G, { intl: H.intl });
  return {
    fire,
    isProxy: parity.isProxy,
    setReporter: (fn) => {
      reporter = fn;
    },
  };
}
