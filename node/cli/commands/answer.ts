// tycli answer ID yes|no: answer a waiting question; the first answer is final; Node host, trusted side.
import type { CliCommand } from '../types.js';
import { fail, out, outJson, usage } from '../output.js';

const SCOPES = new Set(['once', 'session', 'permanent']);

const answer: CliCommand = {
  path: ['answer'],
  summary: 'answer a waiting question: yes or no (the first answer is final)',
  usage: `Usage: tycli answer ID yes|no [--scope once|session|permanent]

ID is shown by 'tycli questions'. yes allows the call once (or for --scope, when the question offers
it); no refuses it. The first answer from any channel (this command, the terminal) is final: a second
answer is refused with E_USAGE and changes nothing.`,
  options: { scope: { type: 'string' } },
  async run(ctx, values, pos) {
    if (pos.length !== 2) usage('tycli answer takes ID and yes or no');
    const [id, word] = pos as [string, string];
    const verdict = word.toLowerCase();
    if (verdict !== 'yes' && verdict !== 'no') usage(`the answer is yes or no (got "${word.slice(0, 20)}")`);
    const scope = (values.scope as string | undefined) ?? 'once';
    if (!SCOPES.has(scope)) usage('--scope is once, session or permanent');
    if (verdict === 'no' && values.scope !== undefined) usage('--scope goes with yes only');
    const { QuestionStore, questionsDir } = await import('../../ask-store.js');
    const store = new QuestionStore(questionsDir(ctx.globals.home));
    const r = await store.answer(id, { allow: verdict === 'yes', scope: scope as 'once' | 'session' | 'permanent', by: 'tycli answer' });
    if (!r.ok) return fail(ctx, r.code, r.message);
    if (ctx.globals.json) outJson(ctx, { ok: true, id, allow: verdict === 'yes', scope: verdict === 'yes' ? scope : 'once' });
    else out(ctx, verdict === 'yes' ? `question ${id}: allowed (${scope})` : `question ${id}: refused`);
    return 0;
  },
};

export const answerCommands: CliCommand[] = [answer];
