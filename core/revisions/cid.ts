// Content addresses (CIDv1, sha2-256, json codec) over domain-separated canonical documents; core, trusted side.
import { CID } from 'multiformats/cid';
import { sha256 } from 'multiformats/hashes/sha2';
import * as json from 'multiformats/codecs/json';
import { canonicalJson } from './canonical.js';

/** Domains keep a manifest and a task with equal bytes from ever sharing an id. */
export const DOMAINS = {
  toolRevision: 'tysandbox/tool-revision/v1',
  task: 'tysandbox/task/v1',
  settings: 'tysandbox/settings/v1',
} as const;
export type Domain = (typeof DOMAINS)[keyof typeof DOMAINS];

const encoder = new TextEncoder();

/**
 * The exact bytes that are hashed: canonical JSON of `{"domain": DOMAIN, "body": VALUE}`.
 * Codec: multicodec `json` (0x0200), so the bytes are valid JSON anyone can re-encode and check.
 */
export function documentBytes(
  domain: Domain,
  body: unknown,
  code?: 'E_INVALID_MANIFEST' | 'E_INVALID_TASK',
): Uint8Array {
  return encoder.encode(canonicalJson({ domain, body }, code));
}

/** CIDv1(json, sha2-256) of the bytes, as a base32 string (`b...`). */
export async function cidOfBytes(bytes: Uint8Array): Promise<string> {
  const digest = await sha256.digest(bytes);
  return CID.createV1(json.code, digest).toString();
}

/** CIDv1 of the domain-separated canonical document of `body`. */
export async function contentId(
  domain: Domain,
  body: unknown,
  code?: 'E_INVALID_MANIFEST' | 'E_INVALID_TASK',
): Promise<string> {
  return cidOfBytes(documentBytes(domain, body, code));
}

/** True when `id` parses as a CIDv1 using the json codec and sha2-256. */
export function isContentId(id: string): boolean {
  try {
    const c = CID.parse(id);
    return c.version === 1 && c.code === json.code && c.multihash.code === sha256.code;
  } catch {
    return false;
  }
}
