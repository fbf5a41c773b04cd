// A tool call's card: name, revision, state (one colour each), duration, arguments and result as inert JSON, long
// results folded, "Run again" after an interruption; browser app, trusted side.
import { inertJson, inertText } from '../../../core/ask/text.js';
import type { Task } from '../../../protocol/task.js';
import { failedCall, type CallOutcome } from '../chat/convert.js';
import { h, replaceChildren, shortId } from '../dom.js';

/** The states a call card shows, each with its own colour (app.css `.call[data-status=...]`). */
export type CallState = 'queued' | 'running' | 'waiting' | 'done' | 'failed' | 'denied' | 'interrupted';

/** The words shown for each state. */
export const STATE_LABEL: Record<CallState, string> = {
  queued: 'queued',
  running: 'running',
  waiting: 'waiting for you',
  done: 'done',
  failed: 'failed',
  denied: 'denied',
  interrupted: 'interrupted',
};

/** Codes that mean a rule, a person or the target policy said no (as opposed to the tool failing). */
const DENIED = new Set([
  'E_CAPABILITY_DENIED',
  'E_SECRET_DENIED',
  'E_FETCH_TARGET',
  'E_FETCH_SCHEME',
  'E_FETCH_CREDENTIALS',
  'E_HOOK_BLOCKED',
  'E_PAUSED',
]);

/** The state a finished call's outcome puts its card in. */
export function stateOf(o: CallOutcome): CallState {
  if (o.ok) return 'done';
  if (o.error.code === 'E_INTERRUPTED' || o.error.code === 'E_ABORTED') return 'interrupted';
  return DENIED.has(o.error.code) ? 'denied' : 'failed';
}

/** Lines of a result shown before "Show all". */
export const FOLD_LINES = 12;
/** Characters shown at most, even after "Show all" (the rest is cut with a marker). */
const MAX_SHOWN = 200_000;

function json(v: unknown): string {
  let s: string;
  try {
    s = typeof v === 'string' ? inertText(v) : inertJson(v, 2);
  } catch {
    s = inertText(String(v));
  }
  return s.length > MAX_SHOWN ? `${s.slice(0, MAX_SHOWN)}\n… [cut: ${s.length - MAX_SHOWN} more characters]` : s;
}

/** A `pre` of text, folded to FOLD_LINES lines with a "Show all" button when longer. */
export function folded(text: string, label: string): HTMLElement {
  const lines = text.split('\n');
  const pre = h('pre', { 'aria-label': label, tabindex: 0 });
  if (lines.length <= FOLD_LINES) {
    pre.textContent = text;
    return pre;
  }
  pre.textContent = `${lines.slice(0, FOLD_LINES).join('\n')}\n…`;
  const more = h('button', { type: 'button', class: 'show-all' }, `Show all (${lines.length} lines)`);
  more.setAttribute('aria-label', 'Show all');
  more.addEventListener('click', () => {
    pre.textContent = text;
    more.remove();
  });
  return h('div', { class: 'fold' }, pre, more);
}

export function formatMs(ms: number): string {
  return ms < 1000
    ? `${Math.round(ms)} ms`
    : ms < 60_000
      ? `${(ms / 1000).toFixed(1)} s`
      : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export interface CallCardActions {
  /** Run an interrupted call again (a new branch from its results). */
  runAgain(call: Task): void;
}

/** Set a card's state: its attribute (the colour) and its status text, nothing else. */
export function setCallState(el: HTMLElement, s: CallState): void {
  el.dataset.status = s;
  const st = el.querySelector('.call-status');
  if (st && st.textContent !== STATE_LABEL[s]) st.textContent = STATE_LABEL[s];
}

/** The card of a function-call task (queued until its run starts). */
export function callCard(t: Task): HTMLElement {
  const c = t.content;
  if (c.type !== 'functioncall') throw new Error('not a function call');
  return h(
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
      h('span', { class: 'tool-name' }, inertText(c.name)),
      ' ',
      h('code', { class: 'rev', title: c.toolRevision ?? '' }, `@${shortId(c.toolRevision)}`),
      ' ',
      h('span', { class: 'call-status', role: 'status' }, STATE_LABEL.queued),
      h('span', { class: 'call-time' }),
    ),
    h('details', {}, h('summary', {}, 'Arguments'), folded(json(c.arguments), 'Arguments')),
    h('div', { class: 'progress-slot' }),
    h('div', { class: 'approvals' }),
    h('div', { class: 'result' }),
    h('div', { class: 'call-actions' }),
  );
}

/** Show a finished call's outcome in its card: state, duration, result or error, "Run again" when interrupted. */
export function showOutcome(
  el: HTMLElement,
  t: Task,
  o: CallOutcome,
  ms: number | undefined,
  actions: CallCardActions,
) {
  const s = stateOf(o);
  el.dataset.outcome = o.ok ? 'ok' : 'error';
  setCallState(el, s);
  const time = el.querySelector('.call-time');
  if (time) time.textContent = ms !== undefined ? ` · ${formatMs(ms)}` : '';
  el.querySelector('.progress-slot')?.replaceChildren();
  const box = el.querySelector<HTMLElement>('.result');
  if (box) {
    box.classList.toggle('error', !o.ok);
    replaceChildren(
      box,
      o.ok
        ? folded(json(o.value), 'Result')
        : h('p', { 'aria-label': 'Error' }, `${inertText(o.error.code)}: ${inertText(o.error.message)}`),
    );
  }
  const act = el.querySelector<HTMLElement>('.call-actions');
  if (act)
    replaceChildren(
      act,
      s === 'interrupted' ? h('button', { type: 'button', onclick: () => actions.runAgain(t) }, 'Run again') : null,
    );
}

/** The card of a call that never became a function-call task (unknown tool, arguments that are not an object). */
export function failedCallCard(t: Task): HTMLElement | undefined {
  const call = failedCall(t);
  if (!call || t.content.type !== 'error') return undefined;
  const e = t.content.error;
  return h(
    'article',
    {
      class: 'call',
      'aria-label': `Tool call ${call.name}`,
      'data-task': t.id,
      'data-outcome': 'error',
      'data-status': 'failed',
    },
    h(
      'header',
      {},
      h('span', { class: 'tool-name' }, inertText(call.name)),
      ' ',
      h('span', { class: 'call-status', role: 'status' }, STATE_LABEL.failed),
    ),
    h('div', { class: 'result error' }, `${inertText(String(e.code))}: ${inertText(e.message)}`),
  );
}
