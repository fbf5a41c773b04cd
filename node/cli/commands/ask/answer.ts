// tycli answer ID yes|no [--field NAME=VALUE]: answer a waiting question (or fill in its form); the first answer is
// final; Node host, trusted side.
import type { WaitingQuestions } from '../../../ask/waiting.js';
import type { CliCommand, CliContext } from '../../types.js';
import { fail, out, outJson, usage } from '../../output.js';

const SCOPES = new Set(['once', 'session', 'permanent']);

const answer: CliCommand = {
  path: ['answer'],
  summary: 'answer a waiting question: yes or no (the first answer is final)',
  usage: `Usage: tycli answer ID yes|no [--scope once|session|permanent]
       tycli answer ID yes --field NAME=VALUE [--field NAME=VALUE ...]

ID is shown by 'tycli questions'. yes allows the call once (or for --scope, when the question offers
it); no refuses it. The first answer from any channel (this command, the terminal) is final: a second
answer is refused with E_USAGE and changes nothing.

A question with a form (an MCP server asking you for input, allowed by a rule mcp-elicit(SERVER)) is
answered with yes and one --field per field (a missing field takes its default; a required one without
a default must be given), or no to decline. Values are checked against the form (numbers, yes/no for
booleans, one of an enum's values, formats); an answer that does not fit is refused with E_USAGE and the
question keeps waiting. Values go to that server only. A value given here may stay in the shell's
history: for a field marked "looks secret" prefer the terminal, which does not echo it.`,
  options: { scope: { type: 'string' }, field: { type: 'string', multiple: true } },
  async run(ctx, values, pos) {
    if (pos.length !== 2) usage('tycli answer takes ID and yes or no');
    const [id, word] = pos as [string, string];
    const verdict = word.toLowerCase();
    if (verdict !== 'yes' && verdict !== 'no') usage(`the answer is yes or no (got "${word.slice(0, 20)}")`);
    const scope = (values.scope as string | undefined) ?? 'once';
    if (!SCOPES.has(scope)) usage('--scope is once, session or permanent');
    if (verdict === 'no' && values.scope !== undefined) usage('--scope goes with yes only');
    const fields = (values.field as string[] | undefined) ?? [];
    let given: Record<string, string> | undefined;
    if (fields.length > 0) {
      if (verdict !== 'yes') usage('--field goes with yes only (no declines the form)');
      given = Object.create(null) as Record<string, string>;
      for (const f of fields) {
        const eq = f.indexOf('=');
        if (eq < 1) usage(`--field takes NAME=VALUE (got "${f.slice(0, 40)}")`);
        const name = f.slice(0, eq);
        if (Object.prototype.hasOwnProperty.call(given, name)) usage(`--field ${name.slice(0, 64)} is given twice`);
        given[name] = f.slice(eq + 1);
      }
    }
    const { openTycliStore } = await import('../../../store/open.js');
    const opened = await openTycliStore({ home: ctx.globals.home, env: ctx.env });
    try {
      return await answerIn(ctx, await opened.questions(), id, verdict, scope, given);
    } finally {
      await opened.close();
    }
  },
};

/** Answer question `id` in `store` and report it (one JSON line with --json). */
async function answerIn(
  ctx: CliContext,
  store: WaitingQuestions,
  id: string,
  verdict: 'yes' | 'no',
  scope: string,
  given: Record<string, string> | undefined,
): Promise<number> {
  const q = await store.get(id);
  // a form question answered yes with no --field: its defaults (and a clear error when a required field has none)
  if (q?.form !== undefined && verdict === 'yes') given ??= {};
  const r = await store.answer(id, {
    allow: verdict === 'yes',
    scope: scope as 'once' | 'session' | 'permanent',
    by: 'tycli answer',
    ...(given ? { values: given } : {}),
  });
  if (!r.ok) return fail(ctx, r.code, r.message);
  if (ctx.globals.json)
    outJson(ctx, { ok: true, id, allow: verdict === 'yes', scope: verdict === 'yes' ? scope : 'once' });
  else if (q?.form !== undefined)
    out(ctx, verdict === 'yes' ? `question ${id}: answered (the values go to the server)` : `question ${id}: declined`);
  else out(ctx, verdict === 'yes' ? `question ${id}: allowed (${scope})` : `question ${id}: refused`);
  return 0;
}

export const answerCommands: CliCommand[] = [answer];
