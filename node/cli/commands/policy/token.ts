// tycli token create --principal NAME [--expires] | list | revoke ID: per-client bearer tokens of the HTTP servers;
// Node host, trusted side.
import type { CliCommand, CliContext } from '../../types.js';
import { note, out, outJson, usage } from '../../output.js';

async function openTokens(ctx: CliContext) {
  const { createNodeHost } = await import('../../../host/host.js');
  const { TokenStore } = await import('../../../gateway/tokens.js');
  const host = await createNodeHost({
    home: ctx.globals.home,
    globals: ctx.globals,
    io: ctx.io,
    env: ctx.env,
    startSandboxes: false,
    python: false,
  });
  return { host, tokens: new TokenStore(host.store) };
}

const when = (ms: number | undefined): string => (ms === undefined ? 'never' : new Date(ms).toISOString());

const create: CliCommand = {
  path: ['token', 'create'],
  summary: 'create a bearer token for one client of serve --http and mcp serve --http (printed once)',
  usage: `Usage: tycli token create --principal NAME [--expires SPAN|DATE]

  --principal NAME   who the token stands for: requests with it act as the principal user:NAME, which
                     permission rules name (registry(add:user:NAME)) and audit records carry
  --expires WHEN     30m, 12h, 90d, 52w or an ISO 8601 date; default: does not expire

Prints the token once, on stdout (tyt_...): give it to the client, which sends it as
"Authorization: Bearer TOKEN". Only its SHA-256 is stored (in the store: shared by every instance of a
team gateway), so it cannot be shown again; revoke it and create another if it is lost.
With --json: {"ok":true,"token":"tyt_...","id":"...","principal":"NAME","expiresAt":...}.`,
  options: { principal: { type: 'string' }, expires: { type: 'string' } },
  allowPositionals: false,
  async run(ctx, v) {
    if (typeof v.principal !== 'string') usage('give the client principal: tycli token create --principal NAME');
    const { parseExpiry } = await import('../../../gateway/tokens.js');
    const expiresAt = typeof v.expires === 'string' ? parseExpiry(v.expires, Date.now()) : undefined;
    const { host, tokens } = await openTokens(ctx);
    try {
      const { token, record } = await tokens.create(v.principal, expiresAt);
      if (ctx.globals.json)
        outJson(ctx, {
          ok: true,
          token,
          id: record.id,
          principal: record.principal,
          ...(expiresAt !== undefined ? { expiresAt } : {}),
        });
      else {
        out(ctx, token);
        note(
          ctx,
          `token ${record.id} for user:${record.principal}, expires ${when(expiresAt)}; shown once: store it now`,
        );
      }
      return 0;
    } finally {
      await host.close();
    }
  },
};

const list: CliCommand = {
  path: ['token', 'list'],
  summary: 'list the per-client tokens (id, principal, created, expires, state); never the tokens',
  usage: `Usage: tycli token list

One line per token: id, principal, created, expires and state (active, expired, revoked).
With --json: {"ok":true,"tokens":[{"id","principal","createdAt","expiresAt"?,"revokedAt"?,"state"}]}.`,
  allowPositionals: false,
  async run(ctx) {
    const { host, tokens } = await openTokens(ctx);
    try {
      const all = await tokens.list();
      if (ctx.globals.json) outJson(ctx, { ok: true, tokens: all });
      else if (all.length === 0) note(ctx, 'no tokens; create one with tycli token create --principal NAME');
      else
        for (const t of all)
          out(
            ctx,
            `${t.id}  user:${t.principal}  created ${when(t.createdAt)}  expires ${when(t.expiresAt)}  ${t.state}`,
          );
      return 0;
    } finally {
      await host.close();
    }
  },
};

const revoke: CliCommand = {
  path: ['token', 'revoke'],
  summary: 'revoke a per-client token (by its id, or the token itself): refused by every instance within a second',
  usage: `Usage: tycli token revoke ID

ID as 'tycli token list' shows it (or the token itself). Every server sharing the store refuses the token
from its next request (a team gateway's instances hear the change at once; a cached verdict lasts at most
500 ms). The record stays, marked revoked. With --json: {"ok":true,"id":"...","revokedAt":...}.`,
  allowPositionals: true,
  async run(ctx, _v, pos) {
    if (pos.length !== 1) usage('give one token id: tycli token revoke ID');
    const { host, tokens } = await openTokens(ctx);
    try {
      const r = await tokens.revoke(pos[0]!);
      if (ctx.globals.json) outJson(ctx, { ok: true, id: r.id, revokedAt: r.revokedAt });
      else out(ctx, `token ${r.id} (user:${r.principal}) revoked`);
      return 0;
    } finally {
      await host.close();
    }
  },
};

export const tokenCommands: CliCommand[] = [create, list, revoke];
