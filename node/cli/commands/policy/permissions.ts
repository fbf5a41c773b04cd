// tycli permissions list|revoke|rules: remembered decisions and the effective rules; Node host, trusted side.
import type { CliCommand, CliContext } from '../../types.js';
import { note, out, outJson, terminalSafe, usage } from '../../output.js';

/**
 * core/policy/permissions.ts SCOPES in order (kept as text so --help loads no engine code; node/cli/main.test.ts checks
 * it).
 */
export const RULE_SCOPES_TEXT = 'flags, session, local, project, user';

async function openDecisions(ctx: CliContext) {
  const { createNodeHost } = await import('../../../host/host.js');
  const [{ StoreDecisions }, { suggestRule }] = await Promise.all([
    import('../../../../core/policy/gate.js'),
    import('../../../../core/policy/permissions.js'),
  ]);
  const host = await createNodeHost({
    home: ctx.globals.home,
    globals: ctx.globals,
    io: ctx.io,
    env: ctx.env,
    startSandboxes: false,
  });
  return { host, decisions: new StoreDecisions(host.store), suggestRule };
}

const list: CliCommand = {
  path: ['permissions', 'list'],
  summary: 'list permanent decisions people gave, per tool revision',
  usage: `Usage: tycli permissions list [NAME]

Permanent answers are kept per revision identity: a new revision of a tool starts with none.
Session answers live only in the process that asked. With --json: {"ok":true,"decisions":[{"tool","revision","rule","allow","channel","at"}]}.`,
  async run(ctx, _v, pos) {
    if (pos.length > 1) usage('tycli permissions list takes at most one tool NAME');
    const { host, decisions, suggestRule } = await openDecisions(ctx);
    try {
      const all = (await decisions.list()).filter((d) => pos.length === 0 || d.toolName === pos[0]);
      if (ctx.globals.json)
        outJson(ctx, {
          ok: true,
          decisions: all.map((d) => ({
            tool: d.toolName,
            revision: d.revision,
            rule: suggestRule(d),
            allow: d.allow,
            channel: d.channel,
            at: d.at !== undefined ? new Date(d.at).toISOString() : undefined,
          })),
        });
      else if (all.length === 0) note(ctx, 'no permanent decisions');
      else
        for (const d of all)
          out(
            ctx,
            terminalSafe(
              ctx,
              `${d.toolName}@${d.revision}  ${d.allow ? 'allow' : 'deny '}  ${suggestRule(d)}` +
                (d.channel
                  ? `  (via ${d.channel}${d.at !== undefined ? `, ${new Date(d.at).toISOString()}` : ''})`
                  : ''),
            ),
          );
      return 0;
    } finally {
      await host.close();
    }
  },
};

const revoke: CliCommand = {
  path: ['permissions', 'revoke'],
  summary: 'revoke permanent decisions of a tool (NAME: every revision; NAME@REV: one), optionally one RULE',
  usage: `Usage: tycli permissions revoke NAME|NAME@REV [RULE]

  RULE   the rule text 'tycli permissions list' shows, e.g. 'fetch(read:https://api.example.com)'

Rules in settings files are not touched; edit those files to change them.`,
  async run(ctx, _v, pos) {
    if (pos.length < 1 || pos.length > 2)
      usage('tycli permissions revoke needs NAME or NAME@REV, and optionally one RULE');
    const { parseRef } = await import('../../../../core/revisions/registry.js');
    const ref = parseRef(pos[0]!);
    const { host, decisions, suggestRule } = await openDecisions(ctx);
    try {
      const which: { tool: string; revision?: string; rule?: string } = { tool: ref.name };
      if (ref.revision !== undefined) which.revision = ref.revision;
      if (pos[1] !== undefined) which.rule = pos[1];
      const removed = await decisions.revoke(which);
      if (ctx.globals.json)
        outJson(ctx, {
          ok: true,
          revoked: removed.map((d) => ({ tool: d.toolName, revision: d.revision, rule: suggestRule(d) })),
        });
      else if (removed.length === 0) note(ctx, 'no matching permanent decision');
      else
        for (const d of removed)
          note(ctx, terminalSafe(ctx, `revoked ${d.toolName}@${d.revision} ${suggestRule(d)}`, ctx.io.stderr));
      return 0;
    } finally {
      await host.close();
    }
  },
};

const rules: CliCommand = {
  path: ['permissions', 'rules'],
  summary: 'show the effective mode and rules, with the scope and file each comes from',
  usage: `Usage: tycli permissions rules

Scopes, highest precedence first: ${RULE_SCOPES_TEXT}. A deny in any scope wins; alwaysAsk beats allow;
allow beats ask; the mode (from the highest scope that sets one) decides the rest.
Project/local files that weaken isolation or policy are named on stderr (with --json: "warnings").
With --json: {"mode","modeScope","files","rules":[{"list","rule","scope","source"}],"warnings":[...]}.`,
  allowPositionals: false,
  async run(ctx) {
    const { loadSettings } = await import('../../../settings/load.js');
    const s = await loadSettings({
      home: ctx.globals.home,
      cwd: ctx.cwd,
      flags: { allow: ctx.globals.allow, deny: ctx.globals.deny, mode: ctx.globals.mode },
    });
    const rows = (['deny', 'alwaysAsk', 'allow', 'ask'] as const).flatMap((l) =>
      s.policy.rules[l].map((c) => ({ list: l, rule: c.rule.text, scope: c.scope, source: c.source })),
    );
    if (ctx.globals.json) {
      outJson(ctx, {
        mode: s.policy.mode,
        modeScope: s.policy.modeScope,
        files: s.files,
        rules: rows,
        warnings: s.warnings,
      });
      return 0;
    }
    const { sanitizeInline } = await import('../../../../core/ask/text.js');
    for (const w of s.warnings) ctx.io.stderr.write(`${sanitizeInline(w)}\n`);
    out(ctx, `mode: ${s.policy.mode} (${s.policy.modeScope})`);
    for (const f of s.files)
      out(ctx, terminalSafe(ctx, `${f.scope} settings: ${f.path}${f.present ? '' : ' (absent)'}`));
    for (const r of rows)
      out(
        ctx,
        terminalSafe(
          ctx,
          `${r.list.padEnd(9)} ${r.rule}  [${r.scope}${r.source && r.scope !== 'flags' ? ` ${r.source}` : ''}]`,
        ),
      );
    return 0;
  },
};

export const permissionsCommands: CliCommand[] = [list, revoke, rules];
