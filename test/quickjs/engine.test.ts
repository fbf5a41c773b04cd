// The QuickJS engine (core/quickjs/) with the guest runtime inside it, in this test process: limits, errors, the
// capability path and the web globals the guest needs; test side (real QuickJS WebAssembly, real host channel).
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { NEVER_ABORTED, type CallOptions, type CapabilityHandler } from '../../core/exec/runtime.js';
import { guestScript, QUICKJS_GUEST_FILES } from '../../core/quickjs/guest-script.js';
import { LINEAR_RESERVE_MB } from '../../core/quickjs/limits.js';
import { heldBytesOf, maxPagesFor } from '../../core/quickjs/memory.js';
import { prepareQuickJsWasm, QUICKJS_WASM_SHA256, WASM_PAGE } from '../../core/quickjs/wasm.js';
import { TyError } from '../../core/errors.js';
import { rejection } from '../helpers/errors.js';
import { localEngine, localQuickJs } from '../helpers/quickjs-local.js';

// This process's main thread has V8's default stack (about 1 MiB): QuickJS's own limit must be reached first.
const STACK = 128 * 1024;
const none: CapabilityHandler = async (name) => {
  throw new TyError('E_CAPABILITY_DENIED', `${name} denied`);
};
function opts(timeoutMs = 5000, onCapability: CapabilityHandler = none, outputBytes = 2 * 1024 * 1024): CallOptions {
  return { signal: NEVER_ABORTED, onCapability, limits: { timeoutMs, outputBytes, memoryMb: 32 } };
}
const load = (source: string, memoryMb = 32) => localQuickJs(source, { memoryMb, stackBytes: STACK });

describe('the QuickJS binary', () => {
  const require = createRequire(import.meta.url);
  const bytes = new Uint8Array(readFileSync(require.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')));
  it('is checked against its pinned digest before it is compiled', async () => {
    const changed = bytes.slice();
    changed[changed.length - 1] = (changed[changed.length - 1] ?? 0) ^ 1;
    const e = await prepareQuickJsWasm(changed).catch((x: unknown) => x as Error & { code?: string });
    expect((e as { code?: string }).code).toBe('E_INTEGRITY');
    expect(QUICKJS_WASM_SHA256).toMatch(/^[0-9a-f]{64}$/);
  });
  it('gets an initial memory just above its stack, and no byte of code or data changes', async () => {
    const info = await prepareQuickJsWasm(bytes);
    expect(info.minPages).toBeLessThan(256);
    expect(info.minPages * WASM_PAGE).toBeGreaterThan(info.stackTop);
    expect(info.bytes.length).toBe(bytes.length);
    let diff = 0;
    for (let i = 0; i < bytes.length; i++) if (bytes[i] !== info.bytes[i]) diff++;
    expect(diff).toBeGreaterThan(0);
    expect(diff).toBeLessThanOrEqual(2); // the LEB128 of the memory import's minimum
    expect(maxPagesFor(info, 16) * WASM_PAGE).toBeGreaterThan(info.stackTop + 16 * 1024 * 1024);
    expect(() => new WebAssembly.Module(info.bytes as Uint8Array<ArrayBuffer>)).not.toThrow();
  });
  it('maps no more writable memory beyond what a sandbox holds than LINEAR_RESERVE_MB (the RLIMIT_DATA room)', async () => {
    const info = await prepareQuickJsWasm(bytes);
    const MiB = 1024 * 1024;
    // a started sandbox's linear memory (its guest booted) against what it is charged: the stack region left untouched
    const eng = await localEngine();
    let held = 0;
    const sb = await eng.create({
      memoryMb: 32,
      stackBytes: STACK,
      onMessage: () => {},
      onDeath: () => {},
      onHeld: (b) => (held = b),
    });
    const linear = sb.linearBytes;
    sb.destroy();
    expect(held).toBe(heldBytesOf(info, linear, STACK));
    expect((linear - held) / MiB).toBeGreaterThan(3); // the reserve is needed: most of the stack region is untouched
    expect((linear - held) / MiB).toBeLessThanOrEqual(LINEAR_RESERVE_MB - 0.5);
  });
  it('the guest script refuses a guest file with a second export', () => {
    const texts: Record<string, string> = {};
    for (const f of QUICKJS_GUEST_FILES)
      texts[f.path] =
        f.form === 'module' ? `export function ${f.fn}() {}` : f.form === 'commons' ? 'export const x = 1;' : 'let y;';
    expect(() => guestScript(texts)).not.toThrow();
    texts['core.mjs'] += '\nexport const x = 1;';
    expect(() => guestScript(texts)).toThrow(/other import\/export/);
  });
});

describe('calls', () => {
  it('runs a tool and answers JSON data, with capabilities going to the host handler', async () => {
    const seen: [string, unknown][] = [];
    const inst = await load(
      `export default async (args, ctx) => ({ n: args.n * 2, got: await ctx.storage.get('k'), s: ctx.settings })`,
    );
    const r = await inst.call(
      { n: 21 },
      {
        ...opts(5000, async (name, params) => {
          seen.push([name, params]);
          return 'v';
        }),
        settings: { unit: 'km' },
      },
    );
    expect(r).toEqual({ n: 42, got: 'v', s: { unit: 'km' } });
    expect(seen).toEqual([['storage.get', { key: 'k' }]]);
  });
  it('reports a thrown error with its name, message, code and the tool frames', async () => {
    const inst = await load(
      `function inner(x) {\n  const e = new TypeError('bad ' + x);\n  e.code = 'E_MY_CODE';\n  throw e;\n}\nexport default async (a) => inner(a.v)`,
    );
    const e = await rejection(inst.call({ v: 3 }, opts()));
    expect(e.code).toBe('E_TOOL_FAILED');
    expect(e.message).toBe('TypeError: bad 3');
    expect(e.data?.name).toBe('TypeError');
    expect(e.data?.toolCode).toBe('E_MY_CODE');
    const frames = e.data?.frames as { fn?: string; line: number }[];
    expect(frames[0]).toMatchObject({ fn: 'inner', line: 2 });
    expect(frames.some((f) => f.line === 6)).toBe(true);
    // the sandbox keeps running after a tool error
    expect(inst.alive).toBe(true);
  });
  it('keeps state between calls of a retained sandbox', async () => {
    const inst = await load(`let n = 0;\nexport default async () => ++n`);
    expect(await inst.call({}, opts())).toBe(1);
    expect(await inst.call({}, opts())).toBe(2);
  });
  it('refuses a module without a default export function', async () => {
    const e = await rejection(load('export default 1'));
    expect(e.code).toBe('E_TOOL_FAILED');
    expect(e.message).toMatch(/no default export function/);
  });
  it('finds no module but the tool itself', async () => {
    const inst = await load(
      `export default async () => { try { await import('node:fs'); return 'loaded' } catch (e) { return e.name } }`,
    );
    expect(await inst.call({}, opts())).not.toBe('loaded');
  });
});

describe('limits', () => {
  it('an endless loop is E_TIMEOUT at the call deadline and the sandbox is gone', async () => {
    const inst = await load('export default async () => { while (true) {} }');
    const t0 = Date.now();
    const e = await rejection(inst.call({}, opts(300)));
    expect(e.code).toBe('E_TIMEOUT');
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect(inst.alive).toBe(false);
  });
  it('a memory bomb is E_MEMORY_LIMIT and the sandbox is gone', async () => {
    const inst = await load(
      'export default async () => { const a = []; while (true) a.push(new Array(1e6).fill(1)); }',
    );
    const e = await rejection(inst.call({}, opts(20_000)));
    expect(e.code).toBe('E_MEMORY_LIMIT');
    expect(inst.alive).toBe(false);
  });
  it('a bomb that pins its memory globally and allocates in small pieces is E_MEMORY_LIMIT too', async () => {
    const inst = await load(
      'export default async () => { globalThis.keep = []; while (true) keep.push({ x: Math.random() }); }',
    );
    const e = await rejection(inst.call({}, opts(60_000)));
    expect(e.code).toBe('E_MEMORY_LIMIT');
  });
  it('a tool that catches the out-of-memory error still loses its sandbox', async () => {
    const inst = await load(
      'export default async () => { const a = []; try { while (true) a.push(new Array(1e5).fill(1)); } catch { return "survived" } }',
    );
    const e = await rejection(inst.call({}, opts(20_000)));
    expect(e.code).toBe('E_MEMORY_LIMIT');
  });
  it('the memory limit is the limit asked for: 16 MiB of data fit in 32, 40 MiB do not', async () => {
    const src =
      'export default async (a) => { const b = new Uint8Array(a.mb * 1024 * 1024); b.fill(1); return b.length }';
    expect(await (await load(src)).call({ mb: 16 }, opts())).toBe(16 * 1024 * 1024);
    expect((await rejection((await load(src)).call({ mb: 40 }, opts()))).code).toBe('E_MEMORY_LIMIT');
  });
  it('deep recursion is a RangeError the tool may catch; uncaught it is E_TOOL_FAILED RangeError', async () => {
    const caught = await load(
      'function f(n) { return f(n + 1) + 1 }\nexport default async () => { try { f(0) } catch (e) { return e.message } }',
    );
    expect(await caught.call({}, opts())).toBe('stack overflow');
    expect(caught.alive).toBe(true);
    const uncaught = await load('function f(n) { return f(n + 1) + 1 }\nexport default async () => f(0)');
    const e = await rejection(uncaught.call({}, opts()));
    expect(e.code).toBe('E_TOOL_FAILED');
    expect(e.message).toBe('RangeError: Maximum call stack size exceeded');
    expect(e.data?.name).toBe('RangeError');
  });
  it('a result over the output cap is E_OUTPUT_LIMIT, never truncated', async () => {
    const inst = await load("export default async () => 'x'.repeat(3 * 1024 * 1024)", 64);
    const e = await rejection(inst.call({}, opts(5000, none, 1024 * 1024)));
    expect(e.code).toBe('E_OUTPUT_LIMIT');
  });
});
