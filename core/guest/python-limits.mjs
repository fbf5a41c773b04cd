// Python sandbox memory limit: Pyodide's WebAssembly memory and the files in its in-memory file system counted together
// against limits.memoryMb; runs INSIDE the sandbox (untrusted side), set up before Pyodide starts.
// Used by core/guest/python.mjs on every host (Node and Deno subprocesses, the browser worker). Pyodide's heap is one
// WebAssembly memory that grows by Memory.prototype.grow (emscripten's emscripten_resize_heap; Pyodide declares a 4 GiB
// maximum), and its files are JavaScript byte arrays (emscripten MEMFS), so neither is bounded by the engine's heap
// limit. Here a growth past the limit is refused: the heap's grow throws (malloc fails, Python raises MemoryError), a
// file write or truncate that would grow past it fails with ENOSPC (Python's OSError 51), and the call that met either
// reports E_MEMORY_LIMIT (core/guest/python.mjs). An accident guard, not a boundary: tool code reaches Pyodide's
// JavaScript side (`import pyodide_js`) and can allocate around it; the OS limits (RLIMIT_DATA on the command line)
// and the process or worker stay the bound (SECURITY.md).
// Form: plain JavaScript, one import (./commons.mjs, by name), one export (the createPythonLimits function
// declaration), so the Node entry and the browser build can put it into their one classic script.
import {
  ArrayBufferPrototypeGetByteLength,
  NumberCtor,
  ReflectApply,
  ReflectDefineProperty,
  ReflectOwnKeys,
  RangeErrorCtor,
  SetCtor,
  SetPrototypeAdd,
  SetPrototypeHas,
  TypedArrayPrototypeGetLength,
  WebAssemblyMemoryPrototype,
  WebAssemblyMemoryPrototypeGetBuffer,
  WebAssemblyMemoryPrototypeGrow,
} from './commons.mjs';

/**
 * The memory limit of one Python sandbox.
 * @param {number|undefined} memoryMb limits.memoryMb of the revision (MiB); no limit when not a positive number
 * @returns {{ install(): void, attach(py): void, startCall(): void, hit: boolean, usedBytes(): number,
 *   recount(): void, limitMb: number|undefined }}
 *   `install` before Pyodide starts (caps the heap's growth), `attach(py)` once it started (caps the in-memory files,
 *   then enforces both), `startCall` at each call (clears `hit`), `hit`: a growth was refused since, `recount` after
 *   the file system changed wholesale (folders emptied between calls).
 */
export function createPythonLimits(memoryMb) {
  'use strict';
  const MiB = 1048576;
  const WASM_PAGE = 65536;
  /** ENOSPC in emscripten's (WASI) errno numbering: Python shows `[Errno 51] No space left on device`. */
  const ENOSPC = 51;
  const limitMb = typeof memoryMb === 'number' && memoryMb > 0 ? memoryMb : undefined;
  const capBytes = limitMb === undefined ? Infinity : limitMb * MiB;
  let py;
  let enforcing = false;
  let hit = false;
  /** Bytes the in-memory files hold, as counted when they grew; recounted exactly before a growth is refused. */
  let fileBytes = 0;

  const heapBytes = () => {
    try {
      return TypedArrayPrototypeGetLength(py._module.HEAP8);
    } catch {
      return 0;
    }
  };
  const bytesOf = (node) => {
    try {
      return TypedArrayPrototypeGetLength(node.contents);
    } catch {
      return 0;
    }
  };

  /** Every byte the in-memory files hold now: each MEMFS file reachable from the root (mounts included) or open. */
  function countFiles() {
    const FS = py.FS;
    const seen = new SetCtor();
    const queue = [FS.root];
    let total = 0;
    for (let i = 0; i < queue.length; i++) {
      let node = queue[i];
      if (node === null || typeof node !== 'object') continue;
      if (node.mounted?.root) node = node.mounted.root;
      if (SetPrototypeHas(seen, node)) continue;
      SetPrototypeAdd(seen, node);
      if (FS.isFile(node.mode)) total += bytesOf(node);
      else if (FS.isDir(node.mode) && node.contents !== null && typeof node.contents === 'object') {
        const names = ReflectOwnKeys(node.contents);
        for (let k = 0; k < names.length; k++) queue[queue.length] = node.contents[names[k]];
      }
    }
    // files removed while still open keep their bytes until closed
    const streams = FS.streams;
    for (let i = 0; streams && i < streams.length; i++) {
      const node = streams[i]?.node;
      if (node && !SetPrototypeHas(seen, node) && FS.isFile(node.mode)) {
        SetPrototypeAdd(seen, node);
        total += bytesOf(node);
      }
    }
    return total;
  }

  /** Whether `more` bytes fit (recounting the files before saying no); a no marks the call as having hit the limit. */
  function fits(more, heap) {
    if (!enforcing || heap + fileBytes + more <= capBytes) return true;
    fileBytes = countFiles();
    if (heap + fileBytes + more <= capBytes) return true;
    hit = true;
    return false;
  }

  /** WebAssembly.Memory.prototype.grow, refusing a growth past the limit (emscripten then reports a failed malloc). */
  function install() {
    if (limitMb === undefined) return;
    function grow(delta) {
      const size = ArrayBufferPrototypeGetByteLength(WebAssemblyMemoryPrototypeGetBuffer(this));
      if (!fits(NumberCtor(delta) * WASM_PAGE, size))
        throw new RangeErrorCtor(`WebAssembly.Memory.grow(): the sandbox's memory limit (${limitMb} MiB) is reached`);
      return WebAssemblyMemoryPrototypeGrow(this, delta);
    }
    // fixed: tool code cannot put the engine's own grow back
    ReflectDefineProperty(WebAssemblyMemoryPrototype, 'grow', {
      value: grow,
      writable: false,
      enumerable: true,
      configurable: false,
    });
  }

  /** The MEMFS file operations that grow a file (write, truncate) refused past the limit, with ENOSPC. */
  function attach(started) {
    py = started;
    if (limitMb === undefined) return;
    const FS = py.FS;
    const MEMFS = FS.filesystems.MEMFS;
    const ErrnoError = FS.ErrnoError;
    // the operation tables every MEMFS file node shares (made with the first node, at Pyodide's start)
    const fileStream = MEMFS.ops_table.file.stream;
    const fileNode = MEMFS.ops_table.file.node;
    const write = fileStream.write;
    const setattr = fileNode.setattr;
    const cappedWrite = function (stream, buffer, offset, length, position, canOwn) {
      const node = stream.node;
      const before = bytesOf(node);
      const end = NumberCtor(position) + NumberCtor(length);
      if (end > before && !fits(end - before, heapBytes())) throw new ErrnoError(ENOSPC);
      const n = ReflectApply(write, this, [stream, buffer, offset, length, position, canOwn]);
      fileBytes += bytesOf(node) - before;
      return n;
    };
    const cappedSetattr = function (node, attr) {
      const before = bytesOf(node);
      const size = attr !== null && typeof attr === 'object' ? attr.size : undefined;
      if (typeof size === 'number' && size > before && !fits(size - before, heapBytes())) throw new ErrnoError(ENOSPC);
      const r = ReflectApply(setattr, this, [node, attr]);
      fileBytes += bytesOf(node) - before;
      return r;
    };
    fileStream.write = cappedWrite;
    MEMFS.stream_ops.write = cappedWrite; // msync writes through it
    fileNode.setattr = cappedSetattr;
    MEMFS.node_ops.setattr = cappedSetattr;
    fileBytes = countFiles();
    enforcing = true;
  }

  return {
    install,
    attach,
    startCall() {
      hit = false;
    },
    get hit() {
      return hit;
    },
    /** Heap and file bytes in use now, exactly. */
    usedBytes() {
      return py === undefined ? 0 : heapBytes() + countFiles();
    },
    recount() {
      if (enforcing) fileBytes = countFiles();
    },
    limitMb,
  };
}
