// The desktop dialog shows an elicitation form with zenity --forms (a scripted zenity in a private folder); test side.
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AskRouter } from '../../core/ask/router.js';
import { Elicitor } from '../../core/mcp/input/elicit.js';
import { compilePolicy } from '../../core/policy/permissions.js';
import { DialogAskChannel } from './dialog.js';
import { FORM_SEPARATOR } from './dialog-form.js';
import { sanitizeInline } from '../../core/ask/text.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** A zenity that writes its arguments (one per line) to `args` and prints `out`, exiting with `code`. */
async function fakeZenity(out: string, code = 0): Promise<{ dir: string; args: () => Promise<string[]> }> {
  const dir = await mkdtemp(join(tmpdir(), 'tyzen-'));
  dirs.push(dir);
  const file = join(dir, 'args');
  await writeFile(join(dir, 'out'), out);
  await writeFile(
    join(dir, 'zenity'),
    `#!/bin/sh\nfor a in "$@"; do printf '%s\\n--\\n' "$a"; done > ${JSON.stringify(file)}\ncat ${JSON.stringify(join(dir, 'out'))}\nexit ${code}\n`,
  );
  await chmod(join(dir, 'zenity'), 0o755);
  return { dir, args: async () => (await readFile(file, 'utf8')).split('\n--\n').filter((x) => x !== '') };
}

const schema = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Name' },
    age: { type: 'integer' },
    color: { type: 'string', enum: ['red', 'green'] },
    api_key: { type: 'string', title: 'API key' },
  },
  required: ['name', 'age'],
};
const elicitor = (dir: string) =>
  new Elicitor({
    policy: () => compilePolicy([{ scope: 'flags', allow: ['mcp-elicit(srv)'] }]),
    asker: new AskRouter({
      channels: [new DialogAskChannel({ env: { DISPLAY: 'remote:1' }, dirs: [dir], platform: 'linux' })],
      askWaitMs: 20_000,
    }),
    audit: { append: async () => undefined },
    principal: 'mcp:t',
  });

describe('an elicitation form in the desktop dialog (zenity --forms)', () => {
  it('one entry per named field, a password entry for a secret-looking one, a combo for an enum; the values printed are the answer', async () => {
    const z = await fakeZenity(['Ada', '36', 'green', 'k-123'].join(FORM_SEPARATOR));
    const r = await elicitor(z.dir).elicit('srv', {
      mode: 'form',
      message: 'Who are you?\u001b[2J',
      requestedSchema: schema,
    });
    expect(r).toEqual({ action: 'accept', content: { name: 'Ada', age: 36, color: 'green', api_key: 'k-123' } });
    const args = await z.args();
    expect(args).toContain('--forms');
    expect(args).toContain('--add-entry=Name (required)');
    expect(args).toContain('--add-entry=age (required)');
    expect(args).toEqual(
      expect.arrayContaining(['--add-combo=color', '--combo-values=red|green', '--add-password=API key']),
    );
    const text = args.find((a) => a.startsWith('--text='))!;
    expect(text).toContain('Who are you?\\x1b[2J');
    expect(text).not.toContain('\u001b');
  });

  it('Cancel (exit 1) is a dismissal: MCP cancel', async () => {
    const z = await fakeZenity('', 1);
    expect(await elicitor(z.dir).elicit('srv', { message: 'm', requestedSchema: schema })).toEqual({
      action: 'cancel',
    });
  });

  it('choice values are shown inert (bidi, controls, line breaks as escapes) and the chosen one maps back to the value', async () => {
    const evil = ['safe\u202E\u2066txt.exe', 'red\u001b[2J', 'two\nlines', 'zero\u200Bwidth'];
    const z = await fakeZenity(['Ada', '7', sanitizedOf(evil[0]!)].join(FORM_SEPARATOR));
    const r = await elicitor(z.dir).elicit('srv', {
      message: 'Pick',
      requestedSchema: {
        type: 'object',
        properties: { name: { type: 'string' }, age: { type: 'integer' }, file: { type: 'string', enum: evil } },
        required: ['name', 'age'],
      },
    });
    // the server gets its own value back
    expect(r).toEqual({ action: 'accept', content: { name: 'Ada', age: 7, file: evil[0] } });
    const combo = (await z.args()).find((a) => a.startsWith('--combo-values='))!;
    expect(combo).toBe(`--combo-values=${evil.map(sanitizedOf).join('|')}`);
    expect(combo).toContain('\\u202e');
    expect(combo).toContain('\\x1b');
    // nothing hidden or line-breaking reaches the dialog
    expect(combo).not.toMatch(/[\u0000-\u001f\u007f\u200b\u202a-\u202e\u2066-\u2069]/);
  });

  it('choices that would look the same once made inert, or a printed choice that was not offered: the form is not shown or not taken', async () => {
    const same = { type: 'string', enum: ['red', 'red\u200B'] };
    const z = await fakeZenity(['Ada', '7', 'red'].join(FORM_SEPARATOR));
    const ask = (choice: Record<string, unknown>) =>
      elicitor(z.dir).elicit('srv', {
        message: 'Pick',
        requestedSchema: {
          type: 'object',
          properties: { name: { type: 'string' }, age: { type: 'integer' }, c: choice },
          required: ['name', 'age'],
        },
      });
    // red and red<ZWSP>, shown as "red" and "red\u200b", are told apart: the answer "red" is red
    expect(await ask(same)).toMatchObject({ action: 'accept', content: { c: 'red' } });
    const z3 = await fakeZenity(['Ada', '7', 'a b'].join(FORM_SEPARATOR));
    const collide = await elicitor(z3.dir).elicit('srv', {
      message: 'Pick',
      requestedSchema: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          age: { type: 'integer' },
          c: { type: 'string', enum: ['a  b', 'a b'] },
        },
        required: ['name', 'age'],
      },
    });
    // "a  b" and "a b" look the same once made inert: the form is never shown, and nobody could answer it
    expect(collide).toEqual({ action: 'decline' });
    await expect(z3.args()).rejects.toThrow();
    // zenity printing a choice it was not offered (a spoofed output) is not an answer
    const z2 = await fakeZenity(['Ada', '7', 'blue'].join(FORM_SEPARATOR));
    const spoof = await elicitor(z2.dir).elicit('srv', {
      message: 'Pick',
      requestedSchema: {
        type: 'object',
        properties: { name: { type: 'string' }, age: { type: 'integer' }, c: { type: 'string', enum: ['red'] } },
        required: ['name', 'age'],
      },
    });
    expect(spoof.action).not.toBe('accept');
  });
});

/** The text a combo shows for a choice (core/ask/text.ts sanitizeInline). */
function sanitizedOf(v: string): string {
  return sanitizeInline(v);
}
