// A single-file tool's manifest as every host hashes it: `sourceFile` inlined with its file record (execution.bundle);
// core, trusted side.
import { sha256 } from 'multiformats/hashes/sha2';
import { base64 } from 'multiformats/bases/base64';
import type { ToolBundle } from '../../protocol/manifest.js';

/**
 * The record of a source file kept as it is (nothing bundled): `bundler: "none"`, the file's path (relative to the
 * manifest's folder, `/` separators) as the entry and its one input with its size (bytes) and sha256 integrity (SRI
 * form, W3C Subresource Integrity). Stack frames of the tool's errors name `path` (core/exec/stack.ts).
 * `content` is the file's bytes, or its text (hashed as UTF-8).
 */
export async function sourceFileRecord(path: string, content: string | Uint8Array): Promise<ToolBundle> {
  const bytes = typeof content === 'string' ? new TextEncoder().encode(content) : content;
  const digest = await sha256.digest(bytes);
  // multiformats' base64 is RFC 4648 without padding; SRI keeps the padding (a sha256 digest is 32 bytes: one `=`).
  const b64 = base64.baseEncode(digest.digest);
  const integrity = `sha256-${b64}${'='.repeat((4 - (b64.length % 4)) % 4)}`;
  return { entry: path, bundler: 'none', inputs: [{ path, bytes: bytes.byteLength, integrity }], packages: [] };
}

/**
 * A manifest that names its code by `execution.sourceFile`, with that file's text inlined as `execution.source` and
 * its record as `execution.bundle` (sourceFileRecord): the document the command line stores for a file that imports
 * nothing, so a host building a tool from the same files (the browser app's examples) gets the same revision id.
 * JavaScript that imports other modules is bundled by the command line instead (node/manifest/bundle.ts) and has
 * another record.
 */
export async function inlineSourceFile<M extends { execution: Record<string, unknown> }>(
  manifest: M,
  source: string,
): Promise<M> {
  const { sourceFile, ...execution } = manifest.execution;
  if (typeof sourceFile !== 'string') throw new TypeError('inlineSourceFile: execution.sourceFile is not a string');
  const path = sourceFile.replace(/^(\.\/)+/, '');
  return { ...manifest, execution: { ...execution, source, bundle: await sourceFileRecord(path, source) } };
}
