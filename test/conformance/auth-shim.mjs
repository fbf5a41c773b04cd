// A loopback HTTP forwarder standing in for an MCP client configured with tycli's bearer token: it adds the
// Authorization header the conformance suite cannot send; test harness, trusted side.
import { createServer, request } from 'node:http';

/**
 * Forward every request on 127.0.0.1:`port` (0: any) to `target` (http://127.0.0.1:P/mcp) with
 * `Authorization: Bearer TOKEN` added. Host and Origin are rewritten only when they name this forwarder, so
 * a foreign Host or Origin (the suite's DNS-rebinding check) reaches tycli as sent. Bodies and SSE streams pass as is.
 * @returns the forwarder's URL and a close function.
 */
export async function authShim(target, token, port = 0) {
  const t = new URL(target);
  let own = '';
  const srv = createServer((req, res) => {
    const headers = { ...req.headers, authorization: `Bearer ${token}` };
    // what names this forwarder is rewritten to name tycli (as a client talking to it directly would send)
    const mine = new Set([own, own.replace('127.0.0.1', 'localhost')]);
    if (mine.has(req.headers.host ?? '')) headers.host = t.host;
    const origin = req.headers.origin;
    if (typeof origin === 'string' && [...mine].some((h) => origin === `http://${h}`))
      headers.origin = `http://${t.host}`;
    const up = request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  await new Promise((r) => srv.listen(port, '127.0.0.1', r));
  own = `127.0.0.1:${srv.address().port}`;
  return {
    url: `http://${own}${t.pathname}`,
    close: () => {
      srv.closeAllConnections?.();
      return new Promise((r) => srv.close(r));
    },
  };
}
