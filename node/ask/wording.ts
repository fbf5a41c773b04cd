// How the Node host words a question for a person (terminal, desktop dialog, `tycli questions`): core's rendering with
// the rule that would allow it given as the --allow flag to pass; Node host, trusted side.
import type { Question } from '../../core/exec/runtime.js';
import { renderQuestion } from '../../core/ask/text.js';

const RULE_LINE = '  Rule that allows this without asking: ';

/**
 * core/ask/text.ts renderQuestion (sanitized lines, each cut at 600 characters) with the command line's own wording
 * for the rule: `--allow 'RULE'`.
 */
export function wordQuestion(q: Question): string[] {
  return renderQuestion(q).map((l) =>
    l.startsWith(RULE_LINE) ? `${RULE_LINE}--allow '${l.slice(RULE_LINE.length)}'` : l,
  );
}
