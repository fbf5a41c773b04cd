// Inline approvals: the host's capability questions shown in the conversation at the call that asked; browser app, trusted side.
import type { Answer, AskChannel, Question } from '../../../core/runtime.js';
import { sanitizeForDisplay, sanitizeInline } from '../../../core/text.js';
import { h } from '../dom.js';

const CHOICES: { label: string; scope: Answer['scope'] }[] = [
  { label: 'Allow once', scope: 'once' },
  { label: 'Allow for this session', scope: 'session' },
  { label: 'Always allow', scope: 'permanent' },
];

/**
 * An AskChannel (core/runtime.ts) that renders each question as a card inside the conversation: in the card of
 * the running call whose revision asked (found by `placeFor`), else at the end of the conversation. Text is
 * sanitized by core/text.ts (controls, bidi, zero-width and other invisible characters made visible, lines cut
 * at 600 characters) and set as text. Buttons: "Deny" (first, focused, so a stray Enter never allows), then the
 * scopes the question offers: "Allow once", "Allow for this session", "Always allow". The router asks one
 * question at a time; an abort (Stop, timeout, another channel answered) marks the card withdrawn. What an
 * answer means for later calls (session and permanent grants) is the host gate's business.
 */
export class InlineAskChannel implements AskChannel {
  readonly name = 'chat-inline';

  constructor(private readonly placeFor: (revision: string | undefined) => HTMLElement) {}

  live(): boolean {
    return typeof document !== 'undefined' && document.visibilityState === 'visible';
  }

  ask(q: Question, signal: AbortSignal): Promise<Answer | undefined> {
    if (signal.aborted) return Promise.resolve(undefined);
    const revision = q.details.map((d) => /^revision: (\S+)$/.exec(d)?.[1]).find(Boolean);
    return new Promise((resolve) => {
      const status = h('p', { class: 'approval-status', role: 'status' });
      const buttons = h('div', { class: 'approval-buttons' });
      const details = q.details.flatMap((d) => sanitizeForDisplay(d)).filter((l) => !l.startsWith('principal: '));
      const card = h(
        'section',
        { class: 'approval', role: 'group', 'aria-label': 'Approval needed', 'data-question': q.id },
        h('h3', {}, sanitizeInline(q.title)),
        h('pre', { class: 'approval-details' }, details.join('\n')),
        buttons,
        status,
      );
      let done = false;
      const finish = (a: Answer | undefined, text: string) => {
        if (done) return;
        done = true;
        signal.removeEventListener('abort', onAbort);
        buttons.remove();
        card.classList.add(a?.allow ? 'approved' : 'refused');
        status.textContent = text;
        resolve(a);
      };
      const onAbort = () => finish(undefined, 'Withdrawn: no answer needed any more.');
      const deny = h('button', { type: 'button', class: 'deny', onclick: () => finish({ allow: false, scope: 'once', channel: this.name }, 'Denied.') }, 'Deny');
      buttons.append(deny);
      const scopes = q.scopes && q.scopes.length > 0 ? q.scopes : ['once'];
      for (const c of CHOICES) {
        if (!scopes.includes(c.scope)) continue;
        buttons.append(h('button', { type: 'button', class: 'allow', onclick: () => finish({ allow: true, scope: c.scope, channel: this.name }, `Allowed (${c.label.toLowerCase()}).`) }, c.label));
      }
      signal.addEventListener('abort', onAbort, { once: true });
      const place = this.placeFor(revision);
      place.append(card);
      card.scrollIntoView({ block: 'nearest' });
      deny.focus();
    });
  }
}
