// UTF-8 byte lengths of strings without walking them in JavaScript; host-agnostic core, trusted side.

/** A function giving the UTF-8 byte length of a string (Node's Buffer.byteLength, or utf8Length below). */
export type ByteLength = (s: string) => number;

/** Strings shorter than this are counted in JavaScript: cheaper than a call into the encoder. */
const SHORT = 64;
/** UTF-16 code units encoded per TextEncoder.encodeInto call (the scratch buffer holds 3 bytes per unit). */
const CHUNK = 64 * 1024;
let encoder: TextEncoder | undefined;
let scratch: Uint8Array | undefined;

/**
 * UTF-8 byte length of `s` as TextEncoder (WHATWG Encoding, UTF-8 encode) writes it: a lone surrogate counts as
 * U+FFFD, 3 bytes. Long strings go through TextEncoder.encodeInto, which the engine runs natively, in chunks of
 * CHUNK code units into one reused scratch buffer (a chunk never ends between the two halves of a surrogate pair);
 * short ones are counted here. Never allocates more than the scratch buffer (192 KiB), whatever the length of `s`.
 * Hosts with a native counter (Node: Buffer.byteLength, the same count) pass theirs where a ByteLength is taken.
 */
export function utf8Length(s: string): number {
  if (s.length < SHORT) return shortLength(s);
  encoder ??= new TextEncoder();
  scratch ??= new Uint8Array(3 * CHUNK);
  if (s.length <= CHUNK) return encoder.encodeInto(s, scratch).written;
  let n = 0;
  for (let i = 0; i < s.length; ) {
    let end = Math.min(i + CHUNK, s.length);
    const last = s.charCodeAt(end - 1);
    if (end < s.length && last >= 0xd800 && last <= 0xdbff) end--; // keep a surrogate pair in one chunk
    n += encoder.encodeInto(s.slice(i, end), scratch).written;
    i = end;
  }
  return n;
}

function shortLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}
