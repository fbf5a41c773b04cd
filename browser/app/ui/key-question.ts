// "Send your key to HOST?": asked in the conversation before the saved API key goes to an endpoint origin it was not
// entered or confirmed for; browser app, trusted side.
import type { AppDb } from '../app-db.js';
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

/**
 * The key for a request to `endpoint`: the saved key when it is confirmed for the endpoint's origin, '' when none is
 * saved or the person chose "Send without key" for this origin in this tab, else the answer to askSendKey shown in
 * `place` ("Send key to HOST" confirms the origin for the key). Undefined: the person cancelled; send nothing.
 */
export async function keyForEndpoint(db: AppDb, endpoint: string, place: HTMLElement): Promise<string | undefined> {
  const rec = await db.getKeyRecord();
  if (!rec) return '';
  const origin = connectSource(endpoint);
  if (!origin) return '';
  if (rec.origins.includes(origin)) return rec.key;
  if (sessionStorage.getItem(NO_KEY) === JSON.stringify(origin)) return '';
  const a = await askSendKey(place, new URL(origin).host, rec.origins);
  if (a === 'cancel') return undefined;
  if (a === 'without') {
    sessionStorage.setItem(NO_KEY, JSON.stringify(origin));
    return '';
  }
  await db.confirmKeyOrigin(origin);
  return rec.key;
}
