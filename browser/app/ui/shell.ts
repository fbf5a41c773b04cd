// The app shell: "Skip to message box", pinned header (its less used actions under "More" below 720 px) and composer,
// the conversation list (a drawer below 720 px), panels (full-screen sheets below 720 px), Escape closing what is
// open and focus going back where it was, the remembered light/dark theme; browser app, trusted side.
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

export interface ShellParts {
  /** Toolbar buttons before the panel toggles (New conversation). */
  lead: HTMLElement[];
  /**
   * Panels by toggle label: each returns the panel's content (a section with an h2). `secondary`: its toggle goes
   * under "More" on narrow screens.
   */
  panels: { label: string; make: () => HTMLElement; onClose?: () => void; secondary?: boolean }[];
  /** Toolbar controls after the panel toggles (Export, Import, Keyboard shortcuts): under "More" on narrow screens. */
  tail: HTMLElement[];
  /** The sidebar's content under its heading: the search box, the conversation list. */
  conversations: HTMLElement[];
  /** The conversation and the composer. */
  main: HTMLElement[];
  /** Focus the message box ("Skip to message box"). */
  focusMessage(): void;
  /** Save the theme chosen with "Theme". */
  saveTheme(t: Theme): void;
}

/** Is `el` shown (in the document, not hidden by CSS)? */
function shown(el: HTMLElement | null | undefined): el is HTMLElement {
  return !!el?.isConnected && el.getClientRects().length > 0;
}

/**
 * Builds the shell into `root`: "Skip to message box" (the first Tab stop), a header (the "Conversations" drawer button
 * on narrow screens, the title, the toolbar with the panel toggles and "Theme"; on narrow screens the less used ones
 * under "More"), the conversation list, the main column and the panel area. Only the conversation scrolls (app.css:
 * the body is a fixed-height grid). A panel opens beside the conversation on wide screens and as a full-screen sheet
 * with "Close" on narrow ones. Escape closes the "More" menu, else the drawer, else the panel, and focus goes back
 * to where it was before it opened.
 */
export class Shell {
  readonly drawerButton = h(
    'button',
    { type: 'button', class: 'drawer-toggle', 'aria-expanded': 'false', 'aria-controls': 'conversation-list' },
    'Conversations',
  );
  readonly moreButton = h(
    'button',
    { type: 'button', class: 'more-toggle', 'aria-expanded': 'false', 'aria-controls': 'more-actions' },
    'More',
  );
  readonly moreItems = h('div', { class: 'more-items', id: 'more-actions' });
  readonly sidebar: HTMLElement;
  readonly panelArea = h('div', { class: 'panels' });
  readonly #toggles = new Map<string, HTMLButtonElement>();
  #open: { label: string; onClose?: (() => void) | undefined; back: HTMLElement | null } | undefined;
  #drawerBack: HTMLElement | null = null;
  /** What the open drawer covers: made inert while it is open (HTML `inert`), so focus stays in the drawer. */
  #behind: HTMLElement[] = [];

  constructor(
    root: HTMLElement,
    private readonly parts: ShellParts,
  ) {
    this.sidebar = h(
      'aside',
      { class: 'sidebar', id: 'conversation-list', 'aria-label': 'Conversation list' },
      h('h2', {}, 'Conversations'),
      ...parts.conversations,
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
    const toggle = (p: ShellParts['panels'][number]) => {
      const b = h('button', { type: 'button', 'aria-expanded': 'false' }, p.label);
      b.addEventListener('click', () => (this.#open?.label === p.label ? this.closePanel() : this.openPanel(p.label)));
      this.#toggles.set(p.label, b);
      return b;
    };
    const primary = parts.panels.filter((p) => !p.secondary).map(toggle);
    const secondary = parts.panels.filter((p) => p.secondary).map(toggle);
    this.moreItems.append(...secondary, ...parts.tail, theme);
    this.moreButton.addEventListener('click', () => this.more(this.moreButton.ariaExpanded !== 'true'));
    // a choice in the menu closes it (after its own click handler ran)
    this.moreItems.addEventListener('click', (ev) => {
      if ((ev.target as HTMLElement).closest('button') && this.moreButton.ariaExpanded === 'true')
        this.more(false, false);
    });
    document.addEventListener('pointerdown', (ev) => {
      const t = ev.target as Node;
      if (this.moreButton.ariaExpanded === 'true' && !this.moreItems.contains(t) && !this.moreButton.contains(t))
        this.more(false, false);
    });
    const toolbar = h(
      'nav',
      { class: 'toolbar', 'aria-label': 'App' },
      ...parts.lead,
      ...primary,
      this.moreButton,
      this.moreItems,
    );
    const scrim = h('div', { class: 'scrim', hidden: true });
    scrim.addEventListener('click', () => this.drawer(false));
    const skip = h('a', { class: 'skip-link', href: '#message' }, 'Skip to message box');
    skip.addEventListener('click', (ev) => {
      ev.preventDefault();
      parts.focusMessage();
    });
    const header = h('header', { class: 'top' }, this.drawerButton, h('h1', {}, 'tysandbox chat'), toolbar);
    const main = h('main', {}, ...parts.main);
    this.#behind = [skip, header, main, this.panelArea];
    replaceChildren(root, skip, header, h('div', { class: 'body' }, this.sidebar, scrim, main, this.panelArea));
    // the drawer is modal: Tab and Shift+Tab go round its controls (the page behind is inert meanwhile)
    this.sidebar.addEventListener('keydown', (ev) => {
      if (ev.key !== 'Tab' || this.drawerButton.ariaExpanded !== 'true') return;
      const stops = [...this.sidebar.querySelectorAll<HTMLElement>('button, input, [tabindex="0"]')].filter(
        (el) => shown(el) && !(el as HTMLButtonElement).disabled && el.tabIndex >= 0,
      );
      const first = stops[0];
      const last = stops.at(-1);
      if (!first || !last) return;
      if (!ev.shiftKey && document.activeElement === last) first.focus();
      else if (ev.shiftKey && document.activeElement === first) last.focus();
      else return;
      ev.preventDefault();
    });
    // widened past the drawer's breakpoint while it is open: the list is a column again, nothing stays inert
    matchMedia(`(max-width: ${NARROW_PX - 0.02}px)`).addEventListener('change', (ev) => {
      if (!ev.matches && this.drawerButton.ariaExpanded === 'true') this.drawer(false);
    });
    root.addEventListener('keydown', (ev) => {
      if (ev.key !== 'Escape' || ev.defaultPrevented) return;
      if (this.moreButton.ariaExpanded === 'true') this.more(false);
      else if (this.drawerButton.ariaExpanded === 'true') this.drawer(false);
      else if (this.#open && !(ev.target as HTMLElement | null)?.closest('.approval')) this.closePanel();
      else return;
      ev.preventDefault();
    });
  }

  /** Open or close the "More" menu (narrow screens); closing puts focus back on "More" unless `focusBack` is false. */
  more(open: boolean, focusBack = true): void {
    this.moreButton.setAttribute('aria-expanded', String(open));
    this.moreItems.classList.toggle('open', open);
    if (open) this.moreItems.querySelector<HTMLElement>('button, input, label')?.focus();
    else if (focusBack) this.moreButton.focus();
  }

  /** Is the screen narrow (drawer and sheets)? */
  narrow(): boolean {
    return matchMedia(`(max-width: ${NARROW_PX - 0.02}px)`).matches;
  }

  /**
   * Open or close the conversation drawer (narrow screens; on wide ones the list is always shown). It is modal: while
   * open, everything behind it is `inert` (HTML Living Standard, "inert") and Tab goes round its controls. Opening
   * puts focus on `focus` (default: the list's Tab stop); closing puts it back where it was (the "Conversations"
   * button when that was in the drawer or is gone).
   */
  drawer(open: boolean, focus?: HTMLElement): void {
    const was = this.drawerButton.ariaExpanded === 'true';
    this.drawerButton.setAttribute('aria-expanded', String(open));
    document.body.classList.toggle('drawer-open', open);
    const scrim = this.sidebar.nextElementSibling as HTMLElement | null;
    if (scrim) scrim.hidden = !open;
    if (open && !was) this.#drawerBack = document.activeElement as HTMLElement | null;
    // before focus moves back: an inert element cannot take focus
    for (const el of this.#behind) el.inert = open;
    if (open)
      (
        focus ??
        this.sidebar.querySelector<HTMLElement>('button.conv[tabindex="0"]') ??
        this.sidebar.querySelector('button')
      )?.focus();
    else if (was) {
      const back = this.#drawerBack;
      this.#drawerBack = null;
      if (back && !this.sidebar.contains(back) && back !== document.body && shown(back)) back.focus();
      else if (shown(this.drawerButton)) this.drawerButton.focus();
    }
  }

  /** The label of the open panel, if any. */
  get openLabel(): string | undefined {
    return this.#open?.label;
  }

  openPanel(label: string): void {
    const p = this.parts.panels.find((x) => x.label === label);
    if (!p) return;
    const active = document.activeElement as HTMLElement | null;
    const back = this.#open ? this.#open.back : active && !this.panelArea.contains(active) ? active : null;
    if (this.#open) this.closePanel(false);
    for (const b of this.#toggles.values()) b.setAttribute('aria-expanded', 'false');
    this.#toggles.get(label)?.setAttribute('aria-expanded', 'true');
    const content = p.make();
    const close = h('button', { type: 'button', class: 'close-panel' }, 'Close');
    close.addEventListener('click', () => this.closePanel());
    content.prepend(close);
    replaceChildren(this.panelArea, content);
    document.body.classList.add('panel-open');
    this.#open = { label, onClose: p.onClose, back };
    if (this.narrow()) close.focus();
  }

  /** Close the open panel; focus goes back where it was before it opened (else to its toggle, or to "More"). */
  closePanel(focusBack = true): void {
    const was = this.#open;
    if (!was) return;
    this.#open = undefined;
    replaceChildren(this.panelArea);
    document.body.classList.remove('panel-open');
    const b = this.#toggles.get(was.label);
    b?.setAttribute('aria-expanded', 'false');
    if (focusBack) {
      const target = [was.back, b, this.moreButton].find((x) => shown(x));
      target?.focus();
    }
    was.onClose?.();
  }
}
