// Terminal ask channel: shows a question on the controlling terminal (/dev/tty) with a code to type back; Node host,
// trusted side.
import { randomInt } from 'node:crypto';
import type { Answer, AskChannel, Question } from '../../core/exec/runtime.js';
import { wordQuestion } from './wording.js';
import { askFormOnTerminal } from './terminal-form.js';
import { hasControllingTerminal, listenOnTerminal, openControllingTerminal, type TerminalHandle } from './tty.js';

export interface TerminalChannelOptions {
  /** Open the terminal for one question; undefined when there is none. Default: the controlling terminal, /dev/tty. */
  open?: () => TerminalHandle | undefined;
  /** Whether a terminal can be opened now. Default: /dev/tty opens (and is closed again). */
  probe?: () => boolean;
  /** Longest typed line accepted, bytes (default 256); longer input refuses. */
  maxLineBytes?: number;
  /** Channel name shown in outcomes and audit (default `terminal`). */
  name?: string;
}

const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** A random code of four letters A-Z (crypto randomInt, uniform: 26^4 = 456 976 values). */
export function newAnswerCode(): string {
  let s = '';
  for (let i = 0; i < 4; i++) s += LETTERS[randomInt(26)];
  return s;
}

/**
 * Decide what a typed line means: `CODE` allows once; `CODE session` / `CODE permanent` allows with
 * that scope when the question offers it; anything else (another code, `y`, empty line, extra words) refuses.
 * Letters compare case-insensitively.
 */
export function interpretTypedLine(
  line: string,
  code: string,
  offered: Answer['scope'][],
): { allow: true; scope: Answer['scope'] } | { allow: false } {
  const words = line.trim().split(/[ \t]+/);
  if (words[0]?.toUpperCase() !== code.toUpperCase()) return { allow: false };
  if (words.length === 1) return { allow: true, scope: 'once' };
  const scope = words[1]?.toLowerCase();
  if (words.length === 2 && (scope === 'session' || scope === 'permanent') && offered.includes(scope))
    return { allow: true, scope };
  return { allow: false };
}

/**
 * The controlling-terminal channel. Each question is shown sanitized (core/ask/text.ts renderQuestion) with a
 * fresh random four-letter code; typing the code allows, anything else refuses, end of input refuses.
 * The code exists only in this process and on the terminal: it is never in the Question, the Answer,
 * a log or anything sent to tool code. A withdrawn question (signal aborted) is marked as such and
 * gets no answer from here.
 */
export class TerminalAskChannel implements AskChannel {
  readonly name: string;
  /** Form questions (MCP elicitation) are filled in field by field (node/ask/terminal-form.ts). */
  readonly forms = true;
  private readonly openTerminal: () => TerminalHandle | undefined;
  private readonly probe: () => boolean;
  private readonly maxLineBytes: number;

  constructor(opts: TerminalChannelOptions = {}) {
    this.name = opts.name ?? 'terminal';
    this.openTerminal = opts.open ?? openControllingTerminal;
    this.probe = opts.probe ?? (opts.open ? () => true : hasControllingTerminal);
    this.maxLineBytes = opts.maxLineBytes ?? 256;
  }

  live(): boolean {
    return this.probe();
  }

  whyNot(): string | undefined {
    return this.probe() ? undefined : 'no controlling terminal';
  }

  ask(q: Question, signal: AbortSignal): Promise<Answer | undefined> {
    if (signal.aborted) return Promise.resolve(undefined);
    const tty = this.openTerminal();
    if (!tty) return Promise.resolve(undefined);
    const code = newAnswerCode();
    if (q.form !== undefined)
      return askFormOnTerminal(
        tty,
        q,
        code,
        wordQuestion(q).filter((l) => !l.trimStart().startsWith('Allow for:')),
        this.name,
        signal,
      );
    const offered: Answer['scope'][] = q.scopes && q.scopes.length > 0 ? q.scopes : ['once'];
    return new Promise<Answer | undefined>((resolve) => {
      let buffered = '';
      const finish = (a: Answer | undefined, note: string): void => {
        if (close(note)) resolve(a);
      };
      const close = listenOnTerminal(tty, signal, {
        abort: () => finish(undefined, '\n(question withdrawn: answered elsewhere, timed out or cancelled)\n'),
        end: () => finish({ allow: false, scope: 'once', channel: this.name }, '\nrefused (end of input)\n'),
        error: () => finish(undefined, ''),
        data: (chunk) => {
          buffered += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
          const nl = buffered.search(/[\r\n]/);
          if (nl < 0) {
            if (Buffer.byteLength(buffered) > this.maxLineBytes)
              finish({ allow: false, scope: 'once', channel: this.name }, '\nrefused (input too long)\n');
            return;
          }
          const verdict = interpretTypedLine(buffered.slice(0, nl), code, offered);
          if (verdict.allow)
            finish({ allow: true, scope: verdict.scope, channel: this.name }, `allowed (${verdict.scope})\n`);
          else finish({ allow: false, scope: 'once', channel: this.name }, 'refused\n');
        },
      });
      const scopeHint = offered
        .filter((s) => s !== 'once')
        .map((s) => `, "${code} ${s}" for ${s === 'session' ? 'this session' : 'always'}`)
        .join('');
      try {
        tty.write(
          [
            '',
            '── tysandbox asks ──',
            ...wordQuestion(q),
            `Type ${code} to allow once${scopeHint}; anything else refuses.`,
            '> ',
          ].join('\n'),
        );
      } catch {
        finish(undefined, '');
      }
    });
  }
}
