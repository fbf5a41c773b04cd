// Builds the one script every QuickJS sandbox evaluates first: the guest runtime files (core/guest/) with their one
// `export` each removed, in one strict function scope; host side of the QuickJS sandbox, run once per process/worker.

/** The guest files a QuickJS sandbox runs, in order, by path under core/guest/, with the function each exports. */
export const QUICKJS_GUEST_FILES: readonly { path: string; fn: string }[] = [
  { path: 'web/events.mjs', fn: 'installEvents' },
  { path: 'web/encoding.mjs', fn: 'installEncoding' },
  { path: 'web/url.mjs', fn: 'installUrl' },
  { path: 'web/fetch.mjs', fn: 'installFetchClasses' },
  { path: 'web/timers.mjs', fn: 'installTimers' },
  { path: 'web/misc.mjs', fn: 'installMisc' },
  { path: 'web/intl.mjs', fn: 'installIntl' },
  { path: 'core.mjs', fn: 'createGuest' },
  { path: 'quickjs.mjs', fn: 'startQuickJsGuest' },
];

/** The file name QuickJS reports for frames of the guest script (never the tool's TOOL_MODULE_URL). */
export const GUEST_SCRIPT_NAME = 'tysandbox:///guest.js';

/**
 * The guest script: `(function (H) { 'use strict'; ...files...; return startQuickJsGuest(H); })`, an expression
 * whose value is the function the sandbox calls with its host functions (core/guest/quickjs.mjs).
 * @param texts the text of each file of QUICKJS_GUEST_FILES, by path.
 * @throws Error when a file is missing, or does not hold exactly one `export function <fn>(` and no other
 *   import/export statement (a build-time invariant, as browser/sandbox/runtime.ts workerSource checks).
 */
export function guestScript(texts: Readonly<Record<string, string>>): string {
  const parts: string[] = [];
  for (const { path, fn } of QUICKJS_GUEST_FILES) {
    const text = texts[path];
    if (typeof text !== 'string') throw new Error(`guest file ${path} missing`);
    const decl = `export function ${fn}(`;
    const at = text.indexOf(decl);
    if (at === -1 || text.indexOf(decl, at + 1) !== -1)
      throw new Error(`${path} must contain exactly one ${decl.slice(0, -1)}`);
    const body = text.slice(0, at) + text.slice(at + 'export '.length);
    if (/^\s*(import|export)\b/m.test(body)) throw new Error(`${path} must not contain other import/export statements`);
    parts.push(body);
  }
  return `(function (H) {\n'use strict';\n${parts.join('\n')}\nreturn startQuickJsGuest(H);\n})`;
}
