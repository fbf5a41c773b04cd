// A conversation's own settings, collapsed at its top: its system prompt, temperature and reply limit; browser app,
// trusted side.
import type { ConversationRecord } from '../app-db.js';
import { h, replaceChildren } from '../dom.js';
import { MAX_OUTPUT_TOKENS, MAX_SYSTEM_PROMPT } from '../chat/system.js';

export type ConversationSettings = Pick<ConversationRecord, 'systemPrompt' | 'temperature' | 'maxTokens'>;

/** The first line of a prompt, short, for the collapsed summary. */
function preview(p: string | undefined): string {
  const line = (p ?? '').trim().split('\n')[0] ?? '';
  return line ? (line.length > 70 ? `${line.slice(0, 70)}…` : line) : 'none';
}

/** A number field's value: undefined when empty or not a number. */
function num(el: HTMLInputElement): number | undefined {
  if (el.value.trim() === '') return undefined;
  const n = Number(el.value);
  return Number.isFinite(n) ? n : undefined;
}

/**
 * The collapsed box at the top of a conversation ("System prompt: …"): a "System prompt" textbox, "Temperature" and
 * "Max output tokens" (empty: the provider's default), and the sentence the app adds after the prompt (`appText`,
 * the conversation's root). Changes are saved as they are typed (`save`); the next request uses them.
 */
export class ConversationSettingsBox {
  readonly root = h('details', { class: 'conv-settings' });
  readonly #summary = h('summary', {});
  readonly prompt = h('textarea', { rows: 4, maxlength: MAX_SYSTEM_PROMPT, spellcheck: 'true' });
  readonly temperature = h('input', { type: 'number', min: 0, max: 2, step: 0.1, placeholder: 'provider default' });
  readonly maxTokens = h('input', {
    type: 'number',
    min: 1,
    max: MAX_OUTPUT_TOKENS,
    step: 1,
    placeholder: 'provider default',
  });
  readonly #appText = h('small', { class: 'app-sentence' });

  constructor(save: (patch: ConversationSettings) => void) {
    let n = 0;
    const field = (label: string, control: HTMLElement, hint?: HTMLElement) => {
      if (hint) {
        hint.id = `conv-settings-hint-${++n}`;
        control.setAttribute('aria-describedby', hint.id);
      }
      return h(
        'div',
        { class: 'field' },
        h('label', { class: 'field' }, h('span', { class: 'label' }, label), control),
        hint ?? null,
      );
    };
    this.root.append(
      this.#summary,
      field('System prompt', this.prompt, this.#appText),
      h(
        'div',
        { class: 'conv-numbers' },
        field('Temperature', this.temperature, h('small', {}, 'OpenAI 0 to 2, Anthropic 0 to 1')),
        field('Max output tokens', this.maxTokens),
      ),
    );
    const changed = () => {
      this.#summarize(this.prompt.value);
      save({ systemPrompt: this.prompt.value, temperature: num(this.temperature), maxTokens: num(this.maxTokens) });
    };
    for (const el of [this.prompt, this.temperature, this.maxTokens]) el.addEventListener('input', changed);
  }

  #summarize(p: string): void {
    replaceChildren(this.#summary, h('span', { class: 'label' }, 'System prompt: '), preview(p));
  }

  /** Show conversation `r`'s settings; `appText` is the sentence the app adds after the prompt. */
  show(r: ConversationSettings, appText: string): void {
    if (document.activeElement !== this.prompt) this.prompt.value = r.systemPrompt ?? '';
    if (document.activeElement !== this.temperature) this.temperature.value = r.temperature?.toString() ?? '';
    if (document.activeElement !== this.maxTokens) this.maxTokens.value = r.maxTokens?.toString() ?? '';
    this.#summarize(r.systemPrompt ?? '');
    this.#appText.textContent = `The app adds after it: "${appText}"`;
  }
}
