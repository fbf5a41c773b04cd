// Builds small wheel files (zip archives, PEP 427 layout) for the Python package tests; test side.
import { createHash } from 'node:crypto';

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();
function crc32(b: Uint8Array): number {
  let c = 0xffffffff;
  for (const x of b) c = CRC_TABLE[(c ^ x) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** A zip archive (stored, no compression) of `files` (path -> text or bytes), as APPNOTE.TXT lays it out. */
export function zip(files: Record<string, string | Uint8Array>): Buffer {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of Object.entries(files)) {
    const data = typeof content === 'string' ? Buffer.from(content) : Buffer.from(content);
    const nameBytes = Buffer.from(name);
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    locals.push(local, nameBytes, data);
    const cd = Buffer.alloc(46);
    cd.writeUInt32LE(0x02014b50, 0);
    cd.writeUInt16LE(20, 4);
    cd.writeUInt16LE(20, 6);
    cd.writeUInt32LE(crc, 16);
    cd.writeUInt32LE(data.length, 20);
    cd.writeUInt32LE(data.length, 24);
    cd.writeUInt16LE(nameBytes.length, 28);
    cd.writeUInt32LE(offset, 42);
    central.push(cd, nameBytes);
    offset += 30 + nameBytes.length + data.length;
  }
  const cdBytes = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(files).length, 8);
  end.writeUInt16LE(Object.keys(files).length, 10);
  end.writeUInt32LE(cdBytes.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cdBytes, end]);
}

/** A pure-Python wheel `tinytext-1.0-py3-none-any.whl` whose module `tinytext` has `shout(s)` and `VERSION`. */
export function tinyWheel(extra: Record<string, string | Uint8Array> = {}): {
  file: string;
  bytes: Buffer;
  sha256: string;
} {
  const dist = 'tinytext-1.0.dist-info';
  const bytes = zip({
    'tinytext/__init__.py': 'VERSION = "1.0"\n\ndef shout(s):\n    return s.upper() + "!"\n',
    [`${dist}/METADATA`]: 'Metadata-Version: 2.1\nName: tinytext\nVersion: 1.0\n',
    [`${dist}/WHEEL`]: 'Wheel-Version: 1.0\nGenerator: tysandbox-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
    [`${dist}/RECORD`]: '',
    ...extra,
  });
  return { file: 'tinytext-1.0-py3-none-any.whl', bytes, sha256: createHash('sha256').update(bytes).digest('hex') };
}
