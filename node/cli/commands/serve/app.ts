// tycli app: serve the built web chat app on 127.0.0.1 with a strict CSP until interrupted; Node host, trusted side.
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import type { CliCommand } from '../../types.js';
import { note, out, outJson, usage } from '../../output.js';
import { untilStopped } from '../../serve-loop.js';

/** Open `url` in the person's browser (xdg-open, open or start); failures are reported, never fatal. */
function openBrowser(url: string, onError: (m: string) => void): void {
  const [cmd, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '', url]]
        : ['xdg-open', [url]];
  try {
    const child = spawn(cmd, args as string[], { stdio: 'ignore', detached: true });
    child.on('error', (e) => onError(`could not open a browser (${cmd}): ${e.message}`));
    child.unref();
  } catch (e) {
    onError(`could not open a browser (${cmd}): ${(e as Error).message}`);
  }
}

const app: CliCommand = {
  path: ['app'],
  summary: 'serve the web chat app on 127.0.0.1 (URL on stdout) until interrupted',
  usage: `Usage: tycli app [--port PORT] [--open] [--embed-origin ORIGIN]...

Serves the built chat app (npm run build) on 127.0.0.1 with a strict Content-Security-Policy
(no 'unsafe-eval', no inline scripts) and prints its URL on stdout. Default port 8765; when it is
taken a free port is used (the app keeps its data per origin, so a stable port keeps your
conversations, tools and settings). --port 0 always picks a free port.
  --port PORT   port on 127.0.0.1 (0-65535)
  --open        open the URL in the default browser
  --embed-origin ORIGIN  a page origin (scheme://host[:port]) that may frame the app (CSP frame-ancestors;
                repeatable; default none). To talk to the app over postMessage (docs/protocol.md) the
                origin must also be in the app's Settings, "Allowed embedding origins".
Stop with Ctrl-C (exit 130; SIGTERM: 143). With --json: {"ok":true,"url","port"}.`,
  options: { port: { type: 'string' }, open: { type: 'boolean' }, 'embed-origin': { type: 'string', multiple: true } },
  allowPositionals: false,
  async run(ctx, values) {
    let port: number | undefined;
    if (values.port !== undefined) {
      const p = String(values.port);
      if (!/^\d{1,5}$/.test(p) || Number(p) > 65535)
        usage(`--port must be a number from 0 to 65535 (got "${p.slice(0, 20)}")`);
      port = Number(p);
    }
    const embed = (values['embed-origin'] as string[] | undefined) ?? [];
    for (const o of embed) {
      let ok = false;
      try {
        const u = new URL(o);
        ok = (u.protocol === 'https:' || u.protocol === 'http:') && u.origin === o.replace(/\/$/, '');
      } catch {
        ok = false;
      }
      if (!ok)
        usage(
          `--embed-origin takes an origin like https://example.org or http://127.0.0.1:3000 (got "${o.slice(0, 80)}")`,
        );
    }
    const { startAppServer } = await import('../../../http/app-server.js');
    const server = await startAppServer({
      ...(port === undefined ? {} : { port }),
      // the endpoints the app was configured with, per port (each port is its own origin with its own data)
      connectFile: (p: number) => join(ctx.globals.home, 'app', `connect-${p}.json`),
      ...(embed.length ? { frameAncestors: embed.map((o) => new URL(o).origin) } : {}),
    });
    if (ctx.globals.json) outJson(ctx, { ok: true, url: server.url, port: server.port });
    else out(ctx, server.url);
    if (values.open === true) openBrowser(server.url, (m) => note(ctx, m));
    // Serve until main() aborts ctx.signal (Ctrl-C / SIGTERM, then exit 130 / 143) or an embedder's signal does.
    await untilStopped(ctx, false);
    await server.close();
    return 0;
  },
};

export const appCommands: CliCommand[] = [app];
