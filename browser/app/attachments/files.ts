// Reading a file a person attaches: text (UTF-8, by extension or text/* type) or an image recognised by its bytes
// (PNG, JPEG, WebP, GIF), its size limits and its sha-256; browser app, trusted side.
import type { Attachment } from '../../../protocol/task.js';
import type { ImageMediaType } from '../models/types.js';

/** Largest text file put into the model's context (bytes): about 250 000 tokens, more than most models take. */
export const TEXT_FOR_MODEL_MAX = 1024 * 1024;
/** Largest file handed to tools (bytes; csv-stats takes 8 000 000 characters). */
export const FOR_TOOLS_MAX = 8 * 1024 * 1024;
/** Largest image (bytes): Anthropic's limit per image (OpenAI's is 20 MB). */
export const IMAGE_MAX = 5 * 1024 * 1024;
/** Most files attached to one message. */
export const MAX_FILES = 10;

/** Extensions read as text (plain text, markdown, data, source code), with their media type when not text/plain. */
const TEXT_TYPES: Record<string, string> = {
  txt: 'text/plain',
  text: 'text/plain',
  md: 'text/markdown',
  markdown: 'text/markdown',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  json: 'application/json',
  jsonl: 'application/jsonl',
  ndjson: 'application/jsonl',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  toml: 'application/toml',
  xml: 'application/xml',
  log: 'text/plain',
  ini: 'text/plain',
  cfg: 'text/plain',
  conf: 'text/plain',
  env: 'text/plain',
  sql: 'text/plain',
  html: 'text/html',
  htm: 'text/html',
  css: 'text/css',
  svg: 'image/svg+xml',
  tex: 'text/plain',
  rst: 'text/plain',
  adoc: 'text/plain',
};
const CODE = [
  'js',
  'mjs',
  'cjs',
  'jsx',
  'ts',
  'mts',
  'cts',
  'tsx',
  'py',
  'pyi',
  'rb',
  'go',
  'rs',
  'java',
  'kt',
  'kts',
  'scala',
  'c',
  'h',
  'cc',
  'cpp',
  'cxx',
  'hpp',
  'hh',
  'cs',
  'fs',
  'php',
  'pl',
  'pm',
  'sh',
  'bash',
  'zsh',
  'fish',
  'ps1',
  'bat',
  'swift',
  'm',
  'mm',
  'r',
  'jl',
  'lua',
  'dart',
  'ex',
  'exs',
  'erl',
  'hs',
  'ml',
  'clj',
  'el',
  'vim',
  'zig',
  'nim',
  'sol',
  'vue',
  'svelte',
  'scss',
  'sass',
  'less',
  'graphql',
  'gql',
  'proto',
  'tf',
  'hcl',
  'gradle',
  'cmake',
  'mk',
  'dockerfile',
  'gitignore',
  'diff',
  'patch',
];
for (const ext of CODE) TEXT_TYPES[ext] ??= 'text/plain';
/** Files read as text by their whole name. */
const TEXT_NAMES = new Set(['dockerfile', 'makefile', 'readme', 'license', 'changelog', '.gitignore', '.env']);

/** The image type of `bytes` from its signature (never from the name), or undefined. */
export function sniffImage(b: Uint8Array): ImageMediaType | undefined {
  const at = (i: number, s: number[]) => s.every((x, j) => b[i + j] === x);
  if (at(0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (at(0, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (at(0, [0x47, 0x49, 0x46, 0x38]) && (b[4] === 0x37 || b[4] === 0x39) && b[5] === 0x61) return 'image/gif';
  if (at(0, [0x52, 0x49, 0x46, 0x46]) && at(8, [0x57, 0x45, 0x42, 0x50])) return 'image/webp';
  return undefined;
}

/** The media type of a text file by its name or the browser's type, or undefined when it is not one the app reads. */
export function textMediaType(name: string, type: string): string | undefined {
  const lower = name.toLowerCase();
  const ext = lower.includes('.') ? lower.slice(lower.lastIndexOf('.') + 1) : '';
  if (ext && TEXT_TYPES[ext]) return TEXT_TYPES[ext];
  if (TEXT_NAMES.has(lower)) return 'text/plain';
  if (/^text\//.test(type)) return type.split(';')[0]!.trim();
  if (type === 'application/json') return type;
  return undefined;
}

/** The text of `bytes` when it is UTF-8 without NUL characters (a BOM is dropped), else undefined. */
export function decodeText(bytes: Uint8Array): string | undefined {
  try {
    const s = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return s.includes('\0') ? undefined : s;
  } catch {
    return undefined;
  }
}

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
  return [...d].map((x) => x.toString(16).padStart(2, '0')).join('');
}

/** "2.1 kB", "1.4 MB": a size for people (SI units, as file managers show them). */
export function formatBytes(n: number): string {
  if (n < 1000) return `${n} B`;
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)} kB`;
  return `${(n / 1_000_000).toFixed(1)} MB`;
}

/** A name kept for an attachment: no path, no control characters, at most 255 characters. */
export function cleanName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? '';
  const clean = base.replace(/[\u0000-\u001f\u007f"<>]/g, '_').trim();
  return (clean || 'file').slice(0, 255);
}

/** A file read and checked: what the message records, its bytes, and whether it is text or an image. */
export interface ReadFile {
  attachment: Attachment;
  bytes: Uint8Array;
  kind: 'text' | 'image';
  /** Too large for the model's context: it can only be handed to tools. */
  toolsOnly: boolean;
}

/**
 * Read `file` for attaching: an image by its signature (PNG, JPEG, WebP, GIF; at most IMAGE_MAX) or a text file by
 * name or type that is UTF-8 (at most FOR_TOOLS_MAX; above TEXT_FOR_MODEL_MAX only for tools). Anything else is
 * refused with a sentence saying why.
 */
export async function readAttachment(
  file: File,
): Promise<{ ok: true; file: ReadFile } | { ok: false; message: string }> {
  const name = cleanName(file.name);
  if (file.size > FOR_TOOLS_MAX)
    return {
      ok: false,
      message: `${name} is ${formatBytes(file.size)}; files up to ${formatBytes(FOR_TOOLS_MAX)} can be attached.`,
    };
  const bytes = new Uint8Array(await file.arrayBuffer());
  const image = sniffImage(bytes);
  if (image) {
    if (bytes.length > IMAGE_MAX)
      return {
        ok: false,
        message: `${name} is ${formatBytes(bytes.length)}; images up to ${formatBytes(IMAGE_MAX)} can be attached.`,
      };
    return {
      ok: true,
      file: {
        attachment: { name, mediaType: image, bytes: bytes.length, sha256: await sha256Hex(bytes) },
        bytes,
        kind: 'image',
        toolsOnly: false,
      },
    };
  }
  const type = textMediaType(name, file.type);
  if (!type || decodeText(bytes) === undefined)
    return {
      ok: false,
      message: `${name} is neither a text file (UTF-8: text, markdown, CSV, JSON, source code) nor a PNG, JPEG, WebP or GIF image.`,
    };
  const toolsOnly = bytes.length > TEXT_FOR_MODEL_MAX;
  return {
    ok: true,
    file: {
      attachment: {
        name,
        mediaType: type,
        bytes: bytes.length,
        sha256: await sha256Hex(bytes),
        ...(toolsOnly ? { toTools: true } : {}),
      },
      bytes,
      kind: 'text',
      toolsOnly,
    },
  };
}
