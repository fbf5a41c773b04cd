// In-page measurement for test/bench/browser-mcp.bench.mjs: a remote MCP tools/call through the browser host (core's
// bridge, gate, audit) against a direct SDK client in the same page; test code, trusted host side.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createBrowserHost } from '../host.js';

export interface McpBenchResult {
  /** Mean per call of each round, ms: bridged (host.invoker.invoke) and direct (SDK Client.callTool). */
  bridged: number[];
  direct: number[];
  callsPerRound: number;
}

/**
 * `rounds` rounds of `calls` sequential `echo` calls each way, interleaved (bridged round, then direct round) so
 * drift hits both alike; both sides warmed first (session open, tool list cached). The host's server definition
 * allows `echo` (no question), so a bridged call is: tool lookup, argument check, gate (rules, pause, durable
 * `started` and final audit records in IndexedDB), forwarding, result checks.
 */
export async function runMcpBench(opts: { url: string; rounds?: number; calls?: number }): Promise<McpBenchResult> {
  const rounds = opts.rounds ?? 7;
  const calls = opts.calls ?? 40;
  const host = await createBrowserHost({
    dbName: `bench-mcp-${Math.random().toString(36).slice(2)}`,
    dialog: false,
    mcpServers: [{ name: 'fx', url: opts.url, allow: ['echo'] }],
  });
  // the same SDK and protocol revision as the host agrees with this server (a 2025-era one, whose CORS policy does not
  // list the 2026-07-28 headers: the host falls back to the 2025 handshake, see browser/mcp/bridge.ts)
  const client = new Client(
    { name: 'bench-direct', version: '0.0.0' },
    { capabilities: {}, versionNegotiation: { mode: 'legacy' } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(opts.url)));
  const bridgedCall = async () => {
    const r = await host.invoker.invoke('fx__echo', { text: 'x' });
    if (!r.ok) throw new Error(`${r.error.code}: ${r.error.message}`);
  };
  const directCall = async () => {
    const r = await client.callTool({ name: 'echo', arguments: { text: 'x' } });
    if (r.isError) throw new Error('direct call failed');
  };
  for (let i = 0; i < 10; i++) {
    await bridgedCall();
    await directCall();
  }
  const round = async (f: () => Promise<void>) => {
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) await f();
    return (performance.now() - t0) / calls;
  };
  const bridged: number[] = [];
  const direct: number[] = [];
  for (let r = 0; r < rounds; r++) {
    bridged.push(await round(bridgedCall));
    direct.push(await round(directCall));
  }
  await client.close();
  await host.close();
  return { bridged, direct, callsPerRound: calls };
}
