// tycli completion bash|zsh|fish: shell completion scripts generated from the command table; Node host, trusted side.
import type { CliCommand } from '../../types.js';
import { out, outJson, usage } from '../../output.js';
import { GLOBAL_OPTIONS } from '../../globals.js';

/** Command paths and their options (`--name`), from the table the dispatcher uses, so completion never drifts. */
function table(commands: readonly CliCommand[], globals: readonly string[]): { path: string; options: string[] }[] {
  return commands.map((c) => ({
    path: c.path.join(' '),
    options: [...Object.keys(c.options ?? {}).map((k) => `--${k}`), ...globals].sort(),
  }));
}

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function bash(rows: ReturnType<typeof table>): string {
  const cases = rows.map((r) => `    ${q(r.path)}) opts=${q(r.options.join(' '))} ;;`).join('\n');
  const paths = rows.map((r) => r.path).join('\n');
  return `# tycli completion for bash: source <(tycli completion bash)
_tycli() {
  local cur words_typed path opts next
  cur="\${COMP_WORDS[COMP_CWORD]}"
  words_typed=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in -*) ;; *) words_typed="\${words_typed:+$words_typed }\${COMP_WORDS[i]}" ;; esac
  done
  if [[ "$cur" == -* ]]; then
    opts=""
    case "$words_typed" in
${cases}
    esac
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    return
  fi
  next=$(printf '%s\\n' ${q(paths)} | while IFS= read -r path; do
    if [[ -z "$words_typed" ]]; then echo "\${path%% *}"; elif [[ "$path" == "$words_typed "* ]]; then rest="\${path#"$words_typed "}"; echo "\${rest%% *}"; fi
  done | sort -u)
  COMPREPLY=($(compgen -W "$next" -- "$cur"))
}
complete -o default -F _tycli tycli
`;
}

function zsh(rows: ReturnType<typeof table>): string {
  return `#compdef tycli
# tycli completion for zsh: source <(tycli completion zsh)
autoload -U +X bashcompinit && bashcompinit
${bash(rows)}`;
}

function fish(rows: ReturnType<typeof table>): string {
  const lines: string[] = ['# tycli completion for fish: tycli completion fish | source', 'complete -c tycli -f'];
  const firsts = [...new Set(rows.map((r) => r.path.split(' ')[0]!))];
  lines.push(`complete -c tycli -n '__fish_use_subcommand' -a ${q(firsts.join(' '))}`);
  for (const first of firsts) {
    const seconds = [...new Set(rows.filter((r) => r.path.startsWith(`${first} `)).map((r) => r.path.split(' ')[1]!))];
    if (seconds.length)
      lines.push(`complete -c tycli -n '__fish_seen_subcommand_from ${first}' -a ${q(seconds.join(' '))}`);
  }
  for (const r of rows) {
    const words = r.path.split(' ');
    const cond = words.map((w) => `__fish_seen_subcommand_from ${w}`).join('; and ');
    for (const o of r.options) lines.push(`complete -c tycli -n ${q(cond)} -l ${o.slice(2)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** The completion command; `all` is the whole command table (itself included). */
export function completionCommand(all: () => readonly CliCommand[]): CliCommand {
  return {
    path: ['completion'],
    summary: 'print a shell completion script: bash, zsh or fish',
    usage: `Usage: tycli completion bash|zsh|fish

  bash:  source <(tycli completion bash)          (or save it under ~/.local/share/bash-completion/completions/tycli)
  zsh:   source <(tycli completion zsh)
  fish:  tycli completion fish > ~/.config/fish/completions/tycli.fish

Completes command words and each command's options. With --json: {"ok":true,"shell","script"}.`,
    async run(ctx, _v, pos) {
      if (pos.length !== 1 || !['bash', 'zsh', 'fish'].includes(pos[0]!))
        usage('tycli completion takes one shell: bash, zsh or fish');
      const rows = table(
        all(),
        Object.keys(GLOBAL_OPTIONS).map((g) => `--${g}`),
      );
      const script = pos[0] === 'bash' ? bash(rows) : pos[0] === 'zsh' ? zsh(rows) : fish(rows);
      if (ctx.globals.json) outJson(ctx, { ok: true, shell: pos[0], script });
      else out(ctx, script);
      return 0;
    },
  };
}
