// The command line's own hints for host-neutral core errors (core names the facts, the CLI names the command); Node host, trusted side.
import type { TyError } from '../../core/errors.js';

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * A `tycli` hint for an error core raised, from its stable code and `data` (never from the message text), or
 * undefined when there is none. The hint is appended to the message (`MESSAGE; HINT`) on stderr and in `--json` output.
 */
export function cliHint(e: TyError): string | undefined {
  const d = e.data ?? {};
  switch (e.code) {
    case 'E_APPROVAL_REQUIRED':
      if (d.approval === 'replacement' && str(d.name) && str(d.revision)) return `approve with: tycli tool activate ${str(d.name)} ${str(d.revision)} --approve-replacement`;
      if (d.approval === 'removal' && str(d.name)) return `approve with: tycli tool remove ${str(d.name)} --approve-removal`;
      return undefined;
    case 'E_UNKNOWN_TOOL':
      if (str(d.prefix) || str(d.revision)) return `see: tycli tool list --revisions`;
      if (str(d.name)) return 'add it with: tycli tool add MANIFEST.json';
      return undefined;
    default:
      return undefined;
  }
}
