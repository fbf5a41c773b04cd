// The built-in dialog's form for an MCP server's elicitation: one labelled control per named field, checked before it
// is sent; browser host, trusted side.
import { checkFormValues, fieldLine } from '../../core/mcp/input/elicit.js';
import type { Answer, FormField, Question } from '../../core/exec/runtime.js';
import { sanitizeForDisplay, sanitizeInline } from '../../core/ask/text.js';

/**
 * Fill `dialog` with the form of `q` (which has one): the server's message (sanitized, as text), one control per
 * field labelled with its sanitized title or name (text, number, checkbox, select; a secret-looking field is a
 * password input and its default is never filled in), a description line, and the buttons Decline and Submit.
 * Submit checks the values (core/mcp/input/elicit.ts checkFormValues): what does not fit is said in an alert and the
 * dialog stays open; values that fit answer `{ allow: true, values }`. Decline answers `{ allow: false }`.
 * Text is set with textContent, never parsed as HTML. Returns the control to focus first.
 */
export function renderForm(
  doc: Document,
  dialog: HTMLDialogElement,
  q: Question,
  name: string,
  finish: (a: Answer) => void,
): HTMLElement | undefined {
  const form = q.form!;
  const title = doc.createElement('h2');
  title.id = 'tysandbox-question-title';
  title.textContent = sanitizeInline(q.title);
  dialog.setAttribute('aria-labelledby', title.id);
  dialog.appendChild(title);
  const said = doc.createElement('p');
  said.textContent = 'The server wrote (its words, not checked):';
  const msg = doc.createElement('pre');
  msg.textContent = sanitizeForDisplay(form.message).slice(0, 20).join('\n');
  const note = doc.createElement('p');
  note.textContent = 'Your answer goes to this server only, never to the assistant.';
  dialog.append(said, msg, note);
  const f = doc.createElement('form');
  f.setAttribute('aria-label', 'Answer the server');
  const controls = new Map<string, HTMLInputElement | HTMLSelectElement>();
  form.fields.forEach((field, i) => {
    const id = `tysandbox-field-${i}`;
    const row = doc.createElement('p');
    const label = doc.createElement('label');
    label.htmlFor = id;
    label.textContent = `${sanitizeInline(field.title ?? field.name)}${field.required ? ' (required)' : ''}`;
    const control = controlFor(doc, field);
    control.id = id;
    const help = doc.createElement('span');
    help.id = `${id}-help`;
    help.textContent = ` ${sanitizeInline(fieldLine(field))}`;
    control.setAttribute('aria-describedby', help.id);
    row.append(label, doc.createTextNode(' '), control, help);
    f.appendChild(row);
    controls.set(field.name, control);
  });
  const alert = doc.createElement('p');
  alert.setAttribute('role', 'alert');
  f.appendChild(alert);
  const buttons = doc.createElement('div');
  buttons.className = 'buttons';
  const decline = doc.createElement('button');
  decline.type = 'button';
  decline.textContent = 'Decline';
  decline.addEventListener('click', () => finish({ allow: false, scope: 'once', channel: name }));
  const submit = doc.createElement('button');
  submit.type = 'submit';
  submit.textContent = 'Submit';
  buttons.append(decline, submit);
  f.appendChild(buttons);
  f.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const raw: Record<string, unknown> = {};
    for (const field of form.fields) {
      const c = controls.get(field.name)!;
      if (field.type === 'boolean') raw[field.name] = (c as HTMLInputElement).checked;
      else if (c.value !== '') raw[field.name] = c.value;
    }
    const checked = checkFormValues(form, raw);
    if (!checked.ok) {
      alert.textContent = sanitizeInline(checked.message);
      return;
    }
    finish({ allow: true, scope: 'once', channel: name, values: checked.values });
  });
  dialog.appendChild(f);
  return controls.values().next().value;
}

function controlFor(doc: Document, field: FormField): HTMLInputElement | HTMLSelectElement {
  if (field.options) {
    const s = doc.createElement('select');
    if (!field.required || field.default === undefined) s.appendChild(new Option('', ''));
    for (const o of field.options) s.appendChild(new Option(sanitizeInline(o.label ?? o.value), o.value));
    if (typeof field.default === 'string') s.value = field.default;
    return s;
  }
  const input = doc.createElement('input');
  if (field.type === 'boolean') {
    input.type = 'checkbox';
    input.checked = field.default === true;
    return input;
  }
  input.type = field.secret
    ? 'password'
    : field.type === 'string'
      ? field.format === 'email'
        ? 'email'
        : 'text'
      : 'text';
  if (field.type !== 'string') input.inputMode = field.type === 'integer' ? 'numeric' : 'decimal';
  if (field.default !== undefined && !field.secret) input.value = String(field.default);
  input.autocomplete = 'off';
  return input;
}
