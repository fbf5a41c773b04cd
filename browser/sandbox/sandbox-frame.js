// Sandbox frame bootstrap: runs INSIDE the opaque `sandbox="allow-scripts"` frame (untrusted side), loaded by
// sandbox-frame.html or inline in a srcdoc frame (srcdoc.ts); starts the Blob worker and hands the host its ports.
// A static file served from the app's origin (not inline, not eval'd), so the host page needs no 'unsafe-inline' and
// the frame, a network document, gets its own CSP instead of inheriting the page's (srcdoc, blob: and data: frames
// inherit it, and a page's `script-src 'self'` would then forbid the worker's Blob modules and WebAssembly).
// URL fragment (or, in a srcdoc frame, <meta name="tysandbox">): t=<token>&o=<host origin>. Ports handed over in the
// hello: [0] the worker's protocol port, [1] the frame's own control port (heartbeat echo, CSP violation reports, the
// worker's boot).
(() => {
  'use strict';
  // A network frame reads them from its URL fragment; a srcdoc frame (about:srcdoc) from its meta element.
  const meta = document.querySelector('meta[name="tysandbox"]');
  const params = new URLSearchParams(location.hash.slice(1) || (meta ? meta.getAttribute('content') : '') || '');
  const token = params.get('t') || '';
  const hostOrigin = params.get('o') || '';
  // The frame's meta CSP allows scripts from 'self' (this file); from now on only Blob scripts and WebAssembly,
  // so neither the worker (its policy is copied from this document when it is created) nor anything later can
  // load a script from the app's origin. Policies only ever add restrictions.
  const narrow = document.createElement('meta');
  narrow.httpEquiv = 'Content-Security-Policy';
  narrow.content = "script-src blob: 'wasm-unsafe-eval'; worker-src blob:";
  document.head.appendChild(narrow);

  const work = new MessageChannel();
  const control = new MessageChannel();
  const report = (msg) => {
    try {
      control.port2.postMessage(msg);
    } catch {
      /* host gone */
    }
  };
  document.addEventListener('securitypolicyviolation', (ev) => {
    report({
      type: 'csp-violation',
      directive: String(ev.effectiveDirective || ev.violatedDirective || ''),
      blocked: String(ev.blockedURI || '').slice(0, 200),
    });
  });
  let booted = false;
  control.port2.onmessage = (ev) => {
    const m = ev.data;
    if (m === null || typeof m !== 'object') return;
    if (m.type === 'ping') return report({ type: 'pong', n: m.n });
    if (m.type !== 'boot' || booted || typeof m.workerSource !== 'string') return;
    booted = true;
    const url = URL.createObjectURL(new Blob([m.workerSource], { type: 'text/javascript' }));
    let w;
    try {
      w = new Worker(url, { name: 'tysandbox' });
    } catch (e) {
      report({ type: 'boot-failed', directive: 'worker-src', message: String(e?.message).slice(0, 300) });
      return;
    } finally {
      URL.revokeObjectURL(url);
    }
    // The worker's own code catches its errors; one reaching here means the worker never started (its script was
    // refused, e.g. by a CSP header the server added to this document).
    w.onerror = (e) => {
      e.preventDefault();
      report({ type: 'worker-error', message: String(e.message || '').slice(0, 300) });
    };
    w.postMessage(null, [work.port2]);
    if (typeof m.extraScript === 'string') {
      // Tests only (probes from inside the frame): a Blob script, allowed by the frame's CSP like the worker.
      const s = document.createElement('script');
      s.src = URL.createObjectURL(new Blob([m.extraScript], { type: 'text/javascript' }));
      document.body.appendChild(s);
    }
    report({ type: 'booted' });
  };
  parent.postMessage({ type: 'tysandbox-hello', token }, hostOrigin || '*', [work.port1, control.port1]);
})();
