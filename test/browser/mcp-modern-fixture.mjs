// A 2026-07-28 Streamable HTTP MCP server on loopback for the browser host's tests (the 2.x SDK's createMcpHandler,
// stateless), with a CORS layer that lists the 2026-07-28 request headers; test peer, untrusted side.
import { createServer } from 'node:http';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { z } from 'zod';

const ALLOW_HEADERS = 'content-type, accept, authorization, mcp-protocol-version, mcp-method, mcp-name, last-event-id';

/**
 * Start it on 127.0.0.1 (an ephemeral port). Only 2026-07-28 is served (2025-era openings are refused), so a client
 * that reaches its tools negotiated 2026-07-28.
 * @returns {Promise<{ url: string, calls: string[], methods: string[], close(): Promise<void> }>}
 */
export async function startModernFixture() {
  const calls = [];
  const methods = [];
  const handler = createMcpHandler(
    () => {
      const server = new McpServer({ name: 'tysandbox-modern-browser-fixture', version: '1.0.0' });
      server.registerTool(
        'echo',
        {
          description: 'Echoes the text back',
          inputSchema: z.object({ text: z.string() }),
          annotations: { readOnlyHint: true },
        },
        async ({ text }) => {
          calls.push('echo');
          return {
            content: [
              { type: 'text', text: `echo: ${text} (protocol ${server.server.getNegotiatedProtocolVersion()})` },
            ],
          };
        },
      );
      return server;
    },
    { legacy: 'reject' },
  );
  const http = createServer(async (req, res) => {
    const origin = req.headers.origin;
    if (origin) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-allow-methods', 'GET, POST, DELETE, OPTIONS');
      res.setHeader('access-control-allow-headers', ALLOW_HEADERS);
      res.setHeader('access-control-expose-headers', 'mcp-protocol-version');
      res.setHeader('vary', 'origin');
    }
    if (req.method === 'OPTIONS') return void res.writeHead(204).end();
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks).toString('utf8');
    if (typeof req.headers['mcp-method'] === 'string') methods.push(req.headers['mcp-method']);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers))
      if (v !== undefined && k !== 'content-length' && k !== 'host' && k !== 'connection')
        headers.set(k, Array.isArray(v) ? v.join(', ') : v);
    const ac = new AbortController();
    res.once('close', () => ac.abort());
    try {
      const r = await handler.fetch(
        new Request(`http://127.0.0.1${req.url}`, {
          method: req.method,
          headers,
          ...(req.method === 'POST' ? { body } : {}),
          signal: ac.signal,
        }),
      );
      const out = {};
      r.headers.forEach((v, k) => (out[k] = v));
      if (out['access-control-allow-origin'] === undefined && origin)
        Object.assign(out, { 'access-control-allow-origin': origin });
      res.writeHead(r.status, out);
      if (r.body) for await (const c of r.body) res.write(c);
      res.end();
    } catch (e) {
      if (!res.headersSent) res.writeHead(500).end(String(e));
    }
  });
  await new Promise((r) => http.listen(0, '127.0.0.1', r));
  const addr = http.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    methods,
    async close() {
      await handler.close().catch(() => {});
      http.closeAllConnections?.();
      await new Promise((r) => http.close(() => r(undefined)));
    },
  };
}
