// "Send your key to HOST?": asked in the conversation before a connection's saved key (and its extra headers) goes to
// an endpoint origin it was not entered or confirmed for; browser app, trusted side.
import type { AppDb, ConnectionRecord } from '../app-db.js';
import { connectSource } from '../connect.js';
import { h } from '../dom.js';

/** sessionStorage: an endpoint origin the person chose to send to without the key, for this tab. */
const NO_KEY = 'tysandbox-nokey';

export type KeyAnswer = 'send' | 'without' | 'cancel';

/**
 * Show the question in `place` and wait for the answer: "Send key to HOST" (the key is then confirmed for that
 * origin), "Send without key" (this request goes without it), or "Cancel" (nothing is sent). `keyOrigin` names where
 * the key was saved for, so the person sees the two differ. "Send without key" is focused first: a stray Enter never
 * sends the key.
 */
export function askSendKey(place: HTMLElement, host: string, keyOrigins: string[]): Promise<KeyAnswer> {
  return new Promise((resolve) => {
    const buttons = h('div', { class: 'approval-buttons' });
    const card = h(
      'section',
      { class: 'approval key-question', role: 'group', 'aria-label': 'Send your key?' },
      h('h2', {}, `Send your key to ${host}?`),
      h(
        'p',
        {},
        keyOrigins.length
          ? `Your API key was saved for ${keyOrigins.join(', ')}. The endpoint is now ${host} (changed in Settings or set by the link that opened this page).`
          : `Your API key is not confirmed for any endpoint yet. The endpoint is ${host}.`,
        ' A key sent to a server can be used by it.',
      ),
      buttons,
    );
    const answer = (a: KeyAnswer) => {
      card.remove();
      resolve(a);
    };
    const without = h('button', { type: 'button' }, 'Send without key');
    without.addEventListener('click', () => answer('without'));
    const send = h('button', { type: 'button', class: 'allow' }, `Send key to ${host}`);
    send.addEventListener('click', () => answer('send'));
    const cancel = h('button', { type: 'button', class: 'deny' }, 'Cancel');
    cancel.addEventListener('click', () => answer('cancel'));
    buttons.append(without, send, cancel);
    place.append(card);
    card.scrollIntoView({ block: 'nearest' });
    without.focus();
  });
}

/** What a request to a connection carries: its key ('' for none) and its extra headers. */
export interface SentCredentials {
  key: string;
  headers: Record<string, string>;
}

/**
 * The key and extra headers for a request to connection `c` at its endpoint: the saved ones when they are confirmed
 * for the endpoint's origin; none when nothing is saved or the person chose "Send without key" for this connection
 * and origin in this tab; else the answer to askSendKey shown in `place` ("Send key to HOST" confirms the origin for
 * the connection's key). Undefined: the person cancelled; send nothing.
 */
export async function keyForEndpoint(
  db: AppDb,
  c: Pick<ConnectionRecord, 'id' | 'endpoint'>,
  place: HTMLElement,
): Promise<SentCredentials | undefined> {
  const none: SentCredentials = { key: '', headers: {} };
  const rec = await db.getCredentials(c.id);
  if (!rec) return none;
  const origin = connectSource(c.endpoint);
  if (!origin) return none;
  const saved = { key: rec.key, headers: Object.fromEntries(rec.headers.map((x) => [x.name, x.value])) };
  if (rec.origins.includes(origin)) return saved;
  const choice = JSON.stringify([c.id, origin]);
  if (sessionStorage.getItem(NO_KEY) === choice) return none;
  const a = await askSendKey(place, new URL(origin).host, rec.origins);
  if (a === 'cancel') return undefined;
  if (a === 'without') {
    sessionStorage.setItem(NO_KEY, choice);
    return none;
  }
  await db.confirmKeyOrigin(c.id, origin);
  return saved;
}
