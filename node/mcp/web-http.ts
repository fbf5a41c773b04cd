// Node's HTTP request and response as the fetch API's Request and Response, for the MCP SDK's web-standard entries
// (its Streamable HTTP server transport, its per-request handler); Node host, trusted side.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Request headers that describe Node's connection rather than the message: not copied into the Request. */
const CONNECTION_HEADERS: ReadonlySet<string> = new Set(['content-length', 'host', 'connection', 'transfer-encoding']);

/**
 * Serve one request through a web-standard handler: `req` becomes a Request for `url` (its method and headers, `body`
 * when given: the caller has read and checked it), with a signal aborted when the client goes away before the
 * response ends (its cancellation, MCP 2026-07-28); the Response is written to `res` as it comes (see writeResponse).
 * @throws what `handle` throws (the caller's server answers it as an internal error).
 */
export async function serveWeb(
  req: IncomingMessage,
  res: ServerResponse,
  url: string,
  handle: (request: Request) => Promise<Response>,
  body?: string,
): Promise<void> {
  const ac = new AbortController();
  res.once('close', () => {
    if (!res.writableEnded) ac.abort();
  });
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || CONNECTION_HEADERS.has(k)) continue;
    headers.set(k, Array.isArray(v) ? v.join(', ') : v);
  }
  const request = new Request(url, {
    method: req.method ?? 'GET',
    headers,
    ...(body !== undefined ? { body } : {}),
    signal: ac.signal,
  });
  await writeResponse(res, await handle(request));
}

/**
 * Write `response` to `res`: its status and headers at once (an event stream reaches the client before its first
 * event), then its body chunk by chunk as the handler produces it, each write waiting for the socket to drain. A
 * client that goes away cancels the body, which is how the SDK learns a stream has ended.
 */
export async function writeResponse(res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((v, k) => {
    headers[k] = v;
  });
  res.writeHead(response.status, headers);
  if (response.body === null) return void res.end();
  res.flushHeaders();
  const reader = response.body.getReader();
  const cancel = (): void => void reader.cancel().catch(() => undefined);
  res.once('close', cancel);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || res.destroyed) break;
      if (!res.write(value)) await drained(res);
    }
  } catch {
    /* the body failed or was cancelled: the response ends here */
  } finally {
    res.off('close', cancel);
    if (res.destroyed) cancel();
    res.end();
  }
}

/** Resolves when `res` can take more (or has closed). */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const go = (): void => {
      res.off('drain', go);
      res.off('close', go);
      resolve();
    };
    res.once('drain', go);
    res.once('close', go);
  });
}
