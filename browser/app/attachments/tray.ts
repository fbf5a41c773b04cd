// The composer's attachments: "Attach files", drag and drop, paste; one chip per file with its size, "Give this file to
// tools" and "Remove NAME"; browser app, trusted side.
import type { Attachment } from '../../../protocol/task.js';
import type { AppDb } from '../app-db.js';
import { h, replaceChildren } from '../dom.js';
import { FOR_TOOLS_MAX, formatBytes, IMAGE_MAX, MAX_FILES, readAttachment, TEXT_FOR_MODEL_MAX } from './files.js';
import { base64, isImage } from './parts.js';

interface Pending {
  attachment: Attachment;
  /** A small preview of an image (a data: URL, which the page's img-src allows). */
  preview?: string;
  toolsOnly: boolean;
}

/** What the tray says under its chips about the limits. */
export const LIMITS_TEXT =
  `Text files (text, markdown, CSV, JSON, source code) up to ${formatBytes(TEXT_FOR_MODEL_MAX)} for the model and ` +
  `${formatBytes(FOR_TOOLS_MAX)} for tools; PNG, JPEG, WebP and GIF images up to ${formatBytes(IMAGE_MAX)}; ` +
  `${MAX_FILES} files a message.`;

/**
 * The files waiting to go with the next message. Each is read and checked when added (attachments/files.ts), its bytes
 * stored in the app database at once (so a reload to reach a new endpoint keeps them), and shown as a chip (a group
 * named "Attachment NAME"). `take()` hands them to the message and empties the tray.
 */
export class AttachmentTray {
  readonly input = h('input', {
    type: 'file',
    multiple: true,
    class: 'visually-hidden',
    id: 'attach-files',
  });
  /** The "Attach files" control: a label over the hidden file input (keyboard focus goes to the input). */
  readonly button = h('label', { class: 'button-like attach', for: 'attach-files' }, 'Attach files', this.input);
  readonly chips = h('ul', { class: 'chips', 'aria-label': 'Attachments', hidden: true });
  readonly #pending: Pending[] = [];

  constructor(
    private readonly db: AppDb,
    private readonly say: (text: string, kind: 'info' | 'error') => void,
  ) {
    this.input.addEventListener('change', () => {
      const files = [...(this.input.files ?? [])];
      this.input.value = '';
      void this.add(files);
    });
  }

  /** Accept files dropped on `zone` (it is marked while files are dragged over it). */
  dropOn(zone: HTMLElement): void {
    const hasFiles = (ev: DragEvent) => [...(ev.dataTransfer?.types ?? [])].includes('Files');
    zone.addEventListener('dragover', (ev) => {
      if (!hasFiles(ev)) return;
      ev.preventDefault();
      if (ev.dataTransfer) ev.dataTransfer.dropEffect = 'copy';
      zone.classList.add('dropping');
    });
    zone.addEventListener('dragleave', (ev) => {
      if (ev.target === zone) zone.classList.remove('dropping');
    });
    zone.addEventListener('drop', (ev) => {
      zone.classList.remove('dropping');
      if (!hasFiles(ev)) return;
      ev.preventDefault();
      void this.add([...(ev.dataTransfer?.files ?? [])]);
    });
  }

  /** Accept files pasted into `box` (a screenshot, files copied in a file manager); pasted text stays text. */
  pasteInto(box: HTMLElement): void {
    box.addEventListener('paste', (ev) => {
      const files = [...(ev.clipboardData?.files ?? [])];
      if (files.length === 0) return;
      ev.preventDefault();
      void this.add(files);
    });
  }

  /** Read, check and keep `files`; each one refused is said why. */
  async add(files: File[]): Promise<void> {
    for (const f of files) {
      if (this.#pending.length >= MAX_FILES) {
        this.say(`At most ${MAX_FILES} files go with one message; ${f.name} was not attached.`, 'error');
        continue;
      }
      const r = await readAttachment(f);
      if (!r.ok) {
        this.say(r.message, 'error');
        continue;
      }
      const a = r.file.attachment;
      if (this.#pending.some((p) => p.attachment.sha256 === a.sha256 && p.attachment.name === a.name)) continue;
      await this.db.putFile({ sha256: a.sha256, mediaType: a.mediaType, bytes: r.file.bytes });
      this.#pending.push({
        attachment: a,
        toolsOnly: r.file.toolsOnly,
        ...(isImage(a) ? { preview: `data:${a.mediaType};base64,${base64(r.file.bytes)}` } : {}),
      });
    }
    this.#render();
  }

  /** The attachments to send, in the order added, and an empty tray. */
  take(): Attachment[] {
    const out = this.#pending.map((p) => ({ ...p.attachment }));
    this.#pending.length = 0;
    this.#render();
    return out;
  }

  /** Put attachments back (a send that did not happen); their bytes are still stored. */
  async restore(list: Attachment[]): Promise<void> {
    for (const a of list) {
      if (this.#pending.some((p) => p.attachment.sha256 === a.sha256 && p.attachment.name === a.name)) continue;
      const f = await this.db.getFile(a.sha256);
      if (!f) continue;
      this.#pending.push({
        attachment: a,
        toolsOnly: a.bytes > TEXT_FOR_MODEL_MAX && !isImage(a),
        ...(isImage(a) ? { preview: `data:${a.mediaType};base64,${base64(f.bytes)}` } : {}),
      });
    }
    this.#render();
  }

  get count(): number {
    return this.#pending.length;
  }

  /** The sha-256 of every file in the tray (kept when unsent files are cleaned up). */
  shas(): Set<string> {
    return new Set(this.#pending.map((p) => p.attachment.sha256));
  }

  #render(): void {
    this.chips.hidden = this.#pending.length === 0;
    replaceChildren(
      this.chips,
      ...this.#pending.map((p) => {
        const a = p.attachment;
        const tools = h('input', { type: 'checkbox' });
        tools.checked = a.toTools === true;
        tools.disabled = p.toolsOnly;
        tools.addEventListener('change', () => {
          if (tools.checked) a.toTools = true;
          else delete a.toTools;
        });
        const remove = h(
          'button',
          { type: 'button', class: 'chip-remove', 'aria-label': `Remove ${a.name}` },
          'Remove',
        );
        remove.addEventListener('click', () => {
          const i = this.#pending.indexOf(p);
          if (i >= 0) this.#pending.splice(i, 1);
          this.#render();
          (this.chips.querySelector<HTMLElement>('.chip-remove') ?? this.button).focus();
        });
        return h(
          'li',
          {},
          h(
            'div',
            { class: 'chip', role: 'group', 'aria-label': `Attachment ${a.name}` },
            p.preview ? h('img', { src: p.preview, alt: '', class: 'chip-thumb' }) : null,
            h('span', { class: 'chip-name' }, a.name),
            h(
              'span',
              { class: 'chip-size' },
              `${formatBytes(a.bytes)}${p.toolsOnly ? ' · too large for the model' : ''}`,
            ),
            h('label', { class: 'check chip-tools' }, tools, ' Give this file to tools'),
            remove,
          ),
        );
      }),
    );
  }
}
