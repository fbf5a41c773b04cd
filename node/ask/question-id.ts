// A waiting question's id: 120 random bits as 24 base32 letters, and the pattern every id read back must match; Node
// host, trusted side.
import { randomBytes } from 'node:crypto';

/** A question id: 24 base32 characters = 120 bits from crypto.randomBytes. */
export const QUESTION_ID_RE = /^[a-z2-7]{24}$/;

const B32 = 'abcdefghijklmnopqrstuvwxyz234567';
/** 15 random bytes as 24 lowercase RFC 4648 base32 characters (120 bits). */
export function newQuestionId(): string {
  const bytes = randomBytes(15);
  let bits = 0;
  let value = 0;
  let out = '';
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}
