// tycli serve [--http PORT]: the registration protocol (tysandbox/1.1, and 1.0) over stdio or loopback HTTP; Node
// host, trusted side.
import type { CliCommand, CliContext } from '../../types.js';
import { note, outJson, usage } from '../../output.js';
import { httpPortOption, untilStopped, writeTokenFile } from '../../serve-loop.js';

const serve: CliCommand = {
  path: ['serve'],
  summary: 'serve the registration protocol tysandbox/1.1 to programs (stdio NDJSON, or HTTP on loopback)',
  usage: `Usage: tycli serve [--http PORT] [--rate N]

  --http PORT   serve on http://127.0.0.1:PORT/tysandbox instead of stdio (0: any free port)
  --rate N      registration requests (tool/add, tool/activate, tool/remove) allowed per client principal
                per minute (default 60); beyond it they are refused with E_BUSY

Speaks the JSON-RPC 2.0 protocol "tysandbox/1.1" and "tysandbox/1" (docs/protocol.md): initialize, tool/add,
tool/list (paged), tool/show, tool/activate, tool/remove, tool/run, rpc.discover and $/cancel; tool/listChanged
tells clients that ask for it about changes by any process sharing this home. On stdin/stdout one message per line (NDJSON);
with --http PORT at http://127.0.0.1:PORT/tysandbox (0: any free port) with a bearer token written 0600 to
<home>/run/serve-http.token, and the Host and Origin checks of 'tycli mcp serve --http'.
A client acts as the principal protocol:NAME (NAME from its initialize). Every method passes the gate
and is audited: registration requests are rule kind registry(add|activate|remove|read[:PRINCIPAL]); moving
an active binding or removing one asks a person (terminal, or 'tycli questions' / 'tycli answer'), and with
no one to ask it is refused with E_APPROVAL_REQUIRED. tool/run calls pass the gate as tool calls do.`,
  options: { http: { type: 'string' }, rate: { type: 'string' } },
  allowPositionals: false,
  async run(ctx: CliContext, v) {
    const httpPort = httpPortOption(v.http);
    const rate = v.rate === undefined ? undefined : Number(v.rate);
    if (rate !== undefined && !/^[1-9][0-9]{0,6}$/.test(String(v.rate)))
      usage('--rate takes a whole number of registration requests per minute (1 or more)');
    const { createNodeHost } = await import('../../../host/host.js');
    const { protocolServerFor, serveProtocolStream } = await import('../../../registration/stdio.js');
    const { watchRegistry } = await import('../../../registration/watch.js');
    let server: import('../../../../core/registration/server.js').RegistrationServer | undefined;
    const host = await createNodeHost({
      home: ctx.globals.home,
      globals: ctx.globals,
      io: ctx.io,
      env: ctx.env,
      cwd: ctx.cwd,
      principal: 'protocol:unknown',
      onToolLog: (rev, level, text) => server?.toolLog(rev, level, text),
    });
    server = protocolServerFor(
      host,
      rate === undefined ? undefined : { registrationsPerWindow: rate, registrationWindowMs: 60_000 },
    );
    let stopHttp: (() => Promise<void>) | undefined;
    const stopWatch = watchRegistry(host.paths.store, server);
    const stopped = untilStopped(ctx, httpPort === undefined);
    try {
      if (httpPort === undefined) {
        await Promise.race([
          serveProtocolStream(server, ctx.io.stdin as NodeJS.ReadStream, ctx.io.stdout as NodeJS.WriteStream),
          stopped,
        ]);
      } else {
        const { serveProtocolHttp } = await import('../../../registration/http.js');
        const h = await serveProtocolHttp(server, { port: httpPort });
        stopHttp = () => h.close();
        const tokenFile = await writeTokenFile(host.paths.run, 'serve-http.token', h.token);
        if (ctx.globals.json) outJson(ctx, { ok: true, url: h.url, tokenFile });
        else note(ctx, `tysandbox/1.1 at ${h.url} (bearer token in ${tokenFile}); Ctrl-C stops it`);
        await stopped;
      }
    } finally {
      stopWatch();
      await stopHttp?.();
      server.close();
      await host.close();
    }
    return 0;
  },
};

export const serveCommands: CliCommand[] = [serve];
