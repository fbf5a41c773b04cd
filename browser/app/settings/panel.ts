// The settings panel: connections (providers/connection-editor.ts), conversation defaults, streaming and markdown,
// embedding origins, tool secrets, moving settings to another browser; browser app, trusted side.
import { h } from '../dom.js';
import type { AppDb, AppSettings } from '../app-db.js';
import { MAX_SYSTEM_PROMPT } from '../chat/system.js';

/** One labelled field: a <label> wrapping its text and control gives the control its accessible name. */
export function field(label: string, control: HTMLElement, hint?: string): HTMLElement {
  return h(
    'label',
    { class: 'field' },
    h('span', { class: 'label' }, label),
    control,
    hint ? h('small', {}, hint) : null,
  );
}

/** Origins, one per line: only `http(s)://host[:port]` values are kept (no paths, no wildcards). */
export function parseOrigins(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const v = line.trim();
    if (!v) continue;
    try {
      const u = new URL(v);
      if (
        (u.protocol === 'https:' || u.protocol === 'http:') &&
        u.origin === v.replace(/\/$/, '') &&
        !out.includes(u.origin)
      )
        out.push(u.origin);
    } catch {
      /* not an origin: dropped */
    }
  }
  return out;
}

/**
 * The section of app-wide settings ("Conversations"): the default system prompt new conversations start with, model
 * titles, streaming, markdown, embedding origins. Every change is applied to `settings` at once and saved.
 */
export function appSettingsSection(db: AppDb, settings: AppSettings, onChange: () => void): HTMLElement {
  const prompt = h('textarea', { name: 'system-prompt', rows: 3, maxlength: MAX_SYSTEM_PROMPT });
  prompt.value = settings.systemPrompt;
  const titles = h('input', { type: 'checkbox', name: 'model-titles' });
  titles.checked = settings.modelTitles === true;
  const stream = h('input', { type: 'checkbox', name: 'stream' });
  stream.checked = settings.stream;
  const markdown = h('input', { type: 'checkbox', name: 'markdown' });
  markdown.checked = settings.markdown !== false;
  const origins = h('textarea', { name: 'embedding-origins', rows: 2, placeholder: 'https://example.org' });
  origins.value = settings.embeddingOrigins.join('\n');
  const save = () => {
    settings.systemPrompt = prompt.value;
    settings.modelTitles = titles.checked;
    settings.stream = stream.checked;
    settings.markdown = markdown.checked;
    settings.embeddingOrigins = parseOrigins(origins.value);
    void db.putSettings(settings);
    onChange();
  };
  for (const el of [prompt, titles, stream, markdown, origins]) {
    el.addEventListener('input', save);
    el.addEventListener('change', save);
  }
  const promptHint = h(
    'small',
    { id: 'default-prompt-hint' },
    "New conversations start with it; each conversation's own is at its top. The app adds one sentence after it " +
      'about the sandboxed tools.',
  );
  prompt.setAttribute('aria-describedby', 'default-prompt-hint');
  return h(
    'section',
    { class: 'conversation-defaults', 'aria-label': 'Conversation defaults' },
    h('h3', {}, 'Conversations'),
    h(
      'div',
      { class: 'field' },
      h('label', { class: 'field' }, h('span', { class: 'label' }, 'Default system prompt'), prompt),
      promptHint,
    ),
    h(
      'label',
      { class: 'check' },
      titles,
      ' Name conversations with the model (one short extra request after the first answer; else the first words)',
    ),
    h('label', { class: 'check' }, stream, ' Stream responses'),
    h('label', { class: 'check' }, markdown, ' Render markdown'),
    field(
      'Allowed embedding origins',
      origins,
      'Pages (one origin per line) that may embed this app and register tools with it. Empty: none.',
    ),
  );
}

/** The panel: a section with the "Settings" heading holding `sections` in order. */
export function settingsPanel(...sections: HTMLElement[]): HTMLElement {
  return h('section', { class: 'panel settings', 'aria-label': 'Settings' }, h('h2', {}, 'Settings'), ...sections);
}
