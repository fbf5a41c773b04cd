// tycli secret set|grant|revoke|list|delete: secret values (0600 file) and their per-revision grants; Node host,
// trusted side.
import { TyError } from '../../../../core/errors.js';
import type { CliCommand, CliContext } from '../../types.js';
import { note, out, outJson, usage } from '../../output.js';
import { shortId } from '../../../../core/revisions/refs.js';
import { MIN_SECRET_BYTES } from '../../../../core/capabilities/secrets.js';

async function openSecrets(ctx: CliContext) {
  const { createNodeHost } = await import('../../../host/host.js');
  const { SecretGrants } = await import('../../../../core/capabilities/secrets.js');
  const host = await createNodeHost({
    home: ctx.globals.home,
    globals: ctx.globals,
    io: ctx.io,
    env: ctx.env,
    startSandboxes: false,
  });
  // the 0600 secrets file, or sealed rows of the PostgreSQL store (TYCLI_STORE_KEY_FILE)
  const values = host.opened.secrets;
  return { host, values, grants: new SecretGrants(host.store) };
}

/** Read all of a non-terminal stdin (bounded); one trailing newline is removed. */
async function readStdin(stream: NodeJS.ReadableStream): Promise<string> {
  const { MAX_SECRET_BYTES } = await import('../../../store/secrets.js');
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const c of stream as AsyncIterable<Buffer | string>) {
    const b = typeof c === 'string' ? Buffer.from(c) : c;
    total += b.length;
    if (total > MAX_SECRET_BYTES + 2) usage(`a secret value must be at most ${MAX_SECRET_BYTES} bytes`);
    chunks.push(b);
  }
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** Prompt on the terminal without echo (raw mode); Enter ends, Ctrl-C / Ctrl-D cancels. */
function readHidden(ctx: CliContext, prompt: string): Promise<string> {
  const input = ctx.io.stdin as NodeJS.ReadStream;
  if (typeof input.setRawMode !== 'function')
    usage('no terminal to prompt on; pipe the value on stdin: printf %s "$VALUE" | tycli secret set NAME');
  ctx.io.stderr.write(prompt);
  return new Promise((resolve, reject) => {
    let value = '';
    const done = (err?: TyError): void => {
      input.setRawMode(false);
      input.pause();
      input.removeListener('data', onData);
      ctx.io.stderr.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (d: Buffer | string): void => {
      for (const ch of typeof d === 'string' ? d : d.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done();
        if (ch === '\u0003' || ch === '\u0004') return done(new TyError('E_USAGE', 'cancelled'));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else value += ch;
      }
    };
    input.setRawMode(true);
    input.resume();
    input.on('data', onData);
  });
}

/** `NAME` (the active revision now) or `NAME@REV`. */
async function resolveTool(
  host: Awaited<ReturnType<typeof openSecrets>>['host'],
  ref: unknown,
): Promise<{ name: string; revision: string; requested: string[] }> {
  if (typeof ref !== 'string' || ref === '') usage('--tool NAME[@REV] is required');
  const t = await host.registry.resolve(ref);
  return { name: t.name, revision: t.revision, requested: t.manifest.capabilities?.secrets ?? [] };
}

const set: CliCommand = {
  path: ['secret', 'set'],
  summary: 'store a secret value (read from stdin or a hidden prompt, never from the command line)',
  usage: `Usage: tycli secret set NAME [--allow-short]   (value on stdin, or typed at a hidden prompt)

The value is kept in <home>/config/secrets.json (mode 0600), or on a PostgreSQL store sealed with AES-256-GCM
under the key in TYCLI_STORE_KEY_FILE; it is never printed or logged.
Setting a value grants it to no tool; use 'tycli secret grant'.
  --allow-short   store a value under ${MIN_SECRET_BYTES} bytes. Refused without it: a value that short can be guessed, and it
                  is found by chance in ordinary text (a tool's own message), where tycli withholds known values`,
  options: { 'allow-short': { type: 'boolean' } },
  async run(ctx, v, pos) {
    if (pos.length !== 1)
      usage(
        pos.length > 1
          ? 'tycli secret set takes only NAME; never pass a secret value as an argument (it would land in shell history and the process list); pipe it on stdin'
          : 'tycli secret set needs NAME',
      );
    const name = pos[0]!;
    const { checkSecretName, checkSecretValue } = await import('../../../../core/capabilities/secrets.js');
    checkSecretName(name);
    const tty = (ctx.io.stdin as NodeJS.ReadStream).isTTY === true;
    const value = tty ? await readHidden(ctx, `value for ${name} (input hidden): `) : await readStdin(ctx.io.stdin);
    checkSecretValue(value, { allowShort: v['allow-short'] === true });
    const { host, values } = await openSecrets(ctx);
    try {
      // audited (the name, never the value): an intent record before the file is written, its completion after
      await host.changes.run(
        { principal: 'cli:user', kind: 'secret', tool: '*', revision: '*', target: name, rule: 'tycli secret set' },
        () => values.set(name, value),
      );
    } finally {
      await host.close();
    }
    if (ctx.globals.json) outJson(ctx, { ok: true, name });
    else
      note(
        ctx,
        `stored secret ${name}; grant it with: tycli secret grant ${name} --tool TOOL[@REV] [--origin https://...]`,
      );
    return 0;
  },
};

const grant: CliCommand = {
  path: ['secret', 'grant'],
  summary: 'grant a secret to one tool revision, optionally only as a header placeholder for some origins',
  usage: `Usage: tycli secret grant NAME --tool TOOL[@REV] [--origin https://host[:port]]...

Grants go to an exact revision (TOOL alone means its active revision now); a new revision under the same
name starts with no grants. NAME must be one the revision's manifest requests (capabilities.secrets).
  without --origin   the revision may read the value with ctx.getSecret(NAME)
  with --origin      the value is only put into {{secret:NAME}} header placeholders of fetches to those
                     origins, by the host; ctx.getSecret(NAME) is refused, so the value never enters the sandbox`,
  options: { tool: { type: 'string' }, origin: { type: 'string', multiple: true } },
  async run(ctx, v, pos) {
    if (pos.length !== 1) usage('tycli secret grant needs exactly one NAME');
    const name = pos[0]!;
    (await import('../../../../core/capabilities/secrets.js')).checkSecretName(name);
    const origins = (v.origin as string[] | undefined) ?? [];
    const { host, values, grants } = await openSecrets(ctx);
    try {
      const tool = await resolveTool(host, v.tool);
      // the manifest is the upper bound: a grant of a secret it does not request could never be used
      const requested = tool.requested;
      if (!requested.includes(name)) {
        usage(
          `${tool.name}@${shortId(tool.revision)} does not request the secret ${name} in its manifest ` +
            `(capabilities.secrets: ${requested.length ? requested.join(', ') : 'none'}); a grant could ` +
            `never be used`,
        );
      }
      await host.changes.run(
        {
          principal: 'cli:user',
          kind: 'secret',
          tool: tool.name,
          revision: tool.revision,
          target: origins.length ? `${name} -> ${origins.join(', ')}` : name,
          rule: 'tycli secret grant',
        },
        () => grants.grant(name, { tool: tool.name, revision: tool.revision, origins }),
      );
      const hasValue = (await values.get(name)) !== undefined;
      if (ctx.globals.json)
        outJson(ctx, { ok: true, name, tool: tool.name, revision: tool.revision, origins, hasValue });
      else {
        out(
          ctx,
          `granted ${name} to ${tool.name}@${tool.revision}${origins.length ? ` for headers to ${origins.join(', ')}` : ' (readable with ctx.getSecret)'}`,
        );
        if (!hasValue) note(ctx, `note: ${name} has no value yet; set it with: tycli secret set ${name}`);
      }
      return 0;
    } finally {
      await host.close();
    }
  },
};

const revoke: CliCommand = {
  path: ['secret', 'revoke'],
  summary: 'remove grants of a secret from a tool (one revision with TOOL@REV, else every revision)',
  usage: 'Usage: tycli secret revoke NAME --tool TOOL[@REV]',
  options: { tool: { type: 'string' } },
  async run(ctx, v, pos) {
    if (pos.length !== 1) usage('tycli secret revoke needs exactly one NAME');
    const name = pos[0]!;
    if (typeof v.tool !== 'string' || v.tool === '') usage('--tool TOOL[@REV] is required');
    const at = v.tool.indexOf('@');
    const toolName = at < 0 ? v.tool : v.tool.slice(0, at);
    const revision = at < 0 ? undefined : v.tool.slice(at + 1);
    const { host, grants } = await openSecrets(ctx);
    try {
      const n = await host.changes.run(
        {
          principal: 'cli:user',
          kind: 'secret',
          tool: toolName,
          revision: revision ?? '*',
          target: name,
          rule: 'tycli secret revoke',
        },
        () => grants.revoke(name, toolName, revision),
      );
      if (ctx.globals.json) outJson(ctx, { ok: true, name, removed: n });
      else out(ctx, `removed ${n} grant${n === 1 ? '' : 's'} of ${name} from ${v.tool}`);
      return 0;
    } finally {
      await host.close();
    }
  },
};

const list: CliCommand = {
  path: ['secret', 'list'],
  summary: 'list secret names and their grants (never values)',
  usage:
    'Usage: tycli secret list\n\nWith --json: {"ok":true,"secrets":[{"name","hasValue","grants":[{"tool","revision","origins"}]}]}.',
  allowPositionals: false,
  async run(ctx) {
    const { host, values, grants } = await openSecrets(ctx);
    try {
      const names = new Set(await values.names());
      const all = await grants.list();
      for (const g of all) names.add(g.name);
      const rows = [...names]
        .sort()
        .map((n) => ({ name: n, hasValue: false, grants: all.find((g) => g.name === n)?.grants ?? [] }));
      const withValues = new Set(await values.names());
      for (const r of rows) r.hasValue = withValues.has(r.name);
      if (ctx.globals.json) outJson(ctx, { ok: true, secrets: rows });
      else if (rows.length === 0) note(ctx, 'no secrets; add one with: tycli secret set NAME');
      else {
        for (const r of rows) {
          out(ctx, `${r.name}${r.hasValue ? '' : ' (no value set)'}`);
          if (r.grants.length === 0) out(ctx, '  no grants');
          for (const g of r.grants)
            out(
              ctx,
              `  ${g.tool}@${g.revision}  ${g.origins.length ? `headers to ${g.origins.join(', ')}` : 'ctx.getSecret'}`,
            );
        }
      }
      return 0;
    } finally {
      await host.close();
    }
  },
};

const del: CliCommand = {
  path: ['secret', 'delete'],
  summary: 'delete a secret value and all its grants',
  usage: 'Usage: tycli secret delete NAME',
  async run(ctx, _v, pos) {
    if (pos.length !== 1) usage('tycli secret delete needs exactly one NAME');
    const name = pos[0]!;
    (await import('../../../../core/capabilities/secrets.js')).checkSecretName(name);
    const { host, values, grants } = await openSecrets(ctx);
    try {
      const had = await host.changes.run(
        { principal: 'cli:user', kind: 'secret', tool: '*', revision: '*', target: name, rule: 'tycli secret delete' },
        async () => {
          const removed = await values.delete(name);
          await grants.revokeAll(name);
          return removed;
        },
      );
      if (ctx.globals.json) outJson(ctx, { ok: true, name, deleted: had });
      else out(ctx, had ? `deleted ${name}` : `${name} had no value; its grants were removed`);
      return 0;
    } finally {
      await host.close();
    }
  },
};

export const secretCommands: CliCommand[] = [set, grant, revoke, list, del];
