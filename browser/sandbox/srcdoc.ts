// The srcdoc mode of the sandbox frame: the frame's document inline (`<iframe sandbox="allow-scripts" srcdoc>`) for a
// page that controls its own CSP and cannot serve the frame files, with the checks that name the page CSP directive
// that forbids it; browser host, trusted side.
//
// A srcdoc document inherits the embedding page's Content-Security-Policy (CSP Level 3 §4.2.1, local-scheme documents
// take their policy container from their creator), and so does the Blob worker it starts. Everything the frame and
// the worker do must therefore be allowed by the page's policy as well as by the frame's own meta policy:
//   script-src  'sha256-<bootstrap hash>' (the inline bootstrap, sandbox-frame.js) and blob: (the tool module)
//   worker-src  blob: (the worker)
//   script-src  'wasm-unsafe-eval' (Python: Pyodide compiles WebAssembly)
import FRAME_SCRIPT from './sandbox-frame.js?raw';
import { TyError } from '../../core/errors.js';

/** The inline bootstrap of a srcdoc frame: sandbox-frame.js as it is, byte for byte (its hash is what pages allow). */
export const SRCDOC_SCRIPT: string = FRAME_SCRIPT;

let hashed: Promise<string> | undefined;
/** The CSP source of the bootstrap, `'sha256-<base64>'` (SHA-256 over its UTF-8 bytes, CSP Level 3 §8.4). */
export function srcdocScriptHash(): Promise<string> {
  hashed ??= crypto.subtle.digest('SHA-256', new TextEncoder().encode(SRCDOC_SCRIPT)).then((d) => {
    let bin = '';
    for (const b of new Uint8Array(d)) bin += String.fromCharCode(b);
    return `'sha256-${btoa(bin)}'`;
  });
  return hashed;
}

/** The srcdoc frame's own policy: sandboxCsp() with the bootstrap's hash in place of 'self' (it has no network URL). */
export function srcdocCsp(hash: string): string {
  return [
    "default-src 'none'",
    `script-src ${hash} blob: 'wasm-unsafe-eval'`,
    'worker-src blob:',
    "connect-src 'none'",
    "img-src 'none'",
    "media-src 'none'",
    "font-src 'none'",
    "style-src 'none'",
    "object-src 'none'",
    "frame-src 'none'",
    "child-src 'none'",
    "manifest-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
  ].join('; ');
}

/**
 * The frame document: its policy, no referrer, the handshake's token and the page origin in a meta element (hex and a
 * percent-encoded origin: no markup can come in through them), and the bootstrap inline.
 */
export async function srcdocDocument(token: string, hostOrigin: string): Promise<string> {
  if (!/^[0-9a-f]{32}$/.test(token)) throw new TyError('E_SANDBOX_FAILED', 'bad frame token');
  const hash = await srcdocScriptHash();
  return (
    `<!doctype html><html><head><meta charset="utf-8">` +
    `<meta http-equiv="Content-Security-Policy" content="${srcdocCsp(hash)}">` +
    `<meta name="referrer" content="no-referrer">` +
    `<meta name="tysandbox" content="t=${token}&amp;o=${encodeURIComponent(hostOrigin)}">` +
    `<script>${SRCDOC_SCRIPT}</script></head><body></body></html>`
  );
}

/** The error for a page CSP directive that forbids the srcdoc frame, naming it and what to add. */
export function srcdocBlocked(directive: string, needs: string): TyError {
  return new TyError(
    'E_SANDBOX_UNAVAILABLE',
    `the page's Content-Security-Policy directive ${directive} forbids the srcdoc sandbox frame: it needs ${needs} ` +
      `(docs/browser.md "srcdoc mode"), or use the default frame mode (sandbox-frame.html)`,
    { directive },
  );
}

/**
 * The inline frame and its worker inherit a page's Trusted Types requirement, and the bootstrap starts its worker from
 * a Blob URL string: a page that requires Trusted Types cannot have a srcdoc frame (its own default frame has its own
 * policy).
 */
const TRUSTED_TYPES = new Set(['require-trusted-types-for', 'trusted-types']);

/** The error for a directive a probe violated: Trusted Types named as such, any other with what to add. */
function blocked(directive: string, needs: string): TyError {
  if (!TRUSTED_TYPES.has(directive)) return srcdocBlocked(directive, needs);
  return new TyError(
    'E_SANDBOX_UNAVAILABLE',
    `the page's Content-Security-Policy directive ${directive} forbids the srcdoc sandbox frame: the inline frame ` +
      `and its worker inherit the Trusted Types requirement, which its Blob worker cannot meet; use the default ` +
      `frame mode (sandbox-frame.html, a document with its own policy) (docs/browser.md "srcdoc mode")`,
    { directive },
  );
}

/** Run `probe` and report the first CSP violation it caused on this page (effective directive), if any. */
async function violationOf(probe: () => Promise<unknown>): Promise<string | undefined> {
  let seen: string | undefined;
  const on = (ev: SecurityPolicyViolationEvent): void => {
    seen ??= ev.effectiveDirective || ev.violatedDirective;
  };
  document.addEventListener('securitypolicyviolation', on);
  try {
    await probe().catch(() => undefined);
    // violation events are queued as tasks: let them arrive
    await new Promise((r) => setTimeout(r, 0));
  } finally {
    document.removeEventListener('securitypolicyviolation', on);
  }
  return seen;
}

/**
 * Check, before a srcdoc frame starts, what the page's policy must allow beyond the inline bootstrap: a Blob worker
 * (worker-src), a Blob module (script-src: the tool's code) and, for Python, WebAssembly (script-src
 * 'wasm-unsafe-eval'). Each probe is inert: an empty worker terminated at once, an empty classic script, an 8-byte
 * empty WebAssembly module. The bootstrap's hash is checked by the frame's hello (openSandboxFrame).
 * @throws TyError E_SANDBOX_UNAVAILABLE naming the directive
 */
export async function checkSrcdocPolicy(python: boolean): Promise<void> {
  const url = URL.createObjectURL(new Blob([''], { type: 'text/javascript' }));
  try {
    const w = await violationOf(async () => new Worker(url).terminate());
    if (w) throw blocked(w, 'blob: in worker-src (or script-src)');
    const s = await violationOf(
      () =>
        new Promise((resolve) => {
          const el = document.createElement('script');
          el.src = url;
          el.onload = el.onerror = () => {
            el.remove();
            resolve(undefined);
          };
          document.head.append(el);
        }),
    );
    if (s) throw blocked(s, 'blob: in script-src (the tool module is a Blob)');
  } finally {
    URL.revokeObjectURL(url);
  }
  if (python) {
    const wasm = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]);
    const v = await violationOf(async () => new WebAssembly.Module(wasm));
    if (v) throw blocked(v, "'wasm-unsafe-eval' in script-src (Python compiles WebAssembly)");
  }
}
