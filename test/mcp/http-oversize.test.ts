// An upstream Streamable HTTP server whose answer passes the 8 MiB message limit inside an SSE stream: the session ends
// at once with E_MCP (core's connector), not at the call timeout; test code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpstreamSession } from '../../core/mcp/upstream/session.js';
import type { McpDefinition } from '../../core/mcp/server-definition.js';
import { startMcpFixture, type McpFixture } from '../browser/mcp-http-fixture.mjs';

let sse: McpFixture;
let json: McpFixture;
beforeAll(async () => {
  sse = await startMcpFixture({});
  json = await startMcpFixture({ json: true });
});
afterAll(async () => {
  await sse?.close();
  await json?.close();
});

const def = (url: string): McpDefinition => ({
  v: 1,
  name: 'fx',
  url,
  args: [],
  env: {},
  allow: [],
  ask: 'default',
  shared: false,
  folder: '',
  timeoutMs: 30_000,
});

describe("core's Streamable HTTP connector and the message limit", () => {
  for (const [kind, fx] of [
    ['an SSE event', () => sse],
    ['a JSON body', () => json],
  ] as const) {
    it(`${kind} over 8 MiB ends the session at once with E_MCP_OVERSIZE (not the call timeout); a new session works`, async () => {
      const s = await UpstreamSession.start(def(fx().url), {});
      await s.tools();
      const t0 = Date.now();
      await expect(s.callTool('big', { bytes: 9 * 1024 * 1024 })).rejects.toMatchObject({
        code: 'E_MCP_OVERSIZE',
        message: expect.stringMatching(/over 8 MiB/),
      });
      // far below the 30 s call timeout: the oversize message itself ended the call
      expect(Date.now() - t0).toBeLessThan(15_000);
      await s.close();
      const again = await UpstreamSession.start(def(fx().url), {});
      await expect(again.callTool('echo', { text: 'ok' })).resolves.toMatchObject({
        content: [{ type: 'text', text: 'echo: ok' }],
      });
      await again.close();
    });
  }
});
