// The command line's own hints for host-neutral core errors (core names the facts, the CLI names the command); Node
// host, trusted side.
import type { TyError } from '../../core/errors.js';
import { mcpHint } from '../../core/mcp/bridge/results.js';

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * A `tycli` hint for an error core raised, from its stable code and `data` (never from the message text), or
 * undefined when there is none. The hint is appended to the message (`MESSAGE; HINT`) on stderr and in `--json` output.
 */
export function cliHint(e: TyError): string | undefined {
  return cliHintFor(e.code, e.data);
}

/** The hint for a stable `code` and its `data` (also for invoke results, which carry `{ code, message, data }`). */
export function cliHintFor(code: string, data: Record<string, unknown> | undefined): string | undefined {
  const d = data ?? {};
  const parts: string[] = [];
  if (d.reason === 'no-channel')
    parts.push('to be asked, run in a terminal, or answer with `tycli questions --watch` in another one');
  // The message already names the rule (core says "the rule that allows it without asking: RULE"): say how to use it.
  if (str(d.allowRule))
    parts.push(
      `to allow it without asking, pass that rule quoted to --allow, or add it under permissions.allow in settings`,
    );
  if (str(d.revoke)) parts.push(`revoke that answer with: tycli permissions revoke ${str(d.revoke)}`);
  if (str(d.paused)) parts.push(`resume with: tycli resume ${str(d.paused)}`);
  if (code === 'E_SECRET_DENIED' && str(d.secret)) {
    if (str(d.grantTo)) parts.push(`grant it with: tycli secret grant ${str(d.secret)} --tool ${str(d.grantTo)}`);
    else if (d.unset === true) parts.push(`set it with: tycli secret set ${str(d.secret)}`);
  }
  if (code === 'E_USAGE' && typeof d.minBytes === 'number')
    parts.push('use a longer value, or store this one anyway with: tycli secret set NAME --allow-short');
  if (code === 'E_INTEGRITY' && d.repair === 'install-again')
    parts.push('repair it with: tycli tool add MANIFEST.json');
  if (code === 'E_INVALID_MANIFEST' && d.secretLike === true)
    parts.push('store the value with: tycli secret set NAME (then tycli secret grant NAME --tool TOOL@REV)');
  if (parts.length > 0) return parts.join('; ');
  switch (code) {
    case 'E_APPROVAL_REQUIRED':
      if (d.approval === 'replacement' && d.kind === 'mcp-server' && str(d.name))
        return `approve with: the same tycli mcp add ${str(d.name)} command and --approve-replacement (tycli mcp show ${str(d.name)} shows the definition now)`;
      if (d.approval === 'replacement' && str(d.name) && str(d.revision))
        return `approve with: tycli tool activate ${str(d.name)} ${str(d.revision)} --approve-replacement`;
      if (d.approval === 'removal' && str(d.name))
        return `approve with: tycli tool remove ${str(d.name)} --approve-removal`;
      return undefined;
    case 'E_UNKNOWN_TOOL':
      if (str(d.prefix) || str(d.revision)) return `see: tycli tool list --revisions`;
      if (str(d.suggestion)) return `did you mean '${str(d.suggestion)}'? (see: tycli tool list)`;
      if (str(d.name)) return 'add it with: tycli tool add MANIFEST.json';
      return undefined;
    default:
      return undefined;
  }
}

/**
 * The hint `tycli mcp serve` appends for an MCP client (core/mcp/bridge/results.ts ClientHint): core's mcpHint (rules
 * and settings a person would change), except that a pause names the command that lifts it on this machine.
 */
export function mcpServeHint(code: string, data: Record<string, unknown> | undefined): string | undefined {
  const paused = str(data?.paused);
  const parts = [
    mcpHint(code, paused !== undefined ? { ...data, paused: undefined } : data),
    paused !== undefined ? `a person can resume it with: tycli resume ${paused.slice(0, 300)}` : undefined,
  ];
  const out = parts.filter((p): p is string => p !== undefined && p.length > 0);
  return out.length > 0 ? out.join('; ') : undefined;
}
