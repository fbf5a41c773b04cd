// Unit tests for the sandbox frame document (CSP, escaping); browser host, trusted side (runs under Node).
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { sandboxCsp, workerSource } from './runtime.js';

describe('sandbox frame document', () => {
  const html = readFileSync(new URL('./sandbox-frame.html', import.meta.url), 'utf8');
  const boot = readFileSync(new URL('./sandbox-frame.js', import.meta.url), 'utf8');
  it('the CSP forbids every network, storage, frame and object path and allows only self (the bootstrap) and blob scripts', () => {
    const csp = sandboxCsp();
    for (const d of [
      "default-src 'none'",
      "connect-src 'none'",
      "object-src 'none'",
      "frame-src 'none'",
      "child-src 'none'",
      "img-src 'none'",
      "form-action 'none'",
      "base-uri 'none'",
      'worker-src blob:',
    ]) {
      expect(csp).toContain(d);
    }
    expect(csp).toContain("script-src 'self' blob: 'wasm-unsafe-eval'");
    expect(csp).not.toMatch(/'unsafe-inline'|'unsafe-eval'|\*|https?:|data:/);
  });
  it('sandbox-frame.html carries exactly that CSP and one external script, no inline script', () => {
    expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="${sandboxCsp()}">`);
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).toContain('<script src="sandbox-frame.js"></script>');
  });
  it('the bootstrap narrows script-src to blob: before anything runs, revokes the worker URL and posts only to the host origin', () => {
    expect(boot.indexOf('narrow.content = "script-src blob: \'wasm-unsafe-eval\'; worker-src blob:"')).toBeGreaterThan(
      0,
    );
    expect(boot.indexOf('narrow.content')).toBeLessThan(boot.indexOf('new Worker('));
    expect(boot).toContain('URL.revokeObjectURL(url)');
    expect(boot).toMatch(
      /parent\.postMessage\(\{ type: 'tysandbox-hello', token \}, hostOrigin \|\| '\*', \[work\.port1, control\.port1\]\)/,
    );
  });
});

describe('worker source: the shared guest core plus the MessagePort adapter', () => {
  const core = readFileSync(new URL('../../core/guest/core.mjs', import.meta.url), 'utf8');
  const adapter = readFileSync(new URL('./worker-bootstrap.js', import.meta.url), 'utf8');

  it('embeds the same guest core the Node and Deno runner imports, without its export, as one strict script', () => {
    const src = workerSource(core, adapter);
    expect(src.startsWith("(() => {\n'use strict';\n")).toBe(true);
    expect(src).toContain('function createGuest(host) {');
    expect(src.slice(0, src.indexOf(adapter))).not.toMatch(/^\s*(import|export)\b/m);
    // the whole body, unchanged
    expect(src).toContain(core.slice(core.indexOf('{', core.indexOf('export function createGuest('))));
    expect(src).toContain(adapter);
    expect(() => new Function(src)).not.toThrow(); // parses as a classic script
  });

  it('refuses a core that would not embed cleanly (a build-time invariant)', () => {
    expect(() => workerSource('function createGuest() {}', adapter)).toThrow(/exactly one/);
    expect(() => workerSource('export function createGuest(h) {}\nexport function createGuest(h) {}', adapter)).toThrow(
      /exactly one/,
    );
    expect(() => workerSource("import x from 'y';\nexport function createGuest(h) {}", adapter)).toThrow(
      /other import\/export/,
    );
  });
});
