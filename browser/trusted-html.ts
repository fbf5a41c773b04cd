// The page's one Trusted Types policy (`tysandbox`): the only way this code base turns a string into HTML; browser
// host, trusted side.

/** The policy's name; a page that requires Trusted Types lists it in its CSP (`trusted-types tysandbox`). */
export const TRUSTED_TYPES_POLICY_NAME = 'tysandbox';

/** The part of the Trusted Types API used here (https://w3c.github.io/trusted-types/dist/spec/). */
export interface HtmlPolicy {
  createHTML(input: string): string;
  createScriptURL(input: string): string;
}

interface TrustedTypesFactory {
  createPolicy(name: string, rules: { createHTML(s: string): string; createScriptURL(s: string): string }): HtmlPolicy;
}

let policy: HtmlPolicy | null | undefined;

/**
 * The policy, created once (null where the browser has no Trusted Types: strings then go to the sinks as they are).
 * Its createHTML passes the string through unchanged, so it is handed to exactly two callers, each of which decides
 * what the string may hold: DOMPurify (browser/app/render/sanitize.ts: the sanitizer parses with it and returns
 * nodes, never a string) and `srcdocForSandboxedFrame` (HTML that runs only in an opaque-origin sandboxed frame).
 * createScriptURL refuses everything: no code is ever loaded from a computed URL. Null too when the page's CSP does
 * not allow this name (the app's CSP does; test/app/render.test.ts sees no Trusted Types violation).
 */
export function htmlPolicy(): HtmlPolicy | null {
  if (policy !== undefined) return policy;
  const tt = (globalThis as { trustedTypes?: TrustedTypesFactory }).trustedTypes;
  try {
    policy = tt
      ? tt.createPolicy(TRUSTED_TYPES_POLICY_NAME, {
          createHTML: (s) => s,
          createScriptURL: () => {
            throw new TypeError('tysandbox loads no script from a computed URL');
          },
        })
      : null;
  } catch {
    // a page whose CSP does not list the name: strings go to the sinks, which that page's policy then judges
    policy = null;
  }
  return policy;
}

/**
 * `html` as the value of an `<iframe sandbox="allow-scripts">` element's `srcdoc` (TrustedHTML under Trusted Types):
 * only for frames without `allow-same-origin`, whose document has an opaque origin and its own CSP meta element.
 */
export function srcdocForSandboxedFrame(html: string): string {
  const p = htmlPolicy();
  return p ? p.createHTML(html) : html;
}
