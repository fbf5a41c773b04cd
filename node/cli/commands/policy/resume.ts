// tycli resume: lift a tool's pause after repeated refusals (a person's decision); Node host, trusted side.
import type { CliCommand, CliContext } from '../../types.js';
import { note, out, outJson, terminalSafe, usage } from '../../output.js';

async function openPause(ctx: CliContext) {
  const { createNodeHost } = await import('../../../host/host.js');
  const { PauseTracker } = await import('../../../../core/policy/pause.js');
  const host = await createNodeHost({
    home: ctx.globals.home,
    globals: ctx.globals,
    io: ctx.io,
    env: ctx.env,
    startSandboxes: false,
  });
  return { host, pause: new PauseTracker(host.store) };
}

const resume: CliCommand = {
  path: ['resume'],
  summary: 'resume calls to a tool paused after repeated refusals (no NAME: list paused tools)',
  usage: `Usage: tycli resume NAME
       tycli resume            (list paused tools)

A tool is paused when its calls are refused many times in a short window (default 10 in 60 s;
settings key "pause": {"maxRefusals", "windowMs"}). Its calls then fail with E_PAUSED until resumed.
With --json: {"ok":true,"tool","resumed"}, or without NAME {"ok":true,"paused":[{"tool","pausedAt","refusals","windowMs"}]}.`,
  async run(ctx, _values, pos) {
    if (pos.length > 1) usage('tycli resume takes one tool NAME');
    const { host, pause } = await openPause(ctx);
    try {
      if (pos.length === 0) {
        const list = await pause.list();
        if (ctx.globals.json)
          outJson(ctx, {
            ok: true,
            paused: list.map((p) => ({
              tool: p.tool,
              pausedAt: new Date(p.at).toISOString(),
              refusals: p.count,
              windowMs: p.windowMs,
            })),
          });
        else if (list.length === 0) note(ctx, 'no tool is paused');
        else
          for (const p of list)
            out(
              ctx,
              terminalSafe(
                ctx,
                `${p.tool}  paused ${new Date(p.at).toISOString()} after ${p.count} refusals within ${Math.round(p.windowMs / 1000)} s`,
              ),
            );
        return 0;
      }
      const name = pos[0]!;
      const { ToolNameSchema } = await import('../../../../protocol/manifest.js');
      if (!ToolNameSchema.safeParse(name).success && !(await pause.paused(name)))
        usage(`"${name.slice(0, 80)}" is not a tool name`);
      const was = await pause.resume(name);
      if (ctx.globals.json) outJson(ctx, { ok: true, tool: name, resumed: was });
      else note(ctx, was ? `resumed ${name}; its calls run again` : `${name} was not paused`);
      return 0;
    } finally {
      await host.close();
    }
  },
};

export const resumeCommands: CliCommand[] = [resume];
