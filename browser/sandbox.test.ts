// Unit tests for the sandbox frame document (CSP, escaping); browser host, trusted side (runs under Node).
import { describe, expect, it } from 'vitest';
import { buildSrcdoc, sandboxCsp } from './sandbox.js';

describe('sandbox frame document', () => {
  it('the CSP forbids every network, storage, frame and object path and allows only nonce/blob scripts', () => {
    const csp = sandboxCsp('abc');
    for (const d of ["default-src 'none'", "connect-src 'none'", "object-src 'none'", "frame-src 'none'", "child-src 'none'", "img-src 'none'", "form-action 'none'", "base-uri 'none'", 'worker-src blob:']) {
      expect(csp).toContain(d);
    }
    expect(csp).toContain("script-src 'nonce-abc' blob: 'wasm-unsafe-eval'");
    expect(csp).not.toMatch(/'unsafe-inline'|'unsafe-eval'|\*|https?:|data:/);
  });
  it('worker source cannot break out of the bootstrap script element', () => {
    const doc = buildSrcdoc({ nonce: 'n', token: 't', hostOrigin: 'https://app.example', workerSource: '</script><script>alert(1)</script>\u2028' });
    expect(doc.match(/<script/g)).toHaveLength(1);
    expect(doc).not.toContain('</script><script>');
    expect(doc).toContain('\\u003c/script\\u003e');
  });
  it('the bootstrap revokes the worker URL and posts its port only to the host origin', () => {
    const doc = buildSrcdoc({ nonce: 'n', token: 'tok', hostOrigin: 'https://app.example' });
    expect(doc).toContain('URL.revokeObjectURL(url)');
    expect(doc).toContain('const hostOrigin = "https://app.example"');
    expect(doc).toMatch(/parent\.postMessage\(\{ type: "tysandbox-hello", token \}, hostOrigin, \[ch\.port1\]\)/);
    expect(doc).toContain('<meta http-equiv="Content-Security-Policy"');
  });
});
