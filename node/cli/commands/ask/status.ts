// tycli ask status: which ask channels (terminal, question store, desktop dialog) can present a question now; Node
// host, trusted side.
import type { CliCommand } from '../../types.js';
import { failWith, out, outJson } from '../../output.js';

const status: CliCommand = {
  path: ['ask', 'status'],
  summary: 'show which channels can present a question right now (terminal, question store, desktop dialog)',
  usage: `Usage: tycli ask status [--json]

Checks each ask channel as a tycli started from here would: the controlling terminal, the waiting-question
store (live while 'tycli questions --watch' runs) and the desktop dialog (zenity or kdialog on Linux,
osascript on macOS, taken only from /usr/bin, /bin or /usr/local/bin; needs a desktop session: DISPLAY or
WAYLAND_DISPLAY, or a logged-in macOS GUI session; settings "ask": {"dialog": "auto"|"off"}).
A question is asked on every live channel at once and the first answer counts; with none live it is refused.
Exit 0 when at least one channel can present a question, 1 when none can.`,
  allowPositionals: false,
  async run(ctx) {
    try {
      const { loadSettings } = await import('../../../settings/load.js');
      const { createNodeAsker } = await import('../../../ask/channels.js');
      const { DialogAskChannel } = await import('../../../ask/dialog.js');
      const settings = await loadSettings({ home: ctx.globals.home, cwd: ctx.cwd });
      const router = createNodeAsker({
        home: ctx.globals.home,
        askWaitMs: settings.askWaitMs,
        dialog: settings.askDialog,
        env: ctx.env,
      });
      const channels = await router.status();
      const dialog = new DialogAskChannel({ mode: settings.askDialog, env: ctx.env }).state();
      const live = channels.some((c) => c.live);
      if (ctx.globals.json) {
        outJson(ctx, {
          ok: true,
          live,
          askWaitMs: settings.askWaitMs,
          dialog: { setting: settings.askDialog, ...(dialog.ok ? { program: dialog.program.path } : {}) },
          channels,
        });
      } else {
        for (const c of channels) {
          const extra = c.name === 'dialog' && dialog.ok ? ` (${dialog.program.path})` : '';
          const hint =
            c.name === 'questions' && !c.live ? ' (run `tycli questions --watch` in a terminal to answer there)' : '';
          out(
            ctx,
            `${c.name.padEnd(10)} ${c.live ? `can ask now${extra}` : `cannot ask: ${c.detail ?? 'not available'}${hint}`}`,
          );
        }
        out(
          ctx,
          live
            ? `questions are asked on every live channel at once; unanswered after ${settings.askWaitMs} ms is no`
            : 'no channel can present a question: every call that needs a person is refused at once',
        );
      }
      return live ? 0 : 1;
    } catch (e) {
      return failWith(ctx, e);
    }
  },
};

export const askCommands: CliCommand[] = [status];
