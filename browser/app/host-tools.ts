// The app's built-in trusted host tool `show_page` (a popup of custom HTML or one https page, after the gate allows
// popup(TARGET)); browser app, trusted side.
import { TyError } from '../../core/errors.js';
import type { NativeContext } from '../../core/exec/invoke.js';
import { revisionId } from '../../core/revisions/registry.js';
import type { ToolManifest } from '../../protocol/manifest.js';
import type { BrowserHost } from '../host.js';
import { openHostPopup } from '../popup.js';

/**
 * `show_page`: shows the person a page in a host-owned popup window. Arguments: `html` (custom HTML, shown in an
 * opaque-origin frame under POPUP_CONTENT_CSP: no network) or `url` (an https page, opened with noopener), and
 * Each use is a `popup(custom-html)` or `popup(https://ORIGIN)` capability question, asked inline
 * at the call. Result: `{ shown: true, target }`. Errors: E_CAPABILITY_DENIED (refused, not https, the browser
 * blocked the window), E_INVALID_ARGS (neither or both of html and url).
 */
export const SHOW_PAGE_MANIFEST: ToolManifest = {
  name: 'show_page',
  description:
    'Show the person a page in a popup window: either `html` (custom HTML, shown in an isolated frame with no network) or `url` (an https page). The person is asked first.',
  parameters: {
    type: 'object',
    properties: {
      html: { type: 'string', maxLength: 1048576, description: 'custom HTML to show' },
      url: { type: 'string', maxLength: 2048, description: 'an https URL to open' },
    },
    additionalProperties: false,
  },
  execution: { kind: 'trusted-native', entry: 'show_page' },
};

/** Names of the built-in host tools (installed on first start, offered only once the person switches them on). */
export const HOST_TOOL_NAMES: readonly string[] = [SHOW_PAGE_MANIFEST.name];

/**
 * Register the host tools' native implementations for this page (natives live in memory only, by revision) and,
 * when `install` (first start), install them; a person who removed one later keeps it removed.
 */
export async function installHostTools(host: BrowserHost, opts: { install: boolean }): Promise<void> {
  const revision = opts.install
    ? (await host.registry.install(SHOW_PAGE_MANIFEST)).revision
    : await revisionId(SHOW_PAGE_MANIFEST);
  host.registry.registerNative(revision, showPage(host));
}

function showPage(host: BrowserHost) {
  return async (args: unknown, ctx: unknown): Promise<unknown> => {
    const { identity, signal } = ctx as NativeContext;
    const a = args as { html?: string; url?: string };
    if ((a.html === undefined) === (a.url === undefined))
      throw new TyError('E_INVALID_ARGS', 'show_page needs exactly one of html and url');
    const base = {
      principal: identity.principal,
      toolName: identity.name,
      revision: identity.revision,
      manifest: identity.manifest,
    };
    const p =
      a.html !== undefined
        ? await openHostPopup(host.gate, { ...base, kind: 'custom-html', html: a.html }, { signal })
        : await openHostPopup(host.gate, { ...base, kind: 'origin', url: a.url! }, { signal });
    return { shown: true, target: p.target };
  };
}
