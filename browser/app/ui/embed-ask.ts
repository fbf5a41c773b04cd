// The question a person gets inside the app when a page that frames it asks to use its tools for the first time, and
// the notice saying where the app keeps its data when it runs inside another site; browser app, trusted side.
import { h } from '../dom.js';
import type { AppDb, AppSettings } from '../app-db.js';
import type { AppStorage } from '../embed-storage.js';

/**
 * Ask, in a modal dialog of the app, whether the page of `origin` may use this app's tools. "Allow this page" adds the
 * origin to Settings → "Allowed embedding origins" (kept as this app's storage keeps anything); "Don't allow" (or
 * closing the dialog) leaves it out. One question at a time; the origin is shown as text, never as markup.
 */
export function askToEmbed(origin: string, settings: AppSettings, db: AppDb): Promise<boolean> {
  return new Promise((resolve) => {
    const allow = h('button', { type: 'button', class: 'primary' }, 'Allow this page');
    const deny = h('button', { type: 'button' }, 'Don’t allow');
    const dialog = h(
      'dialog',
      { class: 'embed-ask', 'aria-labelledby': 'embed-ask-title' },
      h('h2', { id: 'embed-ask-title' }, 'Let this page use the app’s tools?'),
      h('p', {}, 'The page ', h('strong', {}, origin), ' shows this app and asks to add, run and change its tools.'),
      h(
        'p',
        {},
        'Each call still follows your rules and asks you when they say so; everything it does is in the Audit.',
      ),
      h('p', { class: 'actions' }, allow, deny),
    );
    const actions = dialog.querySelector<HTMLElement>('.actions')!;
    actions.style.display = 'flex';
    actions.style.flexWrap = 'wrap';
    actions.style.gap = '.5rem';
    dialog.style.maxWidth = 'min(36rem, calc(100vw - 2rem))';
    let done = false;
    const finish = async (yes: boolean): Promise<void> => {
      if (done) return;
      done = true;
      if (yes && !settings.embeddingOrigins.includes(origin)) {
        settings.embeddingOrigins = [...settings.embeddingOrigins, origin];
        await db.putSettings(settings).catch(() => undefined);
      }
      dialog.close();
      dialog.remove();
      resolve(yes);
    };
    allow.addEventListener('click', () => void finish(true));
    deny.addEventListener('click', () => void finish(false));
    dialog.addEventListener('close', () => void finish(false));
    document.body.append(dialog);
    dialog.showModal();
    deny.focus();
  });
}

/** What each storage mode means for the person, in plain words (undefined: nothing to say). */
export function storageText(s: AppStorage): string | undefined {
  switch (s.mode) {
    case 'first-party':
    case 'unpartitioned':
      return undefined;
    case 'partitioned':
      return 'This app is shown inside another site: what you do here is kept for this site only, apart from the app opened on its own.';
    case 'memory':
      return 'This browser does not let the app keep data inside another site: conversations, tools, settings and the audit last only until this page closes.';
  }
}

/**
 * The notice at the top of the app in a cross-site frame, with the button "Allow this app to keep its data here"
 * (the Storage Access API needs a click). After the browser grants access the app starts again on the kept data; a
 * refusal is said in the notice.
 */
export function storageNotice(s: AppStorage, request: () => Promise<string | undefined>): HTMLElement | undefined {
  const text = storageText(s);
  if (!text || !s.canRequest) return text ? h('p', { class: 'storage-notice', role: 'status' }, text) : undefined;
  const said = h('span', {}, text);
  const button = h('button', { type: 'button' }, 'Allow this app to keep its data here');
  const box = h('p', { class: 'storage-notice', role: 'status' }, said, ' ', button);
  button.addEventListener('click', () => {
    button.disabled = true;
    void request().then((refused) => {
      if (refused === undefined) return; // granted: the app reloads
      said.textContent = `${text} The browser did not allow it: ${refused}.`;
      button.disabled = false;
    });
  });
  return box;
}
