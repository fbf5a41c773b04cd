// Unit tests for the sandbox frame document (CSP, escaping); browser host, trusted side (runs under Node).
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { buildSrcdoc, sandboxCsp, workerSource } from './sandbox.js';

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

describe('worker source: the shared guest core plus the MessagePort adapter', () => {
  const core = readFileSync(new URL('../node/runner/guest-core.mjs', import.meta.url), 'utf8');
  const adapter = readFileSync(new URL('./worker-bootstrap.js', import.meta.url), 'utf8');

  it('embeds the same guest core the Node and Deno runner imports, without its export, as one strict script', () => {
    const src = workerSource(core, adapter);
    expect(src.startsWith("(() => {\n'use strict';\n")).toBe(true);
    expect(src).toContain('function createGuest(host) {');
    expect(src.slice(0, src.indexOf(adapter))).not.toMatch(/^\s*(import|export)\b/m);
    expect(src).toContain(core.slice(core.indexOf('{', core.indexOf('export function createGuest(')))); // the whole body, unchanged
    expect(src).toContain(adapter);
    expect(() => new Function(src)).not.toThrow(); // parses as a classic script
  });

  it('refuses a core that would not embed cleanly (a build-time invariant)', () => {
    expect(() => workerSource('function createGuest() {}', adapter)).toThrow(/exactly one/);
    expect(() => workerSource('export function createGuest(h) {}\nexport function createGuest(h) {}', adapter)).toThrow(/exactly one/);
    expect(() => workerSource("import x from 'y';\nexport function createGuest(h) {}", adapter)).toThrow(/other import\/export/);
  });
});
