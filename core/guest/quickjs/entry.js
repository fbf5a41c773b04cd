// QuickJS entry point of the guest runtime: runs INSIDE each QuickJS sandbox (untrusted side), last in its one script,
// before tool code; starts core/guest/core.mjs with host functions in place of a message channel.
// Not a module: core/quickjs/guest-script.ts makes one strict function of the sandbox's host functions `H` whose body
// is the engine's web globals (install.mjs and its installers; `web` is what installWebGlobals returned),
// commons.mjs, core.mjs and this file, and which returns `{ receive, fire: web.fire }`. So commons.mjs's captured
// built-ins, `createGuest`, `H` and `web` are in scope here, and nothing of `H` is left on the global object: tool
// code reaches only what the guest passes on. The contract of the other entry points holds here
// (test/contracts/guest-globals.test.ts): no global read, here or in a function, and no iteration protocol.
//
// H (core/quickjs/instance.ts makes it), each function taking and returning strings and numbers only:
//   send(text): one sandbox->host protocol message as JSON text;  fatal(code, message): end this sandbox now with a
//   stable code (E_MEMORY_LIMIT), nothing more sent;  stageModule(source): the tool module's source, loaded by the
//   next import of TOOL_MODULE;  timerStart(id, ms), timerStop(id);  url(op, a, b?, c?);  intl(request);
//   random(n);  now();  jsonError(text);  timeOrigin and version (values).

const quickJsHostSend = H.send;
const quickJsHostFatal = H.fatal;
const quickJsStage = H.stageModule;
const QUICKJS_TOOL_MODULE = 'tysandbox:///tool.js';

/**
 * A wire error as the node engine reports the same failure: QuickJS says InternalError "stack overflow" (SyntaxError
 * while parsing) where V8 says RangeError "Maximum call stack size exceeded".
 */
function quickJsTranslate(error) {
  if (error === null || typeof error !== 'object') return error;
  const m = error.message;
  if (m === 'InternalError: stack overflow' || m === 'SyntaxError: stack overflow') {
    error.message = 'RangeError: Maximum call stack size exceeded';
    if (error.data !== null && typeof error.data === 'object') error.data.name = 'RangeError';
  }
  return error;
}

/** The guest's `send`: a failed call or load that ran out of memory ends the sandbox instead (E_MEMORY_LIMIT). */
function quickJsSend(msg) {
  if ((msg.type === 'result' || msg.type === 'loaded') && msg.ok === false) {
    const e = msg.error;
    if (e !== null && typeof e === 'object' && e.message === 'InternalError: out of memory') {
      quickJsHostFatal('E_MEMORY_LIMIT', 'the tool exceeded its memory limit');
      return;
    }
    msg.error = quickJsTranslate(e);
  }
  quickJsHostSend(JSONStringify(msg));
}

const quickJsGuest = createGuest({
  send: quickJsSend,
  importSource: (source) => {
    quickJsStage(source);
    return import(QUICKJS_TOOL_MODULE);
  },
  isProxy: web.isProxy,
  eagerFetchClasses: true,
});
const quickJsLine = quickJsGuest.line;
const quickJsLog = quickJsGuest.log;
const quickJsDescribe = quickJsGuest.describe;
web.setReporter((e) => quickJsLog('error', `uncaught exception: ${quickJsDescribe(e)}`));
quickJsHostSend(
  JSONStringify({ v: 1, type: 'ready', runtime: 'quickjs', version: StringPrototypeSlice(`${H.version}`, 0, 64) }),
);

/** One host->sandbox protocol message (JSON text). */
function receive(text) {
  quickJsLine(text);
}
