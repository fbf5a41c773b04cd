// The options every tycli command accepts (parsed before the command's own) and their --help lines; Node host,
// trusted side.
import type { ParseArgsConfig } from 'node:util';

/** Options every command accepts, in addition to its own. */
export const GLOBAL_OPTIONS = {
  home: { type: 'string' },
  json: { type: 'boolean' },
  allow: { type: 'string', multiple: true },
  deny: { type: 'string', multiple: true },
  mode: { type: 'string' },
  sandbox: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies NonNullable<ParseArgsConfig['options']>;

/** The global options' lines in every --help. */
export const GLOBAL_HELP = `Global options:
  --home DIR         state folder (default: $TYCLI_HOME, else the per-user data folder)
  --json             machine output: one JSON line per result
  --allow RULE       allow rule for this session (repeatable), e.g. 'fetch(read:https://api.example.com)'
  --deny RULE        deny rule for this session (repeatable; deny wins)
  --mode MODE        permission mode for this session: strict, standard (default) or unrestricted
  --sandbox POSTURE  OS isolation: auto (default), required, off
  -h, --help         show help
  -V, --version      print the version and exit (tycli --version)`;
