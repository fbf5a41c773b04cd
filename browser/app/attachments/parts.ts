// Attachments as each request carries them: a text file's content, an image as base64, a file handed to tools as a
// reference the model can pass on; browser app, trusted side.
import type { Attachment, Task } from '../../../protocol/task.js';
import type { ChatMessage, ChatPart, ImageMediaType } from '../models/types.js';
import { decodeText, formatBytes } from './files.js';

const IMAGE_TYPES: readonly string[] = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'];

export function isImage(a: Pick<Attachment, 'mediaType'>): boolean {
  return IMAGE_TYPES.includes(a.mediaType);
}

/**
 * The string that stands for a file handed to tools: `attachment:<first 12 hex digits of its sha-256>/<name>`. The
 * model sees it instead of the content and passes it as a tool argument; the app puts the content there
 * (tool-args.ts).
 */
export function reference(a: Pick<Attachment, 'sha256' | 'name'>): string {
  return `attachment:${a.sha256.slice(0, 12)}/${a.name}`;
}

/** Bytes as base64 (RFC 4648 §4), in chunks so a large image does not overflow the argument list. */
export function base64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

const quoted = (name: string) => name.replace(/["\n\r]/g, '_');

/** What the model reads for a file handed to tools. */
export function toolFileNote(a: Attachment): string {
  return (
    `[File for tools, not shown to you: ${quoted(a.name)} (${a.mediaType}, ${formatBytes(a.bytes)}). ` +
    `To give it to a tool, pass the string "${reference(a)}" as the value of the tool argument that takes the ` +
    "file's content.]"
  );
}

/** Loads an attachment's bytes by sha-256 (the app database's file store). */
export type FileLoader = (sha256: string) => Promise<{ bytes: Uint8Array } | undefined>;

/**
 * The parts of one attachment as the model receives it: a file handed to tools is a note with its reference; a text
 * file its content in `<file name="…" type="…">` … `</file>`; an image an image part, or a note when `images` is
 * false (the connection's models do not take images) or the file is gone.
 */
export async function attachmentPart(a: Attachment, load: FileLoader, images: boolean): Promise<ChatPart> {
  if (a.toTools) return { type: 'text', text: toolFileNote(a) };
  if (isImage(a) && !images)
    return { type: 'text', text: `[Image ${quoted(a.name)} not sent: this connection is set not to send images.]` };
  const f = await load(a.sha256);
  if (!f) return { type: 'text', text: `[File ${quoted(a.name)} is no longer available in this browser.]` };
  if (isImage(a)) return { type: 'image', mediaType: a.mediaType as ImageMediaType, data: base64(f.bytes) };
  const text = decodeText(f.bytes) ?? '';
  return { type: 'text', text: `<file name="${quoted(a.name)}" type="${a.mediaType}">\n${text}\n</file>` };
}

/** `messages` with every user message's attachments turned into parts (attachmentPart). */
export async function resolveAttachments(
  messages: ChatMessage[],
  load: FileLoader,
  images: boolean,
): Promise<ChatMessage[]> {
  const out: ChatMessage[] = [];
  for (const m of messages) {
    if (m.role !== 'user' || !m.attachments?.length) {
      out.push(m);
      continue;
    }
    const parts: ChatPart[] = [];
    for (const a of m.attachments) parts.push(await attachmentPart(a, load, images));
    out.push({ role: 'user', text: m.text, parts });
  }
  return out;
}

/** The files handed to tools in `path` (the branch a call belongs to), by reference. */
export function toolFiles(path: Task[]): Map<string, Attachment> {
  const out = new Map<string, Attachment>();
  for (const t of path)
    if (t.role === 'user' && t.content.type === 'message')
      for (const a of t.content.attachments ?? []) if (a.toTools) out.set(reference(a), a);
  return out;
}
