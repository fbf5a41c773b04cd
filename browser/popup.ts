// Host-owned popup windows for trusted host tools (custom HTML or one exact https origin), through the gate's popup
// rules; browser host, trusted side.
import { TyError } from '../core/errors.js';
import type { Gate, Principal } from '../core/exec/runtime.js';
import type { ToolManifest } from '../protocol/manifest.js';
import { srcdocForSandboxedFrame } from './trusted-html.js';

export interface PopupRequest {
  principal: Principal;
  /** The resolved tool revision asking; only `trusted-native` tools may open windows. */
  toolName: string;
  revision: string;
  manifest: ToolManifest;
  /** `custom-html`: show `html` in a host-owned window; `origin`: open `url` (https) in a new browsing context. */
  kind: 'custom-html' | 'origin';
  html?: string;
  url?: string;
  /** Window size in CSS pixels (clamped to 200..2000). */
  width?: number;
  height?: number;
}

export interface HostPopup {
  /** The gate target that was authorized: `custom-html` or the exact origin `https://host[:port]`. */
  target: string;
  /** The host-owned window (custom-html only; an origin popup is opened with noopener and has no handle). */
  window: Window | null;
  close(): void;
}

/** CSP of custom-HTML content: inline script and style only, data: images; no network, frames, forms or objects. */
export const POPUP_CONTENT_CSP =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'none'; frame-src 'none'; object-src 'none'; form-action 'none'; base-uri 'none'";

const clamp = (n: number | undefined, d: number) => Math.min(2000, Math.max(200, Math.round(n ?? d)));
const escAttr = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * Open a popup for a trusted host tool after the gate allows `popup(TARGET)`. Sandboxed code never reaches
 * this (its worker has no `open`, its frame has no `allow-popups`).
 * - custom-html: a same-origin blank window owned by the host, holding one `<iframe sandbox="allow-scripts">`
 *   (opaque origin) whose srcdoc is the HTML under POPUP_CONTENT_CSP.
 * - origin: `url` must be https without credentials; the gate target is exactly its origin; opened with
 *   `noopener,noreferrer`.
 * @throws TyError E_CAPABILITY_DENIED (not a trusted-native tool, bad URL, gate refusal, browser blocked the
 *   window), E_INVALID_ARGS (missing html/url), E_PAUSED (from the gate).
 */
export async function openHostPopup(
  gate: Gate,
  req: PopupRequest,
  opts: { signal?: AbortSignal; open?: (url: string, target: string, features: string) => Window | null } = {},
): Promise<HostPopup> {
  if (req.manifest.execution.kind !== 'trusted-native')
    throw new TyError('E_CAPABILITY_DENIED', 'only trusted host tools may open windows');
  const open = opts.open ?? ((u, t, f) => window.open(u, t, f));
  const size = `width=${clamp(req.width, 640)},height=${clamp(req.height, 480)}`;
  let target: string;
  let url: URL | undefined;
  if (req.kind === 'custom-html') {
    if (typeof req.html !== 'string') throw new TyError('E_INVALID_ARGS', 'a custom-html popup needs html');
    target = 'custom-html';
  } else {
    if (typeof req.url !== 'string') throw new TyError('E_INVALID_ARGS', 'an origin popup needs a url');
    try {
      url = new URL(req.url);
    } catch {
      throw new TyError('E_CAPABILITY_DENIED', 'popup url does not parse');
    }
    if (url.protocol !== 'https:') throw new TyError('E_CAPABILITY_DENIED', 'popup urls must be https');
    if (url.username || url.password) throw new TyError('E_CAPABILITY_DENIED', 'popup urls must not carry credentials');
    target = url.origin;
  }
  await gate.authorize(
    { principal: req.principal, kind: 'popup', toolName: req.toolName, revision: req.revision, target },
    opts.signal,
  );
  if (url) {
    open(url.href, '_blank', `noopener,noreferrer,popup,${size}`);
    return { target, window: null, close() {} };
  }
  const w = open('about:blank', '_blank', `popup,${size}`);
  if (!w) throw new TyError('E_CAPABILITY_DENIED', 'the browser blocked the popup window');
  try {
    w.opener = null;
  } catch {
    /* read-only in some browsers */
  }
  const doc = w.document;
  doc.title = `${req.toolName}`;
  const frame = doc.createElement('iframe');
  frame.setAttribute('sandbox', 'allow-scripts');
  frame.setAttribute('referrerpolicy', 'no-referrer');
  frame.style.cssText = 'border:0;position:fixed;inset:0;width:100%;height:100%';
  frame.srcdoc = srcdocForSandboxedFrame(
    `<!doctype html><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${escAttr(POPUP_CONTENT_CSP)}">${req.html}`,
  );
  doc.body.replaceChildren(frame);
  return {
    target,
    window: w,
    close() {
      if (!w.closed) w.close();
    },
  };
}
