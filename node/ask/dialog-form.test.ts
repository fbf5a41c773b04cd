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
});
