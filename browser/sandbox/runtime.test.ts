// Unit tests for the sandbox frame document (CSP, escaping); browser host, trusted side (runs under Node).
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { commonsSource, guestModuleSource, sandboxCsp, workerSource } from './runtime.js';

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

describe('worker source: the captured built-ins, the shared guest core and Python guest, then the MessagePort adapter', () => {
  const read = (rel: string) => readFileSync(new URL(rel, import.meta.url), 'utf8');
  const guest = {
    commons: read('../../core/guest/commons.mjs'),
    core: read('../../core/guest/core.mjs'),
    pythonLimits: read('../../core/guest/python-limits.mjs'),
    python: read('../../core/guest/python.mjs'),
  };
  const adapter = read('./worker-bootstrap.js');
  /** JavaScript import/export statements (PY_PRELUDE's Python `import` lines carry no quotes). */
  const MODULE_SYNTAX = /^\s*export\b|^\s*import\s*(?:[\w*{][^'"\n]*\sfrom\s*)?['"]/m;

  it('embeds the same guest core the Node and Deno runner imports, without its export, as one strict script', () => {
    const src = workerSource(guest, adapter);
    expect(src.startsWith("(() => {\n'use strict';\n")).toBe(true);
    expect(src).toContain('function createGuest(host) {');
    expect(src.slice(0, src.indexOf(adapter))).not.toMatch(MODULE_SYNTAX);
    // the whole body, unchanged
    expect(src).toContain(
      guest.core.slice(guest.core.indexOf('{', guest.core.indexOf('export function createGuest('))),
    );
    expect(src).toContain(adapter);
    expect(() => new Function(src)).not.toThrow(); // parses as a classic script: no name declared twice
  });

  it('puts the captured built-ins first, as plain declarations, and the guest modules without their imports', () => {
    const src = workerSource(guest, adapter);
    const commonsAt = src.indexOf('const globalObject = globalThis;');
    expect(commonsAt).toBeGreaterThan(0);
    expect(commonsAt).toBeLessThan(src.indexOf('function createGuest(host) {'));
    expect(src.indexOf('function createGuest(host) {')).toBeLessThan(
      src.indexOf('function createPythonLimits(memoryMb) {'),
    );
    expect(src.indexOf('function createPythonLimits(memoryMb) {')).toBeLessThan(
      src.indexOf('function createPythonGuest(h) {'),
    );
    expect(src.indexOf('function createPythonGuest(h) {')).toBeLessThan(src.indexOf(adapter));
    expect(src).not.toContain("from './commons.mjs'");
    // each guest module keeps its line count (the import's lines stay as blank lines)
    for (const [text, name] of [
      [guest.core, 'createGuest'],
      [guest.pythonLimits, 'createPythonLimits'],
      [guest.python, 'createPythonGuest'],
    ] as const)
      expect(guestModuleSource(text, name).split('\n').length).toBe(text.split('\n').length);
  });

  it('refuses guest modules that would not embed cleanly (a build-time invariant)', () => {
    const core = (text: string) => () => workerSource({ ...guest, core: text }, adapter);
    expect(core('function createGuest() {}')).toThrow(/exactly one/);
    expect(core('export function createGuest(h) {}\nexport function createGuest(h) {}')).toThrow(/exactly one/);
    expect(core("import x from 'y';\nexport function createGuest(h) {}")).toThrow(/other import\/export/);
    expect(core("import { a } from 'y';\nexport function createGuest(h) {}")).toThrow(/other import\/export/);
    expect(() => commonsSource('const a = 1;')).toThrow(/export const/);
    expect(() => commonsSource("export const a = 1;\nimport b from 'c';")).toThrow(/other import\/export/);
    expect(() => commonsSource('export const a = 1;\nexport function f() {}')).toThrow(/other import\/export/);
  });
});
