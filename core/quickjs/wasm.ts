// The QuickJS WebAssembly binary (@jitl/quickjs-wasmfile-release-sync): its pinned digest, the check, and the one
// change made before compiling it (a smaller initial memory); runs wherever QuickJS sandboxes are hosted (the CLI's
// sandbox host process, the browser's sandbox worker), sandbox side, before any tool code.
//
// Why the change: the module imports its linear memory with a minimum of 256 pages (16 MiB, emscripten's default
// INITIAL_MEMORY) although its static data and its 5 MiB shadow stack end near 5.1 MiB. Every sandbox is a memory of
// its own; V8 counts each one's committed size as external memory and runs full garbage collections as that grows, so
// 16 MiB per sandbox made starting many sandboxes slow (test/bench/quickjs.bench.mjs) and counted 16 MiB per sandbox
// against RLIMIT_DATA. The minimum is lowered to what the stack needs (the module's own __stack_pointer initial
// value, rounded up to a page, plus one); the heap grows with memory.grow as emscripten's sbrk asks. Only the import's
// limits change, in place (a padded LEB128 of the same length), so no code, data or offset moves.

/** Version of the package the binary comes from (package.json pins it exactly). */
export const QUICKJS_PACKAGE = '@jitl/quickjs-wasmfile-release-sync@0.32.0';
/** sha-256 of dist/emscripten-module.wasm of QUICKJS_PACKAGE, lower-case hex. */
export const QUICKJS_WASM_SHA256 = '105c3bed22d457e43e3d1c3c1c6959fda62a8fe06f0fc8a985303c3a2be72232';
/** Its size in bytes. */
export const QUICKJS_WASM_BYTES = 503134;
/** Bytes per WebAssembly page. */
export const WASM_PAGE = 65536;

/** What prepareQuickJsWasm found in the binary. */
export interface QuickJsWasmInfo {
  /** The binary to compile (a copy, its memory import's minimum lowered when that could be done safely). */
  bytes: Uint8Array;
  /** Pages the imported memory must have at least (the lowered minimum, else the module's own). */
  minPages: number;
  /** Pages the module allows at most (its memory import's maximum). */
  maxPages: number;
  /** Where the shadow stack starts (the top of static data plus the stack), bytes. */
  stackTop: number;
}

/** Lower-case hex sha-256 of `bytes` (WebCrypto, on every host). */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
  let s = '';
  for (const b of d) s += b.toString(16).padStart(2, '0');
  return s;
}

/** A LEB128 reader over a WebAssembly binary (Core spec §5.2.2); throws past the end. */
class Reader {
  at: number;
  constructor(
    readonly b: Uint8Array,
    at: number,
  ) {
    this.at = at;
  }
  byte(): number {
    if (this.at >= this.b.length) throw new Error('truncated');
    return this.b[this.at++]!;
  }
  u32(): number {
    let r = 0;
    let shift = 0;
    for (let i = 0; i < 5; i++) {
      const x = this.byte();
      r |= (x & 0x7f) << shift;
      if ((x & 0x80) === 0) return r >>> 0;
      shift += 7;
    }
    throw new Error('bad LEB128');
  }
  i32(): number {
    let r = 0;
    let shift = 0;
    let x: number;
    do {
      x = this.byte();
      r |= (x & 0x7f) << shift;
      shift += 7;
    } while (x & 0x80 && shift < 35);
    if (shift < 32 && x & 0x40) r |= -1 << shift;
    return r;
  }
  skip(n: number): void {
    this.at += n;
    if (this.at > this.b.length) throw new Error('truncated');
  }
}

/**
 * Find the memory import's limits and the first mutable i32 global's initial value (emscripten's __stack_pointer).
 * @returns offsets of the minimum's LEB128 and its length, the limits, and the stack top; undefined when the layout
 *   is not the one expected (then nothing is changed).
 */
function scan(
  b: Uint8Array,
): { minAt: number; minLen: number; min: number; max: number; stackTop: number } | undefined {
  if (b.length < 8 || b[0] !== 0 || b[1] !== 0x61 || b[2] !== 0x73 || b[3] !== 0x6d) return undefined;
  const r = new Reader(b, 8);
  let mem: { minAt: number; minLen: number; min: number; max: number } | undefined;
  let stackTop: number | undefined;
  while (r.at < b.length) {
    const id = r.byte();
    const len = r.u32();
    const end = r.at + len;
    if (id === 2) {
      const n = r.u32();
      for (let i = 0; i < n; i++) {
        r.skip(r.u32()); // module name
        r.skip(r.u32()); // field name
        const kind = r.byte();
        if (kind === 0) r.u32();
        else if (kind === 1) {
          r.byte();
          const f = r.byte();
          r.u32();
          if (f & 1) r.u32();
        } else if (kind === 2) {
          const flags = r.byte();
          if ((flags & ~1) !== 0) return undefined; // shared or 64-bit memory: not this build
          const minAt = r.at;
          const min = r.u32();
          const minLen = r.at - minAt;
          if (!(flags & 1)) return undefined;
          const max = r.u32();
          if (mem) return undefined;
          mem = { minAt, minLen, min, max };
        } else if (kind === 3) r.skip(2);
        else return undefined;
      }
    } else if (id === 6) {
      const n = r.u32();
      if (n > 0) {
        const type = r.byte();
        const mutable = r.byte();
        const op = r.byte();
        if (type === 0x7f && mutable === 1 && op === 0x41) stackTop = r.i32();
      }
    }
    r.at = end;
  }
  if (!mem || stackTop === undefined || stackTop <= 0) return undefined;
  return { ...mem, stackTop };
}

/**
 * Check the QuickJS binary against its pinned digest and lower its memory import's minimum (see the file comment).
 * @param bytes the file's bytes (not changed).
 * @param expectedSha256 the digest to require (default QUICKJS_WASM_SHA256).
 * @throws Error with `code` E_INTEGRITY when the digest differs.
 */
export async function prepareQuickJsWasm(
  bytes: Uint8Array,
  expectedSha256: string = QUICKJS_WASM_SHA256,
): Promise<QuickJsWasmInfo> {
  const got = await sha256Hex(bytes);
  if (got !== expectedSha256) {
    const e = new Error(
      `the QuickJS WebAssembly binary does not match ${QUICKJS_PACKAGE} (sha-256 ${got}, expected ${expectedSha256})`,
    );
    (e as Error & { code: string }).code = 'E_INTEGRITY';
    throw e;
  }
  const out = bytes.slice();
  const s = scan(out);
  if (!s) throw new Error('the QuickJS WebAssembly binary has an unexpected layout (memory import or stack pointer)');
  const want = Math.ceil(s.stackTop / WASM_PAGE) + 1;
  let minPages = s.min;
  if (want < s.min && s.minLen >= 2) {
    // padded LEB128 of the same length (Core spec §5.2.2 allows non-minimal encodings up to 5 bytes)
    let v = want;
    for (let i = 0; i < s.minLen; i++) {
      const last = i === s.minLen - 1;
      out[s.minAt + i] = (v & 0x7f) | (last ? 0 : 0x80);
      v >>>= 7;
    }
    minPages = want;
  }
  return { bytes: out, minPages, maxPages: s.max, stackTop: s.stackTop };
}
