// The conversation view: messages (assistant text as rendered markdown), tool-call cards, branch navigation, the
// streaming answer, notices with actions, following new text; browser app, trusted side.
import { inertText } from '../../../core/ask/text.js';
import type { Task } from '../../../protocol/task.js';
import type { CallOutcome } from '../chat/convert.js';
import { h, replaceChildren } from '../dom.js';
import { renderMarkdown } from '../render/message.js';
import { MarkdownStream } from '../render/stream.js';
import { callCard, failedCallCard, setCallState, showOutcome } from './call-card.js';
import { ScrollFollower } from './scroll.js';
import type { ReplyMeta } from '../app-db.js';
import type { Attachment } from '../../../protocol/task.js';
import { formatBytes } from '../attachments/files.js';
import { base64, isImage } from '../attachments/parts.js';
import { tokensText } from '../conversations/header.js';

export interface ConversationActions {
  /** Put a user message back into the composer; sending makes a sibling branch. */
  edit(task: Task): void;
  /** Show the sibling branch `delta` steps from `task` (-1 previous, +1 next). */
  switchBranch(task: Task, delta: number): void;
  /** Ask the model again for this assistant message: a sibling branch. */
  regenerate(task: Task): void;
  /** Continue an answer that was cut off or interrupted. */
  continueAnswer(task: Task): void;
  /** Run an interrupted call again. */
  runAgain(call: Task): void;
  /** An attached file's bytes (image previews in sent messages). */
  loadFile?(sha256: string): Promise<{ bytes: Uint8Array } | undefined>;
}

export interface BranchInfo {
  index: number;
  count: number;
}

/** A button a notice offers (e.g. "Retry", "Open settings", "Cancel"). */
export interface NoticeAction {
  label: string;
  run(): void;
}

/**
 * Renders the selected branch. Elements are kept per task id between renders, so an approval card placed in a
 * running call's card stays where it is while the conversation grows. Model text is rendered as sanitized markdown
 * (render/); everything else is set as text.
 */
export class ConversationView {
  readonly root: HTMLElement;
  readonly #list: HTMLElement;
  readonly #liveBox: HTMLElement;
  readonly #notices: HTMLElement;
  readonly #top = h('div', { class: 'conversation-top' });
  readonly #els = new Map<string, HTMLElement>();
  readonly #follow: ScrollFollower;
  #running = new Set<string>();
  #stream: MarkdownStream | undefined;
  /** Markdown off: assistant text as plain text (Settings, "Render markdown"). */
  plain = false;

  constructor(private readonly actions: ConversationActions) {
    this.#list = h('ol', { class: 'messages', 'aria-label': 'Messages' });
    this.#liveBox = h('div', {
      class: 'msg assistant streaming',
      'aria-live': 'polite',
      'aria-busy': 'true',
      hidden: true,
    });
    this.#notices = h('div', { class: 'notices', role: 'log', 'aria-label': 'Notices' });
    const scroller = h('div', { class: 'conversation-scroll' }, this.#top, this.#list, this.#liveBox, this.#notices);
    this.#follow = new ScrollFollower(scroller);
    this.root = h('section', { class: 'conversation', 'aria-label': 'Conversation' }, scroller, this.#follow.button);
  }

  /** Put `els` above the messages (the conversation's collapsed settings). */
  setTop(...els: HTMLElement[]): void {
    replaceChildren(this.#top, ...els);
  }

  /** Where a question of `revision` goes: the running call card of that revision, else the end of the conversation. */
  placeFor(revision: string | undefined, tool?: string): HTMLElement {
    for (const id of this.#running) {
      const el = this.#els.get(id);
      if (el && (!revision || el.dataset.revision === revision))
        return el.querySelector<HTMLElement>('.approvals') ?? el;
    }
    // a remote MCP tool's question carries the server tool's own identity: its running call is found by name
    for (const id of tool !== undefined ? this.#running : []) {
      const el = this.#els.get(id);
      if (el && el.dataset.tool === tool) return el.querySelector<HTMLElement>('.approvals') ?? el;
    }
    return this.#notices;
  }

  /** A question was placed (`open`) or settled in `place`: its call reads "waiting for you" meanwhile. */
  asking(place: HTMLElement, open: boolean): void {
    const card = place.closest<HTMLElement>('.call');
    if (!card || card.dataset.outcome) return;
    const waiting = open || card.querySelector('.approval:not(.approved):not(.refused)') !== null;
    setCallState(card, waiting ? 'waiting' : 'running');
    this.#follow.changed();
  }

  /** The card of a call task, if it is shown. */
  card(id: string): HTMLElement | undefined {
    return this.#els.get(id);
  }

  /** A call starts (again, after "Run again": its old outcome is cleared from the card). */
  callStarted(id: string): void {
    this.#running.add(id);
    const el = this.#els.get(id);
    if (!el) return;
    delete el.dataset.outcome;
    delete el.dataset.resultTask;
    for (const sel of ['.result', '.call-actions', '.call-time']) el.querySelector(sel)?.replaceChildren();
    setCallState(el, 'running');
  }

  /** A call ended: its card shows the outcome at once, whatever the other calls of the reply are doing. */
  callEnded(task: Task, o: CallOutcome): void {
    this.#running.delete(task.id);
    const el = this.#els.get(task.id);
    if (el) showOutcome(el, task, o, o.ms, this.actions);
    this.#follow.changed();
  }

  streamText(delta: string): void {
    if (!this.#stream) {
      this.#stream = new MarkdownStream({ plain: this.plain, onRender: () => this.#follow.changed() });
      replaceChildren(this.#liveBox, this.#stream.root);
      this.#liveBox.hidden = false;
    }
    this.#stream.push(delta);
  }

  /** The streamed text so far ('' when nothing streams). */
  get streamed(): string {
    return this.#stream?.text ?? '';
  }

  clearStream(): void {
    this.#stream = undefined;
    replaceChildren(this.#liveBox);
    this.#liveBox.hidden = true;
  }

  notice(text: string, kind: 'info' | 'error', actions: NoticeAction[] = []): HTMLElement {
    const p = h(
      'div',
      { class: `notice ${kind}`, ...(kind === 'error' ? { role: 'alert' } : {}) },
      h('span', { class: 'notice-text' }, text),
      ...actions.map((a) => h('button', { type: 'button', onclick: () => a.run() }, a.label)),
    );
    this.#notices.append(p);
    this.#follow.changed();
    return p;
  }

  clearNotices(): void {
    for (const n of this.#notices.querySelectorAll('.notice')) n.remove();
  }

  /** Scroll to the newest text and follow it again. */
  jumpToLatest(): void {
    this.#follow.jump();
  }

  /**
   * Render `path` (root first); `branches` gives sibling positions of tasks that have siblings; `interrupted` the
   * assistant messages cut off (they offer "Continue").
   */
  render(
    path: Task[],
    branches: Map<string, BranchInfo>,
    interrupted: ReadonlySet<string> = new Set(),
    replies: Readonly<Record<string, ReplyMeta>> = {},
  ): void {
    const results = new Map<string, Task>();
    for (const t of path) if (t.content.type === 'toolresult' && t.content.callTask) results.set(t.content.callTask, t);
    // a reply followed by another reply of the same turn (after its calls' results) shows no actions: the turn's
    // actions come once, with its last reply
    const superseded = new Set<string>();
    let previous: Task | undefined;
    for (const t of path) {
      if (t.content.type !== 'message') continue;
      if (t.role === 'assistant' && previous) superseded.add(previous.id);
      previous = t.role === 'assistant' ? t : undefined;
    }
    const items: HTMLElement[] = [];
    // a reply with no text (only tool calls) goes after its calls: its actions after the turn's last part
    let held: HTMLElement | undefined;
    for (const t of path) {
      if (t.parent === undefined || t.content.type === 'toolresult') continue;
      if (held && t.content.type !== 'functioncall') {
        items.push(held);
        held = undefined;
      }
      let el = this.#els.get(t.id);
      if (!el) {
        el = this.#create(t);
        this.#els.set(t.id, el);
      }
      if (t.content.type === 'message' && t.role !== 'system') {
        this.#branchNav(el, t, branches.get(t.id));
        if (t.role === 'assistant') {
          this.#interrupted(el, t, interrupted.has(t.id));
          this.#meta(el, replies[t.id]);
          // a superseded reply keeps only its branch navigation, when it has siblings
          const quiet = superseded.has(t.id) && !branches.has(t.id);
          const tools = el.querySelector<HTMLElement>(':scope > .msg-tools');
          if (tools) tools.hidden = quiet;
          const regenerate = tools?.querySelector<HTMLElement>('button.regenerate');
          if (regenerate) regenerate.hidden = superseded.has(t.id);
          if (!t.content.text) {
            held = h('li', { hidden: quiet }, el);
            continue;
          }
        }
      }
      if (t.content.type === 'functioncall') {
        const r = results.get(t.id);
        if (r && r.content.type === 'toolresult' && el.dataset.resultTask !== r.id) {
          el.dataset.resultTask = r.id;
          this.#running.delete(t.id);
          showOutcome(el, t, r.content.result as CallOutcome, (r.content.result as CallOutcome).ms, this.actions);
        }
      }
      items.push(h('li', {}, el));
    }
    if (held) items.push(held);
    replaceChildren(this.#list, ...items);
    this.#follow.changed();
  }

  #create(t: Task): HTMLElement {
    const c = t.content;
    switch (c.type) {
      case 'message': {
        if (t.role === 'user') {
          return h(
            'article',
            { class: 'msg user', 'aria-label': 'You', 'data-task': t.id },
            c.text ? h('div', { class: 'text' }, inertText(c.text)) : null,
            c.attachments?.length ? this.#attachments(c.attachments) : null,
            h(
              'div',
              { class: 'msg-tools' },
              h('button', { type: 'button', class: 'edit', onclick: () => this.actions.edit(t) }, 'Edit'),
              h('span', { class: 'branch-nav' }),
            ),
          );
        }
        if (t.role !== 'assistant')
          return h('article', { class: 'msg system', 'aria-label': 'System', 'data-task': t.id }, c.text);
        return h(
          'article',
          { class: `msg assistant${c.text ? '' : ' empty'}`, 'aria-label': 'Assistant', 'data-task': t.id },
          c.text ? this.#body(c.text) : null,
          h('p', { class: 'interrupted-note', hidden: true }, 'interrupted: the answer was cut off before it ended'),
          h(
            'div',
            { class: 'msg-tools' },
            h('span', { class: 'reply-meta' }),
            h('span', { class: 'continue-slot' }),
            h(
              'button',
              { type: 'button', class: 'regenerate', onclick: () => this.actions.regenerate(t) },
              'Regenerate',
            ),
            h('span', { class: 'branch-nav' }),
          ),
        );
      }
      case 'functioncall':
        return callCard(t);
      case 'tooldefinition': {
        const d = c.definition;
        const name = 'manifest' in d ? d.manifest.name : d.binding.name;
        return h(
          'article',
          { class: 'tooldef', 'aria-label': `Tool defined in this conversation: ${name}`, 'data-task': t.id },
          h(
            'p',
            {},
            'Tool defined in this conversation: ',
            h('span', { class: 'tool-name' }, name),
            '. Only the messages after this point in this branch can call it.',
          ),
        );
      }
      case 'error':
        return (
          failedCallCard(t) ??
          h(
            'article',
            { class: 'msg error', 'data-task': t.id },
            `${String(c.error.code)}: ${inertText(c.error.message)}`,
          )
        );
      default:
        return h('article', { class: 'msg' }, '');
    }
  }

  /** An assistant text: the streamed rendering when it is the text just streamed, else rendered now. */
  #body(text: string): HTMLElement {
    const s = this.#stream;
    if (s && s.text === text) {
      s.finish();
      this.#stream = undefined;
      replaceChildren(this.#liveBox);
      this.#liveBox.hidden = true;
      return s.root;
    }
    if (this.plain) return h('div', { class: 'text plain' }, text);
    const box = h('div', { class: 'text md' });
    box.append(renderMarkdown(text));
    return box;
  }

  /** The files of a sent message: name, size, "for tools", an image's preview. */
  #attachments(list: Attachment[]): HTMLElement {
    return h(
      'ul',
      { class: 'sent-files', 'aria-label': 'Attached files' },
      ...list.map((a) => {
        const li = h(
          'li',
          { class: 'sent-file' },
          h('span', { class: 'chip-name' }, inertText(a.name)),
          h('span', { class: 'chip-size' }, `${formatBytes(a.bytes)}${a.toTools ? ' · given to tools' : ''}`),
        );
        if (isImage(a) && !a.toTools && this.actions.loadFile)
          void this.actions.loadFile(a.sha256).then((f) => {
            if (f)
              li.prepend(
                h('img', { class: 'chip-thumb', alt: '', src: `data:${a.mediaType};base64,${base64(f.bytes)}` }),
              );
          });
        return li;
      }),
    );
  }

  /** Who answered and the tokens reported ("gpt-4o · 1,234 in · 56 out"); nothing estimated when none came. */
  #meta(el: HTMLElement, m: ReplyMeta | undefined): void {
    const slot = el.querySelector<HTMLElement>('.reply-meta');
    if (!slot) return;
    const tokens = m ? tokensText(m) : '';
    slot.textContent = m ? `${m.model}${tokens ? ` · ${tokens}` : ''}` : '';
    slot.title = m ? `${m.connection}: ${m.model}${tokens ? `, tokens ${tokens}` : ', no token usage reported'}` : '';
  }

  #interrupted(el: HTMLElement, t: Task, on: boolean): void {
    const note = el.querySelector<HTMLElement>('.interrupted-note');
    if (note) note.hidden = !on;
    el.classList.toggle('interrupted', on);
    const slot = el.querySelector<HTMLElement>('.continue-slot');
    if (slot)
      replaceChildren(
        slot,
        on ? h('button', { type: 'button', onclick: () => this.actions.continueAnswer(t) }, 'Continue') : null,
      );
  }

  #branchNav(el: HTMLElement, t: Task, info: BranchInfo | undefined): void {
    const nav = el.querySelector<HTMLElement>('.branch-nav');
    if (!nav) return;
    if (!info || info.count < 2) {
      replaceChildren(nav);
      return;
    }
    replaceChildren(
      nav,
      h(
        'button',
        {
          type: 'button',
          'aria-label': 'Previous branch',
          disabled: info.index === 0,
          onclick: () => this.actions.switchBranch(t, -1),
        },
        '‹',
      ),
      h('span', { class: 'branch-pos' }, `${info.index + 1} / ${info.count}`),
      h(
        'button',
        {
          type: 'button',
          'aria-label': 'Next branch',
          disabled: info.index === info.count - 1,
          onclick: () => this.actions.switchBranch(t, 1),
        },
        '›',
      ),
    );
  }
}
