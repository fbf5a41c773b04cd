// A form question (an MCP server's elicitation) as a zenity --forms dialog: one entry per named field, secret-looking
// ones as password entries; Node host, trusted side.
import type { FormField, Question } from '../../core/exec/runtime.js';
import { fieldLine } from '../../core/mcp/input/elicit.js';
import { sanitizeInline } from '../../core/ask/text.js';

/** Between the values zenity prints (a control character no field label or value here may hold). */
export const FORM_SEPARATOR = '\u001f';
/** The form dialog's window title (fixed text). */
export const FORM_TITLE = 'tysandbox: an MCP server asks you for input';

const label = (f: FormField): string =>
  sanitizeInline(`${f.title ?? f.name}${f.required ? ' (required)' : ''}`).replace(/\|/g, '/');

/**
 * What a combo shows for each of a field's choices, and the value each stands for: the server's values made inert
 * for display (sanitizeInline: control, bidi, zero-width and other hidden characters shown as escapes, one line), so a
 * choice can neither restyle the dialog nor read as another text. Undefined when two choices would look the same
 * once made inert, or one holds `|` (zenity's separator of combo values): the form cannot be shown faithfully.
 */
export function comboChoices(f: FormField): { shown: string[]; values: string[] } | undefined {
  const values = f.type === 'boolean' ? ['yes', 'no'] : (f.options ?? []).map((o) => o.value);
  const shown = values.map((v) => sanitizeInline(v));
  if (shown.some((s) => s === '' || s.includes('|') || s.includes(FORM_SEPARATOR))) return undefined;
  if (new Set(shown).size !== shown.length) return undefined;
  return { shown, values };
}

/**
 * zenity's argument vector for a form question: `--forms` with the question's lines as its text (each field's line
 * among them), one `--add-entry` per field (`--add-password` for a secret-looking one, `--add-combo` for an enum or a
 * boolean, its choices made inert: comboChoices), the values printed joined by FORM_SEPARATOR. Undefined when a
 * field's choices cannot be shown faithfully (comboChoices).
 */
export function zenityFormArgs(q: Question, lines: string[], waitSeconds: number): string[] | undefined {
  const form = q.form;
  if (form === undefined) return undefined;
  const args = [
    '--forms',
    `--title=${FORM_TITLE}`,
    `--text=${lines.join('\n')}`,
    `--separator=${FORM_SEPARATOR}`,
    '--width=720',
    `--timeout=${Math.max(1, Math.ceil(waitSeconds))}`,
  ];
  for (const f of form.fields) {
    if (f.options !== undefined || f.type === 'boolean') {
      const choices = comboChoices(f);
      if (choices === undefined) return undefined;
      args.push(`--add-combo=${label(f)}`, `--combo-values=${choices.shown.join('|')}`);
    } else args.push(f.secret ? `--add-password=${label(f)}` : `--add-entry=${label(f)}`);
  }
  return args;
}

/** The fields' lines shown in the form dialog's text (zenity's entries carry only a label). */
export function formFieldLines(q: Question): string[] {
  return (q.form?.fields ?? []).map((f) => `  ${sanitizeInline(fieldLine(f))}`);
}

/**
 * The values zenity printed for `q`'s form (one per field, in order; an empty one left out; a combo's shown choice
 * mapped back to the server's value), or undefined when the output does not have one value per field or a combo
 * printed something it did not offer. Checking them against the form is the Elicitor's (core/mcp/input/elicit.ts).
 */
export function parseZenityForm(q: Question, stdout: string): Record<string, string> | undefined {
  const fields = q.form?.fields ?? [];
  const parts = stdout.replace(/\r?\n$/, '').split(FORM_SEPARATOR);
  if (parts.length !== fields.length) return undefined;
  const out: Record<string, string> = {};
  for (const [i, f] of fields.entries()) {
    const v = parts[i] ?? '';
    if (v === '') continue;
    if (f.options !== undefined || f.type === 'boolean') {
      const choices = comboChoices(f);
      const at = choices?.shown.indexOf(v) ?? -1;
      if (choices === undefined || at < 0) return undefined;
      out[f.name] = choices.values[at] as string;
    } else out[f.name] = v;
  }
  return out;
}
