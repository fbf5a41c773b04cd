// The fetch under the browser's MCP transport: no ambient credentials, the server's header values added, CORS refusals
// told apart from servers that are down; browser host, trusted side.
import { TyError } from '../../core/errors.js';

/** The page's origin, for messages (`null` for an opaque one). */
function pageOrigin(): string {
  return (globalThis as { location?: { origin?: string } }).location?.origin ?? 'this page';
}

/**
 * Why a cross-origin fetch failed with a TypeError. A page is never told why (the Fetch standard hides it on
 * purpose); what it can learn: a `no-cors` GET to the same URL resolves (an opaque response) when something
 * answers HTTP there, and rejects when nothing does (refused connection, unknown host, TLS failure). So:
 * probe resolves → the server is up and its CORS did not allow this origin (E_MCP_CORS); probe rejects → the
 * server cannot be reached (E_MCP_UNREACHABLE). Limits: a page cannot tell which CORS check failed (the preflight,
 * a missing Access-Control-Allow-Origin, a header not in Access-Control-Allow-Headers), nor a CORS refusal from a
 * mixed-content, CSP `connect-src` or Private Network Access block (those are reported in the console only).
 */
export async function diagnoseFetchFailure(server: string, url: string, base: typeof fetch): Promise<TyError> {
  const origin = new URL(url).origin;
  let up = false;
  try {
    // no-cors allows only redirect 'follow'; an opaque answer of any status (even a redirect's target) counts as up
    await base(url, {
      method: 'GET',
      mode: 'no-cors',
      credentials: 'omit',
      cache: 'no-store',
      referrerPolicy: 'no-referrer',
    });
    up = true;
  } catch {
    up = false;
  }
  if (up) {
    return new TyError(
      'E_MCP_CORS',
      `MCP server "${server}" at ${origin} answers, but its CORS does not allow this page's origin ` +
        `${pageOrigin()}: the server must answer with Access-Control-Allow-Origin: ${pageOrigin()} (or ` +
        `*), allow the methods POST, GET, DELETE and the request headers content-type, accept, mcp-session-id, ` +
        `mcp-protocol-version, last-event-id and any header configured for it, and expose mcp-session-id ` +
        `and mcp-protocol-version`,
      { server, origin, pageOrigin: pageOrigin() },
    );
  }
  return new TyError(
    'E_MCP_UNREACHABLE',
    `MCP server "${server}" at ${origin} cannot be reached from this page (nothing answered: the ` +
      `server is down, the address is wrong, or the browser blocked it; a CORS refusal would have ` +
      `been reported as E_MCP_CORS)`,
    { server, origin },
  );
}

/**
 * The fetch under the browser's MCP transport (core/mcp/upstream/transport.ts cappedFetch caps what it
 * returns): no cookies or other ambient credentials, no referrer, redirects refused, the server's configured
 * headers (secret values) added to every request; a network TypeError is diagnosed (diagnoseFetchFailure).
 */
export function mcpFetch(
  server: string,
  headers: Record<string, string>,
  base: typeof fetch = globalThis.fetch.bind(globalThis),
): typeof fetch {
  return (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const h = new Headers(init?.headers);
    for (const [k, v] of Object.entries(headers)) h.set(k, v);
    try {
      return await base(input, {
        ...init,
        headers: h,
        credentials: 'omit',
        referrerPolicy: 'no-referrer',
        redirect: 'error',
        cache: 'no-store',
        mode: 'cors',
      });
    } catch (e) {
      if (init?.signal?.aborted) throw e;
      if (e instanceof TypeError) throw await diagnoseFetchFailure(server, url, base);
      throw e;
    }
  }) as typeof fetch;
}
