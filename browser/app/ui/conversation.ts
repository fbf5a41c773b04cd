// The conversation view: messages, tool-call cards with their results and approvals, branch navigation; browser app,
// trusted side.
import type { Task } from '../../../protocol/task.js';
import { h, replaceChildren, shortId } from '../dom.js';
import { failedCall, type CallOutcome } from '../convert.js';

export interface ConversationActions {
  /** Put a user message back into the composer; sending makes a sibling branch. */
  edit(task: Task): void;
  /** Show the sibling branch `delta` steps from `task` (-1 previous, +1 next). */
  switchBranch(task: Task, delta: number): void;
}

export interface BranchInfo {
  index: number;
  count: number;
}

const MAX_SHOWN = 20_000;

function pretty(v: unknown): string {
  let s: string;
  try {
    s = typeof v === 'string' ? v : (JSON.stringify(v, null, 2) ?? 'null');
  } catch {
    s = String(v);
  }
  return s.length > MAX_SHOWN ? `${s.slice(0, MAX_SHOWN)}\n… [cut: ${s.length - MAX_SHOWN} more characters]` : s;
}

/**
 * Renders the selected branch. Elements are kept per task id between renders, so an approval card placed in a
 * running call's card stays where it is while the conversation grows. All text is set as text.
 */
export class ConversationView {
  readonly root: HTMLElement;
  readonly #list: HTMLElement;
  readonly #live: HTMLElement;
  readonly #notices: HTMLElement;
  readonly #els = new Map<string, HTMLElement>();
  #running = new Set<string>();

  constructor(private readonly actions: ConversationActions) {
    this.#list = h('ol', { class: 'messages', 'aria-label': 'Messages' });
    this.#live = h('div', { class: 'msg assistant streaming', 'aria-live': 'polite', hidden: true });
    this.#notices = h('div', { class: 'notices', role: 'log', 'aria-label': 'Notices' });
    this.root = h(
      'section',
      { class: 'conversation', 'aria-label': 'Conversation' },
      this.#list,
      this.#live,
      this.#notices,
    );
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

  setRunning(ids: Set<string>): void {
    this.#running = ids;
    for (const [id, el] of this.#els)
      if (el.classList.contains('call')) this.#status(el, ids.has(id) ? 'running' : (el.dataset.outcome ?? 'queued'));
  }

  streamText(delta: string): void {
    this.#live.hidden = false;
    this.#live.textContent += delta;
    this.#live.scrollIntoView({ block: 'nearest' });
  }

  clearStream(): void {
    this.#live.textContent = '';
    this.#live.hidden = true;
  }

  notice(text: string, kind: 'info' | 'error'): void {
    this.#notices.append(h('p', { class: `notice ${kind}`, ...(kind === 'error' ? { role: 'alert' } : {}) }, text));
  }

  clearNotices(): void {
    for (const n of this.#notices.querySelectorAll('.notice')) n.remove();
  }

  /** Render `path` (root first); `branches` gives sibling positions of tasks that have siblings. */
  render(path: Task[], branches: Map<string, BranchInfo>): void {
    const results = new Map<string, Task>();
    for (const t of path) if (t.content.type === 'toolresult' && t.content.callTask) results.set(t.content.callTask, t);
    const items: HTMLElement[] = [];
    for (const t of path) {
      if (t.parent === undefined || t.content.type === 'toolresult') continue;
      if (t.content.type === 'message' && t.role === 'assistant' && t.content.text === '') continue;
      let el = this.#els.get(t.id);
      if (!el) {
        el = this.#create(t);
        this.#els.set(t.id, el);
      }
      if (t.role === 'user') this.#branchNav(el, t, branches.get(t.id));
      if (t.content.type === 'functioncall') {
        const r = results.get(t.id);
        if (r && !el.dataset.outcome) this.#result(el, r);
      }
      items.push(h('li', {}, el));
    }
    replaceChildren(this.#list, ...items);
  }

  #create(t: Task): HTMLElement {
    const c = t.content;
    switch (c.type) {
      case 'message':
        if (t.role === 'user') {
          return h(
            'article',
            { class: 'msg user', 'aria-label': 'You', 'data-task': t.id },
            h('div', { class: 'text' }, c.text),
            h(
              'div',
              { class: 'msg-tools' },
              h('button', { type: 'button', class: 'edit', onclick: () => this.actions.edit(t) }, 'Edit'),
              h('span', { class: 'branch-nav' }),
            ),
          );
        }
        return h(
          'article',
          { class: `msg ${t.role}`, 'aria-label': t.role === 'assistant' ? 'Assistant' : 'System', 'data-task': t.id },
          h('div', { class: 'text' }, c.text),
        );
      case 'functioncall': {
        const el = h(
          'article',
          {
            class: 'call',
            'aria-label': `Tool call ${c.name}`,
            'data-task': t.id,
            'data-revision': c.toolRevision ?? '',
            'data-tool': c.name,
            'data-status': 'queued',
          },
          h(
            'header',
            {},
            h('span', { class: 'tool-name' }, c.name),
            ' ',
            h('code', { class: 'rev', title: c.toolRevision ?? '' }, `@${shortId(c.toolRevision)}`),
            ' ',
            h('span', { class: 'call-status', role: 'status' }, 'queued'),
          ),
          h('details', {}, h('summary', {}, 'Arguments'), h('pre', {}, pretty(c.arguments))),
          h('div', { class: 'approvals' }),
          h('div', { class: 'result' }),
        );
        return el;
      }
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
      case 'error': {
        const call = failedCall(t);
        if (call) {
          const el = h(
            'article',
            {
              class: 'call failed',
              'aria-label': `Tool call ${call.name}`,
              'data-task': t.id,
              'data-outcome': 'error',
            },
            h(
              'header',
              {},
              h('span', { class: 'tool-name' }, call.name),
              ' ',
              h('span', { class: 'call-status', role: 'status' }, 'error'),
            ),
            h('div', { class: 'result error' }, `${String(c.error.code)}: ${c.error.message}`),
          );
          return el;
        }
        return h('article', { class: 'msg error', 'data-task': t.id }, `${String(c.error.code)}: ${c.error.message}`);
      }
      default:
        return h('article', { class: 'msg' }, '');
    }
  }

  #status(el: HTMLElement, s: string): void {
    el.dataset.status = s;
    const st = el.querySelector('.call-status');
    if (st && st.textContent !== s) st.textContent = s;
  }

  #result(el: HTMLElement, r: Task): void {
    if (r.content.type !== 'toolresult') return;
    const o = r.content.result as CallOutcome;
    el.dataset.outcome = o.ok ? 'ok' : 'error';
    this.#status(el, o.ok ? 'done' : 'error');
    const box = el.querySelector<HTMLElement>('.result');
    if (!box) return;
    box.classList.toggle('error', !o.ok);
    replaceChildren(
      box,
      o.ok
        ? h('pre', { 'aria-label': 'Result' }, pretty(o.value))
        : h('p', { 'aria-label': 'Error' }, `${o.error.code}: ${o.error.message}`),
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
