// A file handed to tools reaching a tool's argument: the model passes the file's reference, the app puts the content
// in that argument before the call runs; browser app, trusted side.
import type { Attachment } from '../../../protocol/task.js';
import { decodeText } from './files.js';
import { base64, isImage, type FileLoader } from './parts.js';

/** Does the schema `property` take a string (its `type` is or includes "string", or it names no type)? */
function takesString(property: unknown): boolean {
  if (!property || typeof property !== 'object') return false;
  const t = (property as { type?: unknown }).type;
  return t === undefined || t === 'string' || (Array.isArray(t) && t.includes('string'));
}

/**
 * `args` with each top-level argument whose value is the reference of a file handed to tools in the call's branch
 * (`files`, parts.ts toolFiles) replaced by that file's content: a text file's text, an image as a `data:` URL. Only
 * arguments the tool's schema declares as strings (`parameters.properties`) take a file; the call's task keeps the
 * reference, so the content never enters the history a model request carries. `used` names the files put in.
 * @throws Error when a referenced file is no longer stored (the call then fails with that message).
 */
export async function putFilesInArgs(
  args: Record<string, unknown>,
  parameters: Record<string, unknown> | undefined,
  files: Map<string, Attachment>,
  load: FileLoader,
): Promise<{ args: Record<string, unknown>; used: string[] }> {
  if (files.size === 0) return { args, used: [] };
  const props = (parameters?.properties ?? {}) as Record<string, unknown>;
  const out: Record<string, unknown> = { ...args };
  const used: string[] = [];
  for (const [k, v] of Object.entries(args)) {
    if (typeof v !== 'string' || !Object.hasOwn(props, k) || !takesString(props[k])) continue;
    const a = files.get(v.trim());
    if (!a) continue;
    const f = await load(a.sha256);
    if (!f) throw new Error(`the file ${a.name} is no longer stored in this browser; attach it again`);
    out[k] = isImage(a) ? `data:${a.mediaType};base64,${base64(f.bytes)}` : (decodeText(f.bytes) ?? '');
    used.push(a.name);
  }
  return { args: out, used };
}
