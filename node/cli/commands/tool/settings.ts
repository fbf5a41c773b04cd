// tycli tool settings NAME: show or change the settings revision of one tool revision; Node host, trusted side.
import { TyError } from '../../../../core/errors.js';
import { shortId } from '../../../../core/revisions/refs.js';
import type { CliCommand, CliContext } from '../../types.js';
import { out, outJson, terminalSafe, usage } from '../../output.js';

async function openHost(ctx: CliContext) {
  const { createNodeHost } = await import('../../../host/host.js');
  return createNodeHost({
    home: ctx.globals.home,
    globals: ctx.globals,
    io: ctx.io,
    env: ctx.env,
    cwd: ctx.cwd,
    startSandboxes: false,
  });
}

/** A revision argument as REV, PREFIX or NAME@REV; a NAME@ of another tool is refused. */
export function revisionArg(name: string, arg: string, flag: string): string {
  const at = arg.indexOf('@');
  if (at < 0) return arg;
  const other = arg.slice(0, at);
  if (other !== name) usage(`${flag} ${arg.slice(0, 120)} names the tool "${other.slice(0, 64)}", not "${name}"`);
  return arg.slice(at + 1);
}

/**
 * The value of `--set KEY=VALUE`: kept as text when the schema says the field is a string; otherwise JSON when it
 * parses (`10`, `true`, `["a"]`, `{"k":1}`, `null`), else text.
 */
function settingValue(schema: Record<string, unknown> | undefined, key: string, raw: string): unknown {
  const props = schema?.properties as Record<string, { type?: unknown }> | undefined;
  const t = props && Object.prototype.hasOwnProperty.call(props, key) ? props[key]?.type : undefined;
  if (t === 'string') return raw;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

const settings: CliCommand = {
  path: ['tool', 'settings'],
  summary: "show or change a tool revision's settings (values its manifest's settings schema describes)",
  usage: `Usage: tycli tool settings NAME|NAME@REV [--set KEY=VALUE]... [--unset KEY]... [--from REV]

Without flags: the current settings of the revision (the active one for NAME): the settings
revision, each value, and the schema's defaults for fields not set.
With --set/--unset/--from: a new settings revision (a content id over the tool revision and the
values), checked against the revision's settings schema (defaults applied), becomes current for
that tool revision; its id is printed. Calls and tasks from now on run with it (ctx.settings).
  --set KEY=VALUE  set top-level field KEY; VALUE is JSON (10, true, ["a"]) unless the schema
                   says KEY is a string, or it is not valid JSON (then it is text)
  --unset KEY      remove field KEY (its schema default applies again)
  --from REV       start from the current settings of another revision of NAME (REV, a unique
                   prefix, or NAME@REV); the values are re-checked against this revision's schema
Settings are keyed by the tool revision: a new revision starts with none until --from carries
them over. Secrets are never settings: use 'tycli secret set'. Every change is audited.
With --json: {"ok":true,"name","revision","settingsRevision","values","effective",...}.`,
  options: {
    set: { type: 'string', multiple: true },
    unset: { type: 'string', multiple: true },
    from: { type: 'string' },
  },
  async run(ctx, v, pos) {
    if (pos.length !== 1) usage('tycli tool settings takes exactly one NAME or NAME@REV');
    const sets = (v.set as string[] | undefined) ?? [];
    const unsets = (v.unset as string[] | undefined) ?? [];
    const from = v.from as string | undefined;
    const host = await openHost(ctx);
    try {
      const tool = await host.registry.resolve(pos[0]!);
      const schema = tool.manifest.settings;
      if (!schema)
        throw new TyError(
          'E_INVALID_SETTINGS',
          `${tool.name} declares no settings (its manifest has no "settings" schema)`,
          { tool: tool.name },
        );
      if (sets.length === 0 && unsets.length === 0 && from === undefined) {
        const cur = await host.settings.current(tool);
        if (ctx.globals.json) {
          outJson(ctx, {
            ok: true,
            name: tool.name,
            revision: tool.revision,
            settingsRevision: cur.settingsRevision ?? null,
            values: cur.values,
            effective: cur.effective,
            schema,
          });
          return 0;
        }
        const lines = [
          `${tool.name}@${shortId(tool.revision)}: ${cur.settingsRevision ? `settings revision ${cur.settingsRevision}` : 'no settings revision (schema defaults only)'}`,
        ];
        const props = Object.keys((schema.properties as Record<string, unknown> | undefined) ?? {});
        for (const k of [...new Set([...props, ...Object.keys(cur.effective)])].sort()) {
          const set = Object.prototype.hasOwnProperty.call(cur.values, k);
          const has = Object.prototype.hasOwnProperty.call(cur.effective, k);
          lines.push(
            `  ${k}: ${has ? JSON.stringify(cur.effective[k]) : '(not set)'}${has && !set ? ' (default)' : ''}`,
          );
        }
        out(ctx, terminalSafe(ctx, lines.join('\n')));
        return 0;
      }
      const set: Record<string, unknown> = {};
      for (const spec of sets) {
        const eq = spec.indexOf('=');
        if (eq <= 0) usage(`--set takes KEY=VALUE (got "${spec.slice(0, 80)}")`);
        const key = spec.slice(0, eq);
        set[key] = settingValue(schema, key, spec.slice(eq + 1));
      }
      for (const k of unsets)
        if (Object.prototype.hasOwnProperty.call(set, k)) usage(`--set and --unset both name "${k.slice(0, 64)}"`);
      if (from !== undefined && from === tool.name) {
        usage(
          `--from takes a revision of ${tool.name} (a revision id, a unique prefix of at least 8 characters, or ${tool.name}@REV), not the tool name; list them with: tycli tool list --revisions`,
        );
      }
      const fromTool =
        from === undefined
          ? undefined
          : await host.registry.resolve(`${tool.name}@${revisionArg(tool.name, from, '--from')}`);
      if (fromTool && fromTool.revision === tool.revision) {
        usage(
          `--from ${shortId(fromTool.revision)} is the revision being changed (${tool.name}@${shortId(tool.revision)}); --from copies the settings of another revision of ${tool.name}`,
        );
      }
      const r = await host.settings.update(
        tool,
        { set, unset: unsets, ...(fromTool ? { from: fromTool } : {}) },
        { principal: 'cli:user', via: 'tycli tool settings' },
      );
      if (ctx.globals.json) {
        outJson(ctx, {
          ok: true,
          name: tool.name,
          revision: tool.revision,
          settingsRevision: r.settingsRevision,
          previous: r.previous ?? null,
          changed: r.changed,
          values: r.values,
          effective: r.effective,
        });
      } else out(ctx, r.settingsRevision);
      return 0;
    } finally {
      await host.close();
    }
  },
};

export const toolSettingsCommands: CliCommand[] = [settings];
