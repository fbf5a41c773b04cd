// Inline approvals: the host's approval questions (host.approvals) rendered in the conversation at the call that asked;
// browser app, trusted side.
import type { ApprovalChannel, ApprovalChoice, ApprovalQuestion } from '../../ask/app.js';
import { sanitizeInline } from '../../../core/ask/text.js';
import { h, shortId } from '../dom.js';

const LABELS: Record<ApprovalChoice, string> = {
  deny: 'Deny',
  once: 'Allow once',
  session: 'Allow for this session',
  always: 'Always allow',
};
const DONE: Record<ApprovalChoice, string> = {
  deny: 'Denied.',
  once: 'Allowed once.',
  session: 'Allowed for this session.',
  always: 'Always allowed (for this revision).',
};

/**
 * Render each question of the host's asynchronous approval channel (browser/ask/app.ts) as a card inside the
 * conversation: in the card of the running call whose revision asked (`placeFor`), else at the end of the
 * conversation. The host gives plain sanitized text; it is made inert once more (core/ask/text.ts) and set as text.
 * Buttons in the host's order: "Deny" (focused, so a stray Enter never allows), then "Allow once", "Allow for this
 * session", "Always allow" as offered. The router asks one question at a time; when the question is withdrawn
 * (Stop, no answer in time, answered elsewhere) the card says so. What an answer means for later uses (session
 * and permanent grants per revision) is the host gate's rule. Returns the unsubscribe function.
 */
export function mountInlineApprovals(
  channel: ApprovalChannel,
  placeFor: (revision: string | undefined, tool?: string) => HTMLElement,
  /** Told when a card is placed (`open`) and when it is answered or withdrawn, with the element it went into. */
  onAsk: (place: HTMLElement, open: boolean) => void = () => {},
): () => void {
  const render = (q: ApprovalQuestion) => {
    const status = h('p', { class: 'approval-status', role: 'status' });
    const buttons = h('div', { class: 'approval-buttons' });
    const lines = [...q.text, ...(q.argsPreview.length ? ['', ...q.argsPreview] : [])].map((l) => sanitizeInline(l));
    const card = h(
      'section',
      { class: 'approval', role: 'group', 'aria-label': 'Approval needed', 'data-question': q.id },
      h('h2', {}, sanitizeInline(q.title)),
      h('pre', { class: 'approval-details' }, lines.join('\n')),
      h(
        'p',
        { class: 'approval-facts' },
        `Revision @${sanitizeInline(shortId(q.revision))} (a new revision of this tool starts with no grants)`,
      ),
      buttons,
      status,
    );
    let place: HTMLElement | undefined;
    const finish = (text: string, cls: string) => {
      buttons.remove();
      card.classList.add(cls);
      status.textContent = text;
      if (place) onAsk(place, false);
    };
    const onWithdrawn = () => finish('Withdrawn: no answer needed any more.', 'refused');
    q.signal.addEventListener('abort', onWithdrawn, { once: true });
    let first: HTMLButtonElement | undefined;
    for (const c of q.choices) {
      const b = h('button', { type: 'button', class: c === 'deny' ? 'deny' : 'allow' }, LABELS[c]);
      b.addEventListener('click', () => {
        q.signal.removeEventListener('abort', onWithdrawn);
        if (q.answer(c)) finish(DONE[c], c === 'deny' ? 'refused' : 'approved');
        else onWithdrawn();
      });
      buttons.append(b);
      first ??= b;
    }
    place = placeFor(q.revision, q.tool);
    place.append(card);
    onAsk(place, true);
    card.scrollIntoView({ block: 'nearest' });
    first?.focus();
  };
  for (const q of channel.pending()) render(q);
  return channel.subscribe(render);
}
