// Both protocol eras on both sides of the bridge: 2026-07-28 (stateless envelope, server/discover) and 2025-11-25
// (initialize), negotiated per peer and logged, with the 2.x and 1.x SDK clients; test side.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as LegacyStdio } from '@modelcontextprotocol/sdk/client/stdio.js';
import { EVERYTHING, FakeGate, ROOT, addNodeServer, connect, tempHome } from './helpers.js';

const MODERN = join(ROOT, 'test/mcp/peers/modern-server.mjs');
const ENTRY = join(ROOT, 'test/mcp/cli-entry.ts');
let home: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ home, cleanup } = await tempHome());
});
afterEach(async () => {
  await cleanup();
});

const tycli = (...rest: string[]) => ({
  command: process.execPath,
  args: ['--import', 'tsx', ENTRY, '--home', home, ...rest],
  cwd: ROOT,
  stderr: 'pipe' as const,
});
const text = (r: unknown): string => JSON.stringify((r as { content?: unknown }).content);

describe('server-facing: the era negotiated per upstream server', () => {
  it('a 2.x server is spoken to in 2026-07-28, a 2025-era one in 2025-11-25; each version is logged; calls work on both', async () => {
    await addNodeServer(home, 'modern', MODERN, [], { allow: ['echo'] });
    await addNodeServer(home, 'ev', EVERYTHING, ['stdio'], { allow: ['echo'] });
    const conn = await connect({ home, sandbox: 'e', gate: new FakeGate() });
    try {
      expect(text(await conn.client.callTool({ name: 'modern__echo', arguments: { text: 'a' } }))).toContain(
        'echo a (protocol 2026-07-28)',
      );
      expect(text(await conn.client.callTool({ name: 'ev__echo', arguments: { message: 'b' } }))).toContain('b');
      // both may start at once (the instructions relay at initialize): in whichever order they finish
      const connects = conn.logs
        .map((l) => JSON.parse(l) as Record<string, string>)
        .filter((l) => l.method === 'connect')
        .sort((a, b) => a.server!.localeCompare(b.server!));
      expect(connects).toEqual([
        { server: 'ev', method: 'connect', outcome: 'protocol:2025-11-25' },
        { server: 'modern', method: 'connect', outcome: 'protocol:2026-07-28' },
      ]);
    } finally {
      await conn.close();
    }
  }, 60_000);

  it('a server that speaks 2026-07-28 only is reached (no initialize is needed)', async () => {
    await addNodeServer(home, 'modern', MODERN, [], { allow: ['echo'], env: { MODERN_ONLY: '1' } });
    const conn = await connect({ home, sandbox: 'e', gate: new FakeGate() });
    try {
      expect(text(await conn.client.callTool({ name: 'modern__echo', arguments: { text: 'only' } }))).toContain(
        'echo only (protocol 2026-07-28)',
      );
    } finally {
      await conn.close();
    }
  }, 60_000);
});

describe('client-facing: tycli mcp serve and mcp proxy speak both eras', () => {
  it('each client session logs the revision it speaks: 2026-07-28 from its envelope, 2025-11-25 from its handshake', async () => {
    await addNodeServer(home, 'ev', EVERYTHING, ['stdio'], { allow: ['echo'] });
    const legacy = await connect({ home, sandbox: 'e', gate: new FakeGate() });
    const modern = await connect(
      { home, sandbox: 'e', gate: new FakeGate() },
      {},
      (c) =>
        new Client(
          { name: 'modern-client', version: '1' },
          { versionNegotiation: { mode: 'auto' } },
        ) as unknown as typeof c,
    );
    try {
      for (const c of [legacy, modern])
        expect(text(await c.client.callTool({ name: 'ev__echo', arguments: { message: 'm' } }))).toContain('m');
      const session = (logs: string[]) =>
        logs.map((l) => JSON.parse(l) as Record<string, string>).filter((l) => l.server === 'client');
      expect(session(legacy.logs)).toEqual([{ server: 'client', method: 'session', outcome: 'protocol:2025-11-25' }]);
      expect(session(modern.logs)).toEqual([{ server: 'client', method: 'session', outcome: 'protocol:2026-07-28' }]);
    } finally {
      await legacy.close();
      await modern.close();
    }
  }, 60_000);

  it('a 2026-07-28 client (2.x SDK, auto negotiation) is served in 2026-07-28 by mcp serve, a 2025-era server behind it included', async () => {
    await addNodeServer(home, 'ev', EVERYTHING, ['stdio'], { allow: ['echo'] });
    await addNodeServer(home, 'modern', MODERN, [], { allow: ['echo'] });
    const client = new Client(
      { name: 'modern-client', version: '1' },
      { capabilities: { sampling: {}, elicitation: {} }, versionNegotiation: { mode: 'auto' } },
    );
    await client.connect(new StdioClientTransport(tycli('mcp', 'serve')));
    try {
      expect(client.getProtocolEra()).toBe('modern');
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      expect(client.getDiscoverResult()?.supportedVersions).toContain('2026-07-28');
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['ev__echo', 'modern__echo']));
      expect(
        text(await client.callTool({ name: 'ev__echo', arguments: { message: 'behind a 2026 client' } })),
      ).toContain('behind a 2026 client');
      expect(text(await client.callTool({ name: 'modern__echo', arguments: { text: 'x' } }))).toContain(
        'echo x (protocol 2026-07-28)',
      );
      // the gate still decides: a tool no rule allows is refused (nobody can be asked here)
      await expect(client.callTool({ name: 'ev__get-env', arguments: {} })).rejects.toThrow(
        /approval|no-channel|refused/i,
      );
    } finally {
      await client.close();
    }
  }, 90_000);

  it('a 2025-11-25 client (1.x SDK) is served by the same mcp serve in 2025-11-25', async () => {
    await addNodeServer(home, 'modern', MODERN, [], { allow: ['echo'] });
    const client = new LegacyClient({ name: 'legacy-client', version: '1' }, { capabilities: {} });
    const transport = new LegacyStdio(tycli('mcp', 'serve'));
    await client.connect(transport);
    try {
      // the 1.x client speaks only the handshake era: it got an initialize result and goes on
      expect(client.getServerVersion()?.name).toBe('tysandbox');
      expect(text(await client.callTool({ name: 'modern__echo', arguments: { text: 'y' } }))).toContain(
        'echo y (protocol 2026-07-28)',
      );
    } finally {
      await client.close();
    }
  }, 90_000);

  it('mcp proxy: a 2026-07-28 client and a 2025-11-25 client, a 2025-era server behind it', async () => {
    await addNodeServer(home, 'ev', EVERYTHING, ['stdio'], { allow: ['echo'] });
    const modern = new Client({ name: 'modern-client', version: '1' }, { versionNegotiation: { mode: 'auto' } });
    await modern.connect(new StdioClientTransport(tycli('mcp', 'proxy', 'ev')));
    try {
      expect(modern.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      expect(text(await modern.callTool({ name: 'echo', arguments: { message: 'proxied 2026' } }))).toContain(
        'proxied 2026',
      );
    } finally {
      await modern.close();
    }
    const legacy = new LegacyClient({ name: 'legacy-client', version: '1' });
    await legacy.connect(new LegacyStdio(tycli('mcp', 'proxy', 'ev')));
    try {
      expect(text(await legacy.callTool({ name: 'echo', arguments: { message: 'proxied 2025' } }))).toContain(
        'proxied 2025',
      );
    } finally {
      await legacy.close();
    }
  }, 90_000);
});
