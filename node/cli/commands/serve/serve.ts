// tycli serve [--http [HOST:]PORT]: the registration protocol (tysandbox/1) for programs, over stdio or HTTP(S) as a
// team gateway instance; Node host, trusted side.
import type { CliCommand, CliContext } from '../../types.js';
import { note, outJson, usage } from '../../output.js';
import { untilStopped, writeTokenFile } from '../../serve-loop.js';
import { GATEWAY_OPTIONS, GATEWAY_USAGE } from '../../../gateway/serve.js';

const serve: CliCommand = {
  path: ['serve'],
  summary: 'serve the registration protocol tysandbox/1 to programs (stdio NDJSON, or HTTP: a gateway instance)',
  usage: `Usage: tycli serve [--http [HOST:]PORT [--tls-cert FILE --tls-key FILE | --behind-proxy]] [--rate N]

${GATEWAY_USAGE}
  --rate N                registration requests (tool/add, tool/activate, tool/remove) allowed per client
                          principal per minute (default 60; counted in the store, so shared by every instance
                          on one store); beyond it they are refused with E_BUSY

Speaks the JSON-RPC 2.0 protocol "tysandbox/1" (docs/protocol.md): initialize, tool/add, tool/list,
tool/show, tool/activate, tool/remove, tool/run and $/cancel. On stdin/stdout one message per line (NDJSON);
with --http at http(s)://HOST:PORT/tysandbox. A client authenticates with a bearer token: a per-client token
('tycli token create --principal NAME': it acts as user:NAME), an OIDC access token (gateway.oidc in the user
settings) or this server's own token, written 0600 to <home>/run/serve-http-HOST-PORT.token (one per listening
address) with which a client acts as protocol:NAME (NAME from its initialize). /healthz, /readyz and /metrics
(Prometheus) are served too; admission bounds connections, calls and sessions per server and per principal
(HTTP 429 E_BUSY with Retry-After). On a PostgreSQL store (TYCLI_STORE) several instances serve one state and a
session moves to another instance when its own stops (docs/deploy.md). Every method passes the gate and is
audited: registration requests are rule kind registry(add|activate|remove|read[:PRINCIPAL]); moving an active
binding or removing one asks a person (terminal, or 'tycli questions' / 'tycli answer'), and with no one to ask
it is refused with E_APPROVAL_REQUIRED. tool/run calls pass the gate as tool calls do.`,
  options: { http: { type: 'string' }, rate: { type: 'string' }, ...GATEWAY_OPTIONS },
  allowPositionals: false,
  async run(ctx: CliContext, v) {
    const rate = v.rate === undefined ? undefined : Number(v.rate);
    if (rate !== undefined && !/^[1-9][0-9]{0,6}$/.test(String(v.rate)))
      usage('--rate takes a whole number of registration requests per minute (1 or more)');
    if (v.http === undefined)
      for (const f of ['tls-cert', 'tls-key', 'behind-proxy', 'log-format'])
        if (v[f] !== undefined) usage(`--${f} goes with --http`);
    const gw = v.http === undefined ? undefined : await import('../../../gateway/serve.js');
    const flags = gw?.gatewayFlags(v);
    const instruments = gw ? await gw.gatewayInstruments(ctx.env) : undefined;
    const { createNodeHost } = await import('../../../host/host.js');
    const { protocolServerFor, serveProtocolStream } = await import('../../../registration/stdio.js');
    const { StoreRate } = await import('../../../../core/registration/limits.js');
    let server: import('../../../../core/registration/server.js').RegistrationServer | undefined;
    const host = await createNodeHost({
      home: ctx.globals.home,
      globals: ctx.globals,
      io: ctx.io,
      env: ctx.env,
      cwd: ctx.cwd,
      principal: 'protocol:unknown',
      onToolLog: (rev, level, text) => server?.toolLog(rev, level, text),
      ...(instruments?.tracing ? { tracer: instruments.tracing.callTracer } : {}),
      ...(instruments ? { observe: (r) => instruments.observe(r) } : {}),
    });
    const perMinute = rate ?? 60;
    server = protocolServerFor(
      host,
      rate === undefined ? undefined : { registrationsPerWindow: rate, registrationWindowMs: 60_000 },
      new StoreRate(host.store, perMinute, 60_000),
    );
    let stop: (() => Promise<void>) | undefined;
    const stopped = untilStopped(ctx, v.http === undefined);
    try {
      if (!gw || !flags || !instruments) {
        await Promise.race([
          serveProtocolStream(server, ctx.io.stdin as NodeJS.ReadStream, ctx.io.stdout as NodeJS.WriteStream),
          stopped,
        ]);
      } else {
        const [{ protocolRoute }, { loadSettings }] = await Promise.all([
          import('../../../registration/http.js'),
          import('../../../settings/load.js'),
        ]);
        const settings = await loadSettings({
          home: ctx.globals.home,
          cwd: ctx.cwd,
          flags: { allow: ctx.globals.allow, deny: ctx.globals.deny, mode: ctx.globals.mode },
        });
        const route = protocolRoute(server, {
          ...(host.opened.kind === 'postgres' ? { shared: host.store } : {}),
        });
        const serving = await gw.startServing({
          flags,
          host,
          settings,
          instruments,
          tokenPrefix: 'serve-http',
          paths: ['/tysandbox'],
          sessions: () => route.sessions,
          route: (req, res, c, admission) =>
            route.handle(req, res, { principal: c.principal }, (who) => {
              const p = admission.openSession(who);
              return p.ok ? p : { ok: false, message: admission.message(p.reason) };
            }),
          stderr: ctx.io.stderr,
          writeTokenFile: (name, token) => writeTokenFile(host.paths.run, name, token),
        });
        stop = async () => {
          await serving.close();
          route.close();
        };
        if (ctx.globals.json) outJson(ctx, { ok: true, url: serving.url, tokenFile: serving.tokenFile });
        else note(ctx, `tysandbox/1 at ${serving.url} (bearer token in ${serving.tokenFile}); Ctrl-C stops it`);
        await stopped;
      }
    } finally {
      await stop?.();
      server.close();
      await host.close();
    }
    return 0;
  },
};

export const serveCommands: CliCommand[] = [serve];
