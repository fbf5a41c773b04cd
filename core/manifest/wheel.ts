// What a declared Python wheel may hold: pure-Python files only, every entry inside the install folder, read from the
// zip's central directory (APPNOTE.TXT 4.3) as Python's zipfile reads it; core, trusted side (host-neutral, pure).
import { TyError } from '../errors.js';

/**
 * File names of native code a pure-Python wheel must not hold: CPython extension modules (`.so`, `.pyd`, versioned
 * `.so.N`), shared and static libraries (`.dylib`, `.dll`, `.a`) and WebAssembly (`.wasm`, what Pyodide loads for a
 * package built for it).
 */
const NATIVE_RE = /\.(?:so(?:\.\d+)*|pyd|dylib|dll|a|wasm)$/i;
/** Most entries read from one wheel's central directory. */
export const MAX_WHEEL_ENTRIES = 100_000;

const EOCD = 0x06054b50;
const EOCD64 = 0x06064b50;
const EOCD64_LOCATOR = 0x07064b50;
const CENTRAL = 0x02014b50;

function invalid(file: string, why: string): TyError {
  return new TyError('E_INVALID_MANIFEST', `the wheel ${file} ${why}`, { path: 'python.packages', file });
}

/**
 * The entry names of a zip archive, from its central directory (the names Python's zipfile installs; it refuses a
 * local header whose name differs). Zip64 archives are read too.
 * @throws TyError E_INVALID_MANIFEST naming `file` when the bytes are not a readable zip archive
 */
export function zipEntryNames(file: string, bytes: Uint8Array): string[] {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = bytes.byteLength;
  // the end of central directory record: 22 bytes plus a comment of at most 65 535, at the end of the file
  let eocd = -1;
  for (let i = n - 22; i >= 0 && i >= n - 22 - 0xffff; i--) {
    if (dv.getUint32(i, true) === EOCD) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw invalid(file, 'is not a zip archive (a wheel is one, PEP 427)');
  let count = dv.getUint16(eocd + 10, true);
  let offset = dv.getUint32(eocd + 16, true);
  if ((count === 0xffff || offset === 0xffffffff) && eocd >= 20 && dv.getUint32(eocd - 20, true) === EOCD64_LOCATOR) {
    const at = Number(dv.getBigUint64(eocd - 20 + 8, true));
    if (at + 56 > n || dv.getUint32(at, true) !== EOCD64) throw invalid(file, 'has a damaged zip64 directory');
    count = Number(dv.getBigUint64(at + 32, true));
    offset = Number(dv.getBigUint64(at + 48, true));
  }
  if (count > MAX_WHEEL_ENTRIES) throw invalid(file, `has more than ${MAX_WHEEL_ENTRIES} entries`);
  const names: string[] = [];
  const dec = new TextDecoder('utf-8', { fatal: false });
  let p = offset;
  for (let k = 0; k < count; k++) {
    if (p + 46 > n || dv.getUint32(p, true) !== CENTRAL) throw invalid(file, 'has a damaged zip directory');
    const flags = dv.getUint16(p + 8, true);
    const nameLen = dv.getUint16(p + 28, true);
    const extraLen = dv.getUint16(p + 30, true);
    const commentLen = dv.getUint16(p + 32, true);
    if (p + 46 + nameLen > n) throw invalid(file, 'has a damaged zip directory');
    const raw = bytes.subarray(p + 46, p + 46 + nameLen);
    // bit 11: UTF-8 names; otherwise CP437, which Python decodes so: only ASCII names are read the same either way
    names.push(flags & 0x800 ? dec.decode(raw) : String.fromCharCode(...raw));
    p += 46 + nameLen + extraLen + commentLen;
  }
  return names;
}

/**
 * Check that the wheel `file` (its bytes) holds pure Python only and unpacks inside its install folder: no entry with
 * an absolute path, a `..` part, a backslash or a NUL, and no native code (NATIVE_RE). Run where the wheel is first
 * read: at `tool add` on the command line, before the worker gets it in the browser; the sandbox checks again as it
 * installs it (core/guest/python.mjs).
 * @throws TyError E_INVALID_MANIFEST, one line naming the wheel and the entry (data: { path: 'python.packages', file })
 */
export function checkPureWheel(file: string, bytes: Uint8Array): void {
  for (const name of zipEntryNames(file, bytes)) {
    const shown = JSON.stringify(name.slice(0, 200));
    if (name.startsWith('/') || name.includes('\\') || name.includes('\0') || name.split('/').includes('..'))
      throw invalid(file, `has an entry that leaves the install folder (${shown})`);
    if (NATIVE_RE.test(name))
      throw invalid(file, `holds native code (${shown}); only pure-Python wheels are supported`);
  }
}
