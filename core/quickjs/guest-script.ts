// Builds the one script every QuickJS sandbox evaluates first: what QuickJS lacks (core/guest/quickjs/), the captured
// built-ins, the guest core and the QuickJS entry point, in one strict function scope; host side of the QuickJS
// sandbox, run once per build (the CLI bundle, the browser build) or per process.
// commons.mjs and core.mjs become the same text here as in the Node entry and the browser worker's script
// (test/contracts/guest-globals.test.ts compares them).

/** A guest file by its path under core/guest/ and how it enters the script. */
export interface GuestFile {
  path: string;
  /**
   * `module`: its one `export function <fn>(` made plain; `commons`: its `export const`s made plain; `script`: as is.
   */
  form: 'module' | 'commons' | 'script';
  /** For `module`: the function it exports. */
  fn?: string;
}

/** The guest files a QuickJS sandbox runs, in order. */
export const QUICKJS_GUEST_FILES: readonly GuestFile[] = [
  { path: 'quickjs/engine.mjs', form: 'module', fn: 'installEngineParity' },
  { path: 'quickjs/events.mjs', form: 'module', fn: 'installEvents' },
  { path: 'quickjs/encoding.mjs', form: 'module', fn: 'installEncoding' },
  { path: 'quickjs/url.mjs', form: 'module', fn: 'installUrl' },
  { path: 'quickjs/fetch.mjs', form: 'module', fn: 'installFetchClasses' },
  { path: 'quickjs/timers.mjs', form: 'module', fn: 'installTimers' },
  { path: 'quickjs/misc.mjs', form: 'module', fn: 'installMisc' },
  { path: 'quickjs/intl.mjs', form: 'module', fn: 'installIntl' },
  { path: 'quickjs/install.mjs', form: 'module', fn: 'installWebGlobals' },
  { path: 'commons.mjs', form: 'commons' },
  { path: 'core.mjs', form: 'module', fn: 'createGuest' },
  { path: 'quickjs/entry.js', form: 'script' },
];

/** The file name QuickJS reports for frames of the guest script (never the tool's TOOL_MODULE_URL). */
export const GUEST_SCRIPT_NAME = 'tysandbox:///guest.js';

/** A guest module's import of a sibling guest module, by name: `import { A, B } from './commons.mjs';`. */
const GUEST_IMPORT = /^import \{[^}]*\} from '\.\/[\w-]+\.mjs';$/gm;
/** Any JavaScript import or export statement. */
const MODULE_SYNTAX = /^\s*export\b|^\s*import\s*(?:[\w*{][^'"\n]*\sfrom\s*)?['"]/m;

/**
 * A guest module that exports one function, as part of a script: its imports of sibling guest modules become blank
 * lines (commons.mjs comes earlier in the script) and its one `export` is removed (as browser/sandbox/runtime.ts
 * guestModuleSource does for the worker).
 * @throws Error when the text does not have exactly one `export function NAME(` and no other import/export statement.
 */
export function moduleAsScript(text: string, name: string): string {
  const decl = `export function ${name}(`;
  const at = text.indexOf(decl);
  if (at === -1 || text.indexOf(decl, at + 1) !== -1)
    throw new Error(`the guest module must contain exactly one ${name} export`);
  const body = (text.slice(0, at) + text.slice(at + 'export '.length)).replace(GUEST_IMPORT, (m) =>
    m.replace(/[^\n]/g, ''),
  );
  if (MODULE_SYNTAX.test(body))
    throw new Error(`the guest module of ${name} must not contain other import/export statements`);
  return body;
}

/** core/guest/commons.mjs as part of a script: its `export const` declarations made plain. */
export function commonsAsScript(text: string): string {
  const body = text.replace(/^export (?=const )/gm, '');
  if (body === text) throw new Error('the captured built-ins must be `export const` declarations');
  if (MODULE_SYNTAX.test(body))
    throw new Error('the captured built-ins must not contain other import/export statements');
  return body;
}

/**
 * The guest script: `(function (H) { 'use strict'; ...; return { receive, fire: web.fire }; })`, an expression whose
 * value is the function a sandbox calls with its host functions (core/guest/quickjs/entry.js says what it holds).
 * @param texts the text of each file of QUICKJS_GUEST_FILES, by path.
 * @throws Error when a file is missing or not of its form (a build-time invariant).
 */
export function guestScript(texts: Readonly<Record<string, string>>): string {
  const parts: string[] = [];
  for (const f of QUICKJS_GUEST_FILES) {
    const text = texts[f.path];
    if (typeof text !== 'string') throw new Error(`guest file ${f.path} missing`);
    if (f.form === 'commons') {
      // the web globals first, so the built-ins captured next are theirs
      parts.push('const web = installWebGlobals(globalThis, H);', commonsAsScript(text));
    } else if (f.form === 'module') parts.push(moduleAsScript(text, f.fn!));
    else {
      if (MODULE_SYNTAX.test(text)) throw new Error(`${f.path} must not contain import/export statements`);
      parts.push(text);
    }
  }
  return `(function (H) {\n'use strict';\n${parts.join('\n')}\nreturn { receive, fire: web.fire };\n})`;
}
