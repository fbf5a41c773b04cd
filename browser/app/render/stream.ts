// Streaming markdown by block: finished blocks are parsed and sanitized once, only the unfinished tail is re-rendered
// per frame; browser app, trusted side.
import { h } from '../dom.js';
import { renderMarkdown } from './message.js';

/** An opening or closing code fence: up to 3 spaces, then 3+ backticks or tildes (CommonMark 0.31 §4.5). */
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
/** Finished blocks per chunk of a streamed answer. */
const CHUNK_BLOCKS = 24;
/** A link reference definition (`[label]: url`): it can change blocks before it, so the end renders the whole text. */
const DEFINITION = /^ {0,3}\[[^\]]+\]:/m;

/**
 * Where a text can be cut into independently rendered parts: at the start of a line that follows a blank line, is
 * not indented (so it cannot continue a list item or be indented code) and is outside a fenced code block. The
 * scanner keeps its place, so each character is looked at once however long the answer grows.
 */
export class BlockSplitter {
  #scan = 0;
  #fence: { char: string; len: number } | undefined;
  #prevBlank = false;
  /** The last cut found (a character offset); everything before it is finished. */
  cut = 0;

  /** Look at the complete lines of `text` not seen yet; returns the newest cut. */
  advance(text: string): number {
    for (;;) {
      const nl = text.indexOf('\n', this.#scan);
      if (nl === -1) return this.cut;
      const line = text.slice(this.#scan, nl);
      const start = this.#scan;
      this.#scan = nl + 1;
      const blank = line.trim() === '';
      if (!this.#fence && this.#prevBlank && !blank && !/^[ \t]/.test(line)) this.cut = start;
      const f = FENCE.exec(line);
      if (f) {
        const char = f[1]![0]!;
        const len = f[1]!.length;
        if (!this.#fence) this.#fence = { char, len };
        else if (this.#fence.char === char && len >= this.#fence.len && line.trim() === f[1]) this.#fence = undefined;
      }
      this.#prevBlank = blank && !this.#fence;
    }
  }
}

/**
 * A streaming assistant answer in `root`: `push(delta)` adds text; at most once per animation frame the finished
 * blocks (BlockSplitter) are rendered and appended once, and the unfinished tail is rendered again. `finish()` renders
 * what is left (the whole text again only when it holds a link reference definition). `plain` shows text only.
 */
export class MarkdownStream {
  readonly root = h('div', { class: 'text md' });
  readonly #done = h('div', { class: 'md-done' });
  readonly #tail = h('div', { class: 'md-tail' });
  readonly #split = new BlockSplitter();
  #text = '';
  #rendered = 0;
  #tailText: string | undefined;
  #scheduled = false;
  #onRender: (() => void) | undefined;
  #plainNode: Text | undefined;
  #chunk: HTMLElement | undefined;

  constructor(readonly opts: { plain?: boolean; onRender?: () => void } = {}) {
    this.root.append(this.#done, this.#tail);
    this.#onRender = opts.onRender;
    if (opts.plain) this.root.classList.add('plain');
  }

  get text(): string {
    return this.#text;
  }

  push(delta: string): void {
    this.#text += delta;
    if (this.#scheduled) return;
    this.#scheduled = true;
    // a frame when the tab is visible; a timer when it is not (frames do not run in a hidden tab)
    let fired = false;
    const run = () => {
      if (fired) return;
      fired = true;
      this.#scheduled = false;
      this.flush();
    };
    requestAnimationFrame(run);
    setTimeout(run, 100);
  }

  /** Render what arrived since the last frame (`final`: the text is complete, so its end is rendered for good). */
  flush(final = false): void {
    if (this.opts.plain) {
      // plain text: only what arrived is appended to one text node
      if (!this.#plainNode) this.#tail.append((this.#plainNode = document.createTextNode('')));
      this.#plainNode.appendData(this.#text.slice(this.#plainNode.length));
      this.#onRender?.();
      return;
    }
    const cut = this.#split.advance(this.#text);
    if (cut > this.#rendered) {
      // finished blocks go into chunks of CHUNK_BLOCKS: a chunk out of view is skipped by layout and paint (app.css)
      const frag = renderMarkdown(this.#text.slice(this.#rendered, cut));
      if (!this.#chunk || this.#chunk.childElementCount >= CHUNK_BLOCKS)
        this.#done.append((this.#chunk = h('div', { class: 'md-chunk' })));
      this.#chunk.append(frag);
      this.#rendered = cut;
    }
    const tail = this.#text.slice(this.#rendered);
    if (tail !== this.#tailText || final) {
      this.#tailText = tail;
      this.#tail.replaceChildren(renderMarkdown(tail, { draft: !final }));
    }
    this.#onRender?.();
  }

  /** The text is complete: render the rest (all of it again if a reference definition may change earlier blocks). */
  finish(): void {
    this.#scheduled = true; // no frame renders after this
    if (!this.opts.plain && DEFINITION.test(this.#text)) {
      this.#chunk = undefined;
      this.#done.replaceChildren(renderMarkdown(this.#text));
      this.#tail.replaceChildren();
      this.#rendered = this.#text.length;
      this.#tailText = '';
      this.#onRender?.();
      return;
    }
    this.flush(true);
  }
}
