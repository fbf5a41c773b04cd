// A form question (an MCP server's elicitation) on the controlling terminal: a code to type, then one prompt per field,
// secret-looking ones without echo; Node host, trusted side.
import { checkField, fieldLine, FORM_ATTEMPTS } from '../../core/mcp/input/elicit.js';
import type { Answer, FormField, FormValues, Question } from '../../core/exec/runtime.js';
import { sanitizeInline } from '../../core/ask/text.js';
import { listenOnTerminal, type TerminalHandle } from './tty.js';

/** What the terminal can do to read a line without echo (a tty.ReadStream can). */
type RawCapable = { setRawMode?: (on: boolean) => unknown; isTTY?: boolean };

/** Longest line read for one field, characters. */
const MAX_FIELD_CHARS = 8192;

/**
 * Ask `q` (which has a form) on `tty`: after the question's lines, type `code` to fill in the form (anything else
 * declines; end of input or Ctrl-C dismisses, MCP's cancel); then each field in the server's order: an empty line
 * takes its default (or leaves an optional field out); a value that does not fit is said why and asked again, up to
 * FORM_ATTEMPTS times (then declined). A secret-looking field is read with echo off when the terminal allows it,
 * and its value is never written back. Resolves with the Answer (values with an allow) or undefined when withdrawn.
 */
export function askFormOnTerminal(
  tty: TerminalHandle,
  q: Question,
  code: string,
  lines: string[],
  name: string,
  signal: AbortSignal,
): Promise<Answer | undefined> {
  const form = q.form!;
  const raw = tty.input as unknown as RawCapable;
  const canHide = raw.isTTY === true && typeof raw.setRawMode === 'function';
  return new Promise<Answer | undefined>((resolve) => {
    let buffered = '';
    let settled = false;
    let hidden = false;
    let want: ((line: string) => void) | undefined;
    const setHidden = (on: boolean): void => {
      if (!canHide || hidden === on) return;
      hidden = on;
      try {
        raw.setRawMode!(on);
      } catch {
        /* terminal gone */
      }
    };
    const finish = (a: Answer | undefined, note: string): void => {
      if (settled) return;
      settled = true;
      setHidden(false);
      close(note);
      resolve(a);
    };
    const dismissed = (why: string): void =>
      finish({ allow: false, scope: 'once', channel: name, dismissed: true }, `\n${why}: the form was dismissed\n`);
    const onData = (chunk: Buffer | string): void => {
      const text = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
      for (const ch of text) {
        if (settled) return;
        if (hidden && (ch === '\u0003' || ch === '\u0004'))
          return dismissed(ch === '\u0003' ? 'Ctrl-C' : 'end of input');
        if (hidden && (ch === '\u007f' || ch === '\b')) {
          buffered = [...buffered].slice(0, -1).join('');
          continue;
        }
        if (ch === '\r' || ch === '\n') {
          if (ch === '\n' && buffered === '' && lastWasCr) {
            lastWasCr = false;
            continue;
          }
          lastWasCr = ch === '\r';
          const line = buffered;
          buffered = '';
          if (hidden) tty.write('\n');
          want?.(line);
          continue;
        }
        lastWasCr = false;
        buffered += ch;
        if (buffered.length > MAX_FIELD_CHARS)
          return finish({ allow: false, scope: 'once', channel: name }, '\ndeclined (input too long)\n');
      }
    };
    let lastWasCr = false;
    const readLine = (prompt: string, secret: boolean): Promise<string> =>
      new Promise((r) => {
        setHidden(secret);
        want = (line) => {
          want = undefined;
          setHidden(false);
          r(line);
        };
        tty.write(prompt);
      });
    const close = listenOnTerminal(tty, signal, {
      data: onData,
      end: () => dismissed('end of input'),
      error: () => finish(undefined, ''),
      abort: () => finish(undefined, '\n(question withdrawn: answered elsewhere, timed out or cancelled)\n'),
    });
    const run = async (): Promise<void> => {
      tty.write(
        [
          '',
          '── tysandbox asks ──',
          ...lines,
          `Type ${code} to fill in the form; anything else declines (your answers go to this server only).`,
          '> ',
        ].join('\n'),
      );
      const first = await readLine('', false);
      if (first.trim().toUpperCase() !== code.toUpperCase())
        return finish({ allow: false, scope: 'once', channel: name }, 'declined\n');
      const values: FormValues = {};
      for (const f of form.fields) {
        const v = await askField(f, readLine, (s) => tty.write(s), canHide);
        if (settled) return;
        if (v === 'failed')
          return finish(
            { allow: false, scope: 'once', channel: name },
            `declined (${f.name}: no answer that fits after ${FORM_ATTEMPTS} tries)\n`,
          );
        if (v !== undefined) values[f.name] = v;
      }
      finish({ allow: true, scope: 'once', channel: name, values }, 'answered\n');
    };
    run().catch(() => finish(undefined, ''));
  });
}

/**
 * One field: its prompt, read (hidden for a secret-looking one), checked; undefined when left empty with nothing
 * required.
 */
async function askField(
  f: FormField,
  readLine: (prompt: string, secret: boolean) => Promise<string>,
  write: (s: string) => void,
  canHide: boolean,
): Promise<string | number | boolean | undefined | 'failed'> {
  const hint = f.secret ? (canHide ? ' (not shown as you type)' : ' (this terminal shows it as you type)') : '';
  for (let i = 0; i < FORM_ATTEMPTS; i++) {
    const line = await readLine(`${sanitizeInline(fieldLine(f))}${hint}\n${f.name}> `, f.secret);
    if (line === '') {
      if (f.default !== undefined) return f.default;
      if (!f.required) return undefined;
      write(`${f.name} is required\n`);
      continue;
    }
    const c = checkField(f, line);
    if (c.ok) return c.value;
    write(`${sanitizeInline(c.message)}\n`);
  }
  return 'failed';
}
