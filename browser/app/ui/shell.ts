// The app shell: pinned header and composer, the conversation list (a drawer below 720 px), panels (full-screen sheets
// below 720 px) and the remembered light/dark theme; browser app, trusted side.
import { h, replaceChildren } from '../dom.js';

/** Below this width (px) the conversation list is a drawer and panels are full-screen sheets (app.css agrees). */
export const NARROW_PX = 720;

export type Theme = 'light' | 'dark';

/** The theme in effect: the one chosen with "Theme", else the system's (`prefers-color-scheme`). */
export function effectiveTheme(): Theme {
  const set = document.documentElement.dataset.theme;
  if (set === 'light' || set === 'dark') return set;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

/** Apply a chosen theme (undefined: follow the system). */
export function applyTheme(t: Theme | undefined): void {
  if (t) document.documentElement.dataset.theme = t;
  else delete document.documentElement.dataset.theme;
  const meta = document.querySelector('meta[name="color-scheme"]');
  meta?.setAttribute('content', t ?? 'light dark');
}

/** The conversation list: one button per conversation (newest first), the current one marked `aria-current`. */
export function showConversations(
  list: HTMLElement,
  convs: { id: string; title: string }[],
  current: string,
  open: (id: string) => void,
): void {
  replaceChildren(
    list,
    ...convs.map((c) =>
      h(
        'li',
        {},
        h(
          'button',
          { type: 'button', 'aria-current': c.id === current ? 'true' : undefined, onclick: () => open(c.id) },
          c.title,
        ),
      ),
    ),
  );
}

export interface ShellParts {
  /** Toolbar buttons before the panel toggles (New conversation). */
  lead: HTMLElement[];
  /** Panels by toggle label: each returns the panel's content (a section with an h2). */
  panels: { label: string; make: () => HTMLElement; onClose?: () => void }[];
  /** Toolbar buttons after the panel toggles (Export, Import). */
  tail: HTMLElement[];
  /** The conversation list (a list element). */
  conversations: HTMLElement;
  /** The conversation and the composer. */
  main: HTMLElement[];
  /** Save the theme chosen with "Theme". */
  saveTheme(t: Theme): void;
}

/**
 * Builds the shell into `root`: a header (the "Conversations" drawer button on narrow screens, the title, the toolbar
 * with the panel toggles and "Theme"), the conversation list, the main column and the panel area. Only the
 * conversation scrolls (app.css: the body is a fixed-height grid). A panel opens beside the conversation on wide
 * screens and as a full-screen sheet with "Close" on narrow ones; Escape closes it and the drawer.
 */
export class Shell {
  readonly drawerButton = h(
    'button',
    { type: 'button', class: 'drawer-toggle', 'aria-expanded': 'false', 'aria-controls': 'conversation-list' },
    'Conversations',
  );
  readonly sidebar: HTMLElement;
  readonly panelArea = h('div', { class: 'panels' });
  readonly #toggles = new Map<string, HTMLButtonElement>();
  #open: { label: string; onClose?: (() => void) | undefined } | undefined;

  constructor(
    root: HTMLElement,
    private readonly parts: ShellParts,
  ) {
    this.sidebar = h(
      'aside',
      { class: 'sidebar', id: 'conversation-list', 'aria-label': 'Conversation list' },
      h('h2', {}, 'Conversations'),
      parts.conversations,
    );
    this.drawerButton.addEventListener('click', () => this.drawer(this.drawerButton.ariaExpanded !== 'true'));
    const theme = h(
      'button',
      { type: 'button', class: 'theme-toggle', title: 'Switch between light and dark' },
      'Theme',
    );
    theme.addEventListener('click', () => {
      const next: Theme = effectiveTheme() === 'dark' ? 'light' : 'dark';
      applyTheme(next);
      parts.saveTheme(next);
    });
    const toggles = parts.panels.map((p) => {
      const b = h('button', { type: 'button', 'aria-expanded': 'false' }, p.label);
      b.addEventListener('click', () => (this.#open?.label === p.label ? this.closePanel() : this.openPanel(p.label)));
      this.#toggles.set(p.label, b);
      return b;
    });
    const toolbar = h(
      'nav',
      { class: 'toolbar', 'aria-label': 'App' },
      ...parts.lead,
      ...toggles,
      ...parts.tail,
      theme,
    );
    const scrim = h('div', { class: 'scrim', hidden: true });
    scrim.addEventListener('click', () => this.drawer(false));
    replaceChildren(
      root,
      h('header', { class: 'top' }, this.drawerButton, h('h1', {}, 'tysandbox chat'), toolbar),
      h('div', { class: 'body' }, this.sidebar, scrim, h('main', {}, ...parts.main), this.panelArea),
    );
    root.addEventListener('keydown', (ev) => {
      if (ev.key !== 'Escape') return;
      if (this.drawerButton.ariaExpanded === 'true') this.drawer(false);
      else if (this.#open && !(ev.target as HTMLElement | null)?.closest('.approval')) this.closePanel();
    });
  }

  /** Open or close the conversation drawer (narrow screens; on wide ones the list is always shown). */
  drawer(open: boolean): void {
    this.drawerButton.setAttribute('aria-expanded', String(open));
    document.body.classList.toggle('drawer-open', open);
    const scrim = this.sidebar.nextElementSibling as HTMLElement | null;
    if (scrim) scrim.hidden = !open;
    if (open) this.sidebar.querySelector<HTMLElement>('button')?.focus();
  }

  /** The label of the open panel, if any. */
  get openLabel(): string | undefined {
    return this.#open?.label;
  }

  openPanel(label: string): void {
    const p = this.parts.panels.find((x) => x.label === label);
    if (!p) return;
    if (this.#open) this.closePanel(false);
    for (const b of this.#toggles.values()) b.setAttribute('aria-expanded', 'false');
    this.#toggles.get(label)?.setAttribute('aria-expanded', 'true');
    const content = p.make();
    const close = h('button', { type: 'button', class: 'close-panel' }, 'Close');
    close.addEventListener('click', () => this.closePanel());
    content.prepend(close);
    replaceChildren(this.panelArea, content);
    document.body.classList.add('panel-open');
    this.#open = { label, onClose: p.onClose };
    if (matchMedia(`(max-width: ${NARROW_PX - 0.02}px)`).matches) close.focus();
  }

  closePanel(focusToggle = true): void {
    const was = this.#open;
    if (!was) return;
    this.#open = undefined;
    replaceChildren(this.panelArea);
    document.body.classList.remove('panel-open');
    const b = this.#toggles.get(was.label);
    b?.setAttribute('aria-expanded', 'false');
    if (focusToggle) b?.focus();
    was.onClose?.();
  }
}
